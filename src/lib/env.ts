import { z } from "zod";

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
  OPENAI_API_KEY: optional,
  OPENAI_BASE_URL: optional.pipe(z.url({ message: "OPENAI_BASE_URL must be an http(s) URL" }).optional()),
  LLM_MODEL: optional,
  TAVILY_API_KEY: optional,
  TAVILY_BASE_URL: optional.pipe(z.url({ message: "TAVILY_BASE_URL must be an http(s) URL" }).optional()),
  CONTEXT_TOKEN_BUDGET: positiveInt(24_000),
  MAX_STEPS_PER_SESSION: positiveInt(25),
  SESSION_TOKEN_BUDGET: positiveInt(1_000_000),
  TEAM_DAILY_TOKEN_BUDGET: positiveInt(5_000_000),
  MODEL_TIMEOUT_MS: positiveInt(120_000),
  SESSION_STALE_SECONDS: positiveInt(15),
  LEAD_SCHEDULE: optional.transform((value) => value ?? "0 8 * * *"),
  APP_PASSWORD: optional,
  /** Behind a reverse proxy the operator runs: X-Forwarded-Host counts as the host a request was sent to. Any client can send it, so never by default. */
  TRUST_PROXY: flag,
  PORT: positiveInt(3000),
});

export type Env = z.infer<typeof envSchema>;

/** Parses an environment; throws one message that names every bad variable. */
export function parseEnv(source: Record<string, string | undefined>): Env {
  const result = envSchema.safeParse(source);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
    throw new Error(`Invalid environment:\n  ${problems.join("\n  ")}`);
  }
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
