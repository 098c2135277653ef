import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { inject } from "vitest";
import { createDatabase, type Database } from "@/lib/db/client";
import { copyDatabase, withDatabase } from "../../scripts/lib/postgres-server";

export type TestDatabase = Database & { url: string; name: string; drop: () => Promise<void> };

/**
 * A database of this test file's own, copied from the migrated template: tests in
 * different files never see each other's rows.
 */
export async function createTestDatabase(options: { max?: number } = {}): Promise<TestDatabase> {
  const adminUrl = inject("databaseAdminUrl");
  const template = inject("templateDatabase");
  const name = `cadre_test_${randomBytes(6).toString("hex")}`;
  await copyDatabase(adminUrl, template, name);
  const url = withDatabase(adminUrl, name);
  const database = createDatabase(url, { max: options.max ?? 10 });
  return {
    ...database,
    url,
    name,
    drop: async () => {
      await database.close();
      const dropper = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await dropper.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await dropper.end({ timeout: 5 });
      }
    },
  };
}
