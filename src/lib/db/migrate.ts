import "server-only";
import path from "node:path";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import { createDatabase } from "./client";

const migrationsFolder = path.join(process.cwd(), "drizzle");

/** Applies the committed migrations in drizzle/ to the database at `url`. */
export async function migrateDatabase(url: string): Promise<void> {
  const { db, close } = createDatabase(url, { max: 1 });
  try {
    await migrate(db, { migrationsFolder });
  } catch (error) {
    // Drizzle's "Failed query: <sql>" says which statement; its cause says why (e.g. "too many clients already").
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : undefined;
    throw new Error(`Could not apply migrations to ${redactUrl(url)}: ${cause ?? (error as Error).message}`, {
      cause: error,
    });
  } finally {
    await close();
  }
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(unparseable database URL)";
  }
}
