import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import postgres from "postgres";
import { startEmbeddedPostgres } from "./embedded-postgres";

/** The Postgres this machine (and CI's) runs: trust auth, user postgres. */
export const LOCAL_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres";

/** The same server, another database. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** True when a server answers at `url` within a few seconds. */
export async function postgresAnswers(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    await sql`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

export type PostgresServer = { adminUrl: string; embedded: boolean; stop: () => Promise<void> };

/**
 * The server tests and benchmarks run on: `preferredUrl` when it answers, otherwise an
 * embedded Postgres of their own in a temporary directory, removed again by `stop`.
 */
export async function localOrEmbeddedPostgres(options: {
  preferredUrl: string;
  purpose: string;
  log?: (line: string) => void;
}): Promise<PostgresServer> {
  if (await postgresAnswers(options.preferredUrl))
    return { adminUrl: options.preferredUrl, embedded: false, stop: async () => {} };
  const dataDir = path.join(os.tmpdir(), `cadre-${options.purpose}-pg-${process.pid}`);
  options.log?.(`No Postgres answers at ${options.preferredUrl}; starting an embedded one in ${dataDir}.`);
  const local = await startEmbeddedPostgres({ dataDir, database: "postgres", persistent: false, log: options.log });
  return {
    adminUrl: local.url,
    embedded: true,
    stop: async () => {
      await local.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Creates `name` as a copy of the migrated `template` database (a test file's own database, an
 * eval mission's). Two copies from one template at once can collide for a moment ("being
 * accessed by other users"), so it retries briefly.
 */
export async function copyDatabase(adminUrl: string, template: string, name: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.unsafe(`create database ${name} template ${template}`);
        return;
      } catch (error) {
        if (attempt >= 20 || !String(error).includes("being accessed")) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 + attempt * 50));
      }
    }
  } finally {
    await admin.end({ timeout: 5 });
  }
}
