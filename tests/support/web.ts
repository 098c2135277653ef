import type { EngineDeps } from "@/lib/core/engine-config";
import { stopLiveEvents } from "@/lib/http/events";
import { createTestDatabase, type TestDatabase } from "./database";

/**
 * A test database that route handlers of this process use: the web process's
 * cached engine (src/lib/server.ts) reads DATABASE_URL on first use.
 */
export async function createWebTestDatabase(): Promise<TestDatabase> {
  const database = await createTestDatabase();
  process.env.DATABASE_URL = database.url;
  return database;
}

/** Stops what route handlers started in this process (job queue, pool), then drops the database. */
export async function closeWebTestDatabase(database: TestDatabase | undefined): Promise<void> {
  const holder = globalThis as { cadreEngine?: Promise<EngineDeps>; cadreDatabase?: { close: () => Promise<void> } };
  await (await holder.cadreEngine?.catch(() => undefined))?.jobs.stop({ graceful: false });
  delete holder.cadreEngine;
  await stopLiveEvents();
  await holder.cadreDatabase?.close();
  delete holder.cadreDatabase;
  await database?.drop();
}
