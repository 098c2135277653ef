// Picks the Postgres the tests use (the one on 127.0.0.1:5432 when it answers,
// an embedded one otherwise) and prepares a migrated template database that each
// test file copies into a database of its own.
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import postgres from "postgres";
import type { TestProject } from "vitest/node";
import { startEmbeddedPostgres, type LocalPostgres } from "../../scripts/lib/embedded-postgres";
import { migrateDatabase } from "../../src/lib/db/migrate";
import { JobQueue } from "../../src/lib/jobs/job-queue";

declare module "vitest" {
  interface ProvidedContext {
    databaseAdminUrl: string;
    templateDatabase: string;
  }
}

const localServer = "postgres://postgres@127.0.0.1:5432/postgres";

async function answers(url: string): Promise<boolean> {
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

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

export default async function setup(project: TestProject) {
  let embedded: LocalPostgres | undefined;
  let embeddedDir: string | undefined;
  let adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? localServer;
  if (!(await answers(adminUrl))) {
    embeddedDir = path.join(os.tmpdir(), `cadre-test-pg-${process.pid}`);
    console.log(`[tests] No Postgres answers at ${adminUrl}; starting an embedded one.`);
    embedded = await startEmbeddedPostgres({ dataDir: embeddedDir, database: "postgres", persistent: false });
    adminUrl = embedded.url;
  }

  const template = `cadre_template_${process.pid}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists ${template} with (force)`);
  await admin.unsafe(`create database ${template}`);
  await migrateDatabase(withDatabase(adminUrl, template));
  // pg-boss's own schema too, once, so no test file pays for creating it.
  const jobs = await JobQueue.start(withDatabase(adminUrl, template), "web", { quiet: true });
  await jobs.stop({ graceful: false });

  project.provide("databaseAdminUrl", adminUrl);
  project.provide("templateDatabase", template);

  return async () => {
    await admin.unsafe(`drop database if exists ${template} with (force)`);
    await admin.end({ timeout: 5 });
    if (embedded) await embedded.stop();
    if (embeddedDir) await rm(embeddedDir, { recursive: true, force: true });
  };
}
