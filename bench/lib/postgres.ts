import { randomBytes } from "node:crypto";
import postgres from "postgres";
import {
  LOCAL_POSTGRES_URL,
  localOrEmbeddedPostgres,
  postgresAnswers,
  withDatabase,
  type PostgresServer,
} from "../../scripts/lib/postgres-server";
import { createDatabase, type Database } from "../../src/lib/db/client";
import { migrateDatabase } from "../../src/lib/db/migrate";
import { JobQueue } from "../../src/lib/jobs/job-queue";

export type BenchServer = PostgresServer;
export type BenchDatabase = Database & { url: string; name: string; drop: () => Promise<void> };

/**
 * The Postgres the benchmarks run on: BENCH_DATABASE_ADMIN_URL when set, the one on
 * 127.0.0.1:5432 when it answers, otherwise an embedded one in a temporary directory.
 */
export async function startBenchServer(log: (line: string) => void): Promise<BenchServer> {
  const configured = process.env.BENCH_DATABASE_ADMIN_URL?.trim();
  if (configured && !(await postgresAnswers(configured)))
    throw new Error(`BENCH_DATABASE_ADMIN_URL does not answer: ${configured}`);
  return localOrEmbeddedPostgres({ preferredUrl: configured || LOCAL_POSTGRES_URL, purpose: "bench", log });
}

/** A database of the benchmark's own (`cadre_bench_<random>`), migrated, with pg-boss's schema; dropped by `drop`. */
export async function createBenchDatabase(adminUrl: string, options: { max?: number } = {}): Promise<BenchDatabase> {
  const name = `cadre_bench_${randomBytes(5).toString("hex")}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const url = withDatabase(adminUrl, name);
  await migrateDatabase(url);
  const jobs = await JobQueue.start(url, "web", { quiet: true });
  await jobs.stop({ graceful: false, timeoutMs: 1000 });
  const database = createDatabase(url, { max: options.max ?? 10 });
  return {
    ...database,
    url,
    name,
    drop: async () => {
      await database.close().catch(() => {});
      const dropper = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await dropper.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await dropper.end({ timeout: 5 });
      }
    },
  };
}

/** What BENCHMARKS.md records about the server. */
export async function describeServer(database: Database): Promise<{ version: string; settings: string }> {
  const [{ version }] = (await database.sql`select version()`) as unknown as [{ version: string }];
  const rows = (await database.sql`
    select name, setting, unit from pg_settings
     where name in ('shared_buffers', 'work_mem', 'effective_cache_size', 'synchronous_commit', 'max_connections')
     order by name`) as unknown as { name: string; setting: string; unit: string | null }[];
  const settings = rows.map((row) => `${row.name}=${row.setting}${row.unit ?? ""}`).join(", ");
  return { version, settings };
}
