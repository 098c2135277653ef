import "server-only";
// What Cadre reads from a postgres:// URL beyond what its two drivers do alike. postgres.js
// (Cadre's queries) and pg (pg-boss) read TLS settings differently — pg takes sslmode=require
// to mean verify-full, postgres.js ignores sslrootcert and sends every parameter it does not
// know to the server, which refuses it — so the TLS parameters and Cadre's own (`pgbouncer`)
// are taken out of the URL here and given to both drivers as options, the way libpq reads them.
// See docs/decisions/2026-12-01-poolers-tls-and-bounded-queries.md.
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { checkServerIdentity, type ConnectionOptions } from "node:tls";

export type TlsSetting = false | "prefer" | ConnectionOptions;

export type ConnectionTarget = {
  /** The URL the drivers get: without the TLS parameters and `pgbouncer`. */
  url: string;
  /** TLS as libpq's sslmode means it: false (none), "prefer" (TLS when the server offers it), or what to verify. */
  ssl: TlsSetting;
  /**
   * Reached through a transaction pooler (`?pgbouncer=true`, as Prisma reads it, or a pooler
   * host known to pool transactions): no named prepared statements, and nothing that needs a
   * session (LISTEN, advisory locks) goes through it.
   */
  pooled: boolean;
};

/** Parameters taken out of the URL: Cadre's own and the TLS ones libpq knows. */
const CADRE_PARAMETERS = ["pgbouncer", "sslmode", "ssl", "sslrootcert", "sslcert", "sslkey"];

const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] as const;
type SslMode = (typeof SSL_MODES)[number];

const cache = new Map<string, ConnectionTarget>();

/**
 * The URL's target, read once per URL. `environment` supplies libpq's PGSSLMODE,
 * PGSSLROOTCERT, PGSSLCERT and PGSSLKEY when the URL does not say. Throws an Error naming the
 * parameter when a setting cannot be used (an unknown sslmode, a certificate file not there).
 */
export function connectionTarget(
  url: string,
  environment: Record<string, string | undefined> = process.env,
): ConnectionTarget {
  const known = environment === process.env ? cache.get(url) : undefined;
  if (known) return known;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL this module can read (a test's odd value): the drivers say what is wrong with it.
    return { url, ssl: false, pooled: false };
  }
  const parameter = (name: string) => parsed.searchParams.get(name)?.trim() || undefined;
  const pooled = isTransactionPooler(parsed, parameter("pgbouncer"));
  const rootCert = parameter("sslrootcert") ?? (environment.PGSSLROOTCERT?.trim() || undefined);
  const mode = sslModeOf(
    parameter("sslmode") ?? parameter("ssl") ?? (environment.PGSSLMODE?.trim() || undefined),
    rootCert,
  );
  const clientCert = parameter("sslcert") ?? (environment.PGSSLCERT?.trim() || undefined);
  const clientKey = parameter("sslkey") ?? (environment.PGSSLKEY?.trim() || undefined);
  for (const name of CADRE_PARAMETERS) parsed.searchParams.delete(name);
  const target: ConnectionTarget = {
    url: parsed.toString(),
    ssl: tlsFor(mode, { host: parsed.hostname, rootCert, clientCert, clientKey }),
    pooled,
  };
  if (environment === process.env) cache.set(url, target);
  return target;
}

/** pg (pg-boss's driver) cannot fall back from TLS to none: "prefer" is no TLS there, as it is wherever the server has none. */
export function tlsForPg(ssl: TlsSetting): false | ConnectionOptions {
  return ssl === "prefer" ? false : ssl;
}

/** `pgbouncer=true` (Prisma's word for "transaction pooling"), or a managed pooler whose address says it pools transactions. */
function isTransactionPooler(url: URL, flag: string | undefined): boolean {
  if (flag !== undefined) return /^(1|true|yes|on)$/i.test(flag);
  const host = url.hostname.toLowerCase();
  // Neon's pooled endpoint: ep-name-123456-pooler.region.aws.neon.tech (PgBouncer in transaction mode).
  if (/-pooler\./.test(host) && host.endsWith(".neon.tech")) return true;
  // Supabase's Supavisor: port 6543 pools transactions (5432 on the same host pools sessions).
  if (host.endsWith(".pooler.supabase.com") && url.port === "6543") return true;
  return false;
}

function sslModeOf(value: string | undefined, rootCert: string | undefined): SslMode {
  if (value === undefined) return rootCert === "system" ? "verify-full" : "disable";
  const mode = value.toLowerCase();
  // postgres.js and pg also read ssl=true / ssl=false.
  if (mode === "true" || mode === "1") return "require";
  if (mode === "false" || mode === "0") return "disable";
  if (!(SSL_MODES as readonly string[]).includes(mode))
    throw new Error(`sslmode=${value} in the database URL is not one of ${SSL_MODES.join(", ")}.`);
  return mode as SslMode;
}

function tlsFor(
  mode: SslMode,
  files: { host: string; rootCert?: string; clientCert?: string; clientKey?: string },
): TlsSetting {
  if (mode === "disable") return false;
  if (mode === "allow" || mode === "prefer") return "prefer";
  const clientIdentity = {
    ...(files.clientCert ? { cert: readSetting(files.clientCert, "sslcert") } : {}),
    ...(files.clientKey ? { key: readSetting(files.clientKey, "sslkey") } : {}),
  };
  // libpq: with a root certificate at hand, require verifies the chain as verify-ca does.
  const ca = files.rootCert && files.rootCert !== "system" ? readSetting(files.rootCert, "sslrootcert") : undefined;
  if (mode === "require" && ca === undefined) return { rejectUnauthorized: false, ...clientIdentity };
  const verify: ConnectionOptions = { rejectUnauthorized: true, ...(ca ? { ca } : {}), ...clientIdentity };
  if (mode === "verify-full") {
    const host = files.host.replace(/^\[|\]$/g, "");
    // An address in the URL is checked against the certificate's IP names (SNI carries no address).
    return isIP(host)
      ? { ...verify, checkServerIdentity: (_name, certificate) => checkServerIdentity(host, certificate) }
      : { ...verify, servername: host };
  }
  // verify-ca (and require with a root certificate): the chain, not the name.
  return { ...verify, checkServerIdentity: () => undefined };
}

function readSetting(file: string, name: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new Error(
      `${name}=${file} (database URL or PG${name.toUpperCase()}) cannot be read: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}

/** What postgres.js is given for `url`: the cleaned URL, TLS, and no named statements behind a pooler. */
export function postgresJsSettings(url: string): { url: string; ssl: TlsSetting; prepare: boolean } {
  const target = connectionTarget(url);
  return { url: target.url, ssl: target.ssl, prepare: !target.pooled };
}

/** The URL for what needs a session (LISTEN, advisory locks): `directUrl`, else `url` unless it goes through a transaction pooler (null: none). */
export function sessionUrlFor(url: string, directUrl?: string): string | null {
  if (directUrl) return directUrl;
  return connectionTarget(url).pooled ? null : url;
}
