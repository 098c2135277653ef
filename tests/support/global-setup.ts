// Picks the Postgres the tests use (the one on 127.0.0.1:5432 when it answers,
// an embedded one otherwise) and prepares a migrated template database that each
// test file copies into a database of its own.
import postgres from "postgres";
import type { TestProject } from "vitest/node";
import { LOCAL_POSTGRES_URL, localOrEmbeddedPostgres, withDatabase } from "../../scripts/lib/postgres-server";
import { migrateDatabase } from "../../src/lib/db/migrate";
import { JobQueue } from "../../src/lib/jobs/job-queue";

declare module "vitest" {
  interface ProvidedContext {
    databaseAdminUrl: string;
    templateDatabase: string;
  }
}

export default async function setup(project: TestProject) {
  const server = await localOrEmbeddedPostgres({
    preferredUrl: process.env.TEST_DATABASE_ADMIN_URL ?? LOCAL_POSTGRES_URL,
    purpose: "test",
    log: (line) => console.log(`[tests] ${line}`),
  });
  const adminUrl = server.adminUrl;

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
    await server.stop();
  };
}
