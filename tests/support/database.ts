import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { inject } from "vitest";
import { createDatabase, type Database } from "@/lib/db/client";
import { withDatabase } from "../../scripts/lib/postgres-server";

export type TestDatabase = Database & { url: string; name: string; drop: () => Promise<void> };

/**
 * A database of this test file's own, copied from the migrated template: tests in
 * different files never see each other's rows.
 */
export async function createTestDatabase(options: { max?: number } = {}): Promise<TestDatabase> {
  const adminUrl = inject("databaseAdminUrl");
  const template = inject("templateDatabase");
  const name = `cadre_test_${randomBytes(6).toString("hex")}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    // Copies from one template can collide for a moment ("being accessed by other users"); retry briefly.
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.unsafe(`create database ${name} template ${template}`);
        break;
      } catch (error) {
        if (attempt >= 20 || !String(error).includes("being accessed")) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 + attempt * 50));
      }
    }
  } finally {
    await admin.end({ timeout: 5 });
  }
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
