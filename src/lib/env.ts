import "server-only";
import { z } from "zod";
import { sessionUrlFor } from "@/lib/db/connection-target";

/** Empty strings in .env files mean "unset", not "the empty value". */
const optional = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === "" ? undefined : value.trim()));

const positiveInt = (fallback: number) =>
  optional
    .pipe(z.string().regex(/^\d+$/, { message: "must be a positive whole number" }).optional())
    .transform((value) => (value === undefined ? fallback : Number(value)))
    .pipe(z.number().int().positive());

/** A yes/no switch: 1/true/yes or 0/false/no (any case); unset or empty is no. */
const flag = optional.pipe(
  z
    .string()
    .regex(/^(1|0|true|false|yes|no)$/i, { message: "must be 1 or 0 (true/false, yes/no)" })
    .optional()
    .transform((value) => value !== undefined && /^(1|true|yes)$/i.test(value)),
);

const envSchema = z.object({
  DATABASE_URL: optional.pipe(z.url({ message: "DATABASE_URL must be a postgres:// URL" }).optional()),
  /**
   * A connection to the same database that keeps its session, for what a transaction pooler
   * cannot carry: LISTEN (live updates, Stop, the job queue's nudges), the workers' liveness
   * locks and migrations. Only needed when DATABASE_URL goes through a transaction pooler
   * (`?pgbouncer=true`); without it those fall back to polling (README: "Behind a pooler").
   */
  DATABASE_DIRECT_URL: optional.pipe(z.url({ message: "DATABASE_DIRECT_URL must be a postgres:// URL" }).optional()),
  /**
   * The pooled connections one process (a web server or a worker) may open: Cadre's queries
   * get two thirds, pg-boss a third (db/connection-budget.ts). Each process opens 2 (web) or
   * 3 (worker) dedicated connections beside them, for LISTEN and liveness. The default lets a
   * web server and two workers (12 + 13 + 13) fit a stock Postgres (100) with room to spare.
   */
  DATABASE_POOL_SIZE: positiveInt(10).pipe(
    z.number().min(4, { message: "must be at least 4 (two connections for Cadre's queries, two for the job queue)" }),
  ),
  OPENAI_API_KEY: optional,
  OPENAI_BASE_URL: optional.pipe(z.url({ message: "OPENAI_BASE_URL must be an http(s) URL" }).optional()),
  LLM_MODEL: optional,
  /**
   * Whether model requests name their conversation (`prompt_cache_key`), so the provider routes
   * them to where the conversation's prefix is cached. auto: for OpenAI itself only (some
   * OpenAI-compatible servers refuse fields they do not know); on / off: always / never.
   */
  PROMPT_CACHE_KEY: optional.pipe(
    z.enum(["auto", "on", "off"], { message: "PROMPT_CACHE_KEY must be auto, on or off" }).default("auto"),
  ),
  /**
   * The model knowledge is embedded with for recall by meaning, on the configured provider
   * (OPENAI_BASE_URL or OpenAI itself); text-embedding-3-small when unset. `offline`: the
   * built-in local embedding (what is used with no provider at all), for a server without
   * embeddings. Changing it re-embeds every item in the background.
   */
  EMBEDDING_MODEL: optional,
  /** A shorter vector where the model supports it (text-embedding-3: any size up to its own); unset: the model's own size. */
  EMBEDDING_DIMENSIONS: optional.pipe(
    z
      .string()
      .regex(/^\d+$/, { message: "EMBEDDING_DIMENSIONS must be a positive whole number" })
      .transform(Number)
      .pipe(z.number().int().min(1).max(8192, { message: "EMBEDDING_DIMENSIONS must be at most 8192" }))
      .optional(),
  ),
  /**
   * How much memory (MB) each process (the web server, each worker) keeps knowledge vectors in
   * for recall by meaning (domain/knowledge-vectors.ts): a byte a dimension and 21 more a vector
   * (100 000 items at 256 dimensions: 28 MB; at 1 536: 156 MB). Past it, the vectors searched
   * least recently are let go, and a team whose vectors alone do not fit is read from Postgres
   * for each search (slower: see docs/decisions/2026-11-27-knowledge-vectors-in-memory.md). 0: keep none.
   */
  KNOWLEDGE_VECTOR_CACHE_MB: optional
    .pipe(
      z
        .string()
        .regex(/^\d+$/, { message: "KNOWLEDGE_VECTOR_CACHE_MB must be a whole number (0: keep none)" })
        .optional(),
    )
    .transform((value) => (value === undefined ? 256 : Number(value)))
    .pipe(
      z.number().int().min(0).max(1_048_576, { message: "KNOWLEDGE_VECTOR_CACHE_MB must be at most 1048576 (1 TB)" }),
    ),
  TAVILY_API_KEY: optional,
  TAVILY_BASE_URL: optional.pipe(z.url({ message: "TAVILY_BASE_URL must be an http(s) URL" }).optional()),
  /** How much of a web page readWebPage hands the model (characters); the rest is cut, and the result says so. */
  PAGE_READ_MAX_CHARS: positiveInt(12_000),
  CONTEXT_TOKEN_BUDGET: positiveInt(24_000),
  MAX_STEPS_PER_SESSION: positiveInt(25),
  SESSION_TOKEN_BUDGET: positiveInt(1_000_000),
  TEAM_DAILY_TOKEN_BUDGET: positiveInt(5_000_000),
  MODEL_TIMEOUT_MS: positiveInt(120_000),
  SESSION_STALE_SECONDS: positiveInt(15),
  /** How long a starting web server or worker waits for a database that is starting up, full or not there yet, before it gives up. */
  DATABASE_WAIT_SECONDS: positiveInt(300),
  LEAD_SCHEDULE: optional.transform((value) => value ?? "0 8 * * *"),
  APP_PASSWORD: optional,
  /**
   * With sign-in on, webhooks, MCP servers and pages an agent reads may still go to loopback
   * and private-network addresses (10/8, 192.168/16, 127/8, fc00::/7 …). Off by default: from
   * a server others sign in to, such an address reaches its neighbours, not the person's own
   * machine. Link-local and cloud metadata addresses stay refused (see outbound-url.ts).
   */
  ALLOW_PRIVATE_URLS: flag,
  /** Behind a reverse proxy the operator runs: X-Forwarded-Host counts as the host a request was sent to. Any client can send it, so never by default. */
  TRUST_PROXY: flag,
  PORT: positiveInt(3000),
  /** The address people use to reach Cadre, for links in notifications; unset: the web server's own (see publicUrl()). */
  PUBLIC_URL: optional.pipe(
    z
      .url({ protocol: /^https?$/, message: "PUBLIC_URL must be an http(s) URL, such as https://cadre.example.com" })
      .transform((value) => value.replace(/\/+$/, ""))
      .optional(),
  ),
  /** Email notifications: the SMTP server (smtp:// or smtps://, credentials in the URL). Needs SMTP_FROM. */
  SMTP_URL: optional.pipe(
    z
      .url({
        protocol: /^smtps?$/,
        message: "SMTP_URL must be an smtp:// or smtps:// URL, such as smtp://user:pass@host:587",
      })
      .optional(),
  ),
  SMTP_FROM: optional.pipe(
    z.string().regex(/@/, { message: "SMTP_FROM must be an address, such as Cadre <cadre@example.com>" }).optional(),
  ),
  /**
   * The first delay between attempts to deliver a notification (seconds, doubled each time).
   * Not for operators: the tests shorten it so a retried delivery does not take minutes.
   */
  NOTIFICATION_RETRY_DELAY_SECONDS: positiveInt(2),
  /**
   * How long the Approve / Deny / Answer links in a notification work (hours, from when it is
   * sent out). Each link still decides once: after the item is decided it only says how.
   */
  ACTION_LINK_TTL_HOURS: positiveInt(72).pipe(
    z.number().max(24 * 90, { message: "ACTION_LINK_TTL_HOURS must be at most 2160 (90 days)" }),
  ),
  /**
   * The signing secret of the Slack app whose buttons post to /api/slack/actions (Slack: Basic
   * Information → Signing Secret). Unset: Slack buttons are refused (the links in the message still work).
   */
  SLACK_SIGNING_SECRET: optional,
  /**
   * OpenTelemetry: where spans go (OTLP over HTTP, the collector's base URL; /v1/traces is
   * added). Unset: no tracing at all. The exporter itself reads OTEL_EXPORTER_OTLP_HEADERS.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: optional.pipe(
    z
      .url({
        protocol: /^https?$/,
        message: "OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, such as http://localhost:4318",
      })
      .optional(),
  ),
  /** The service name spans carry; unset: cadre-web for the web server, cadre-worker for a worker. */
  OTEL_SERVICE_NAME: optional,
});

export type Env = z.infer<typeof envSchema>;

/** Half an SMTP setup would make email channels look usable and then fail every delivery: refuse it at start instead. */
function checkTogether(env: Env): string[] {
  if ((env.SMTP_URL === undefined) === (env.SMTP_FROM === undefined)) return [];
  return [
    env.SMTP_URL === undefined
      ? "SMTP_URL: must be set too when SMTP_FROM is (email notifications need both)"
      : "SMTP_FROM: must be set too when SMTP_URL is (email notifications need both)",
  ];
}

/** Parses an environment; throws one message that names every bad variable. */
export function parseEnv(source: Record<string, string | undefined>): Env {
  const result = envSchema.safeParse(source);
  const problems = result.success
    ? checkTogether(result.data)
    : result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
  if (!result.success || problems.length > 0) throw new Error(`Invalid environment:\n  ${problems.join("\n  ")}`);
  return result.data;
}

let cached: Env | undefined;

/** The process environment, parsed once and shared by the web server and the worker. */
export function env(): Env {
  cached ??= parseEnv(process.env);
  return cached;
}

/** The database URL, or an error that says how to get one. */
export function databaseUrl(): string {
  const url = env().DATABASE_URL;
  if (!url) {
    throw new Error(
      "DATABASE_URL is not set. Run `npm run dev` (it starts an embedded Postgres) or set DATABASE_URL to a postgres:// URL.",
    );
  }
  return url;
}

/**
 * The URL for what needs a session of its own (LISTEN, advisory locks, migrations):
 * DATABASE_DIRECT_URL, else DATABASE_URL unless that goes through a transaction pooler, where
 * there is none (null: poll instead).
 */
export function sessionDatabaseUrl(source: Env = env()): string | null {
  return sessionUrlFor(source.DATABASE_URL ?? databaseUrl(), source.DATABASE_DIRECT_URL);
}

/** Where people reach Cadre, without a trailing slash: PUBLIC_URL, else the web server's own address on this machine. */
export function publicUrl(source: Env = env()): string {
  return source.PUBLIC_URL ?? `http://localhost:${source.PORT}`;
}

export type SmtpSettings = { url: string; from: string };

/** The SMTP server email notifications go through, or null when SMTP_URL and SMTP_FROM are unset. */
export function smtpSettings(source: Env = env()): SmtpSettings | null {
  return source.SMTP_URL && source.SMTP_FROM ? { url: source.SMTP_URL, from: source.SMTP_FROM } : null;
}
