import "server-only";
import { drizzle, type PostgresJsDatabase, type PostgresJsQueryResultHKT } from "drizzle-orm/postgres-js";
import type { PgDatabase } from "drizzle-orm/pg-core";
import postgres from "postgres";
import { databaseUrl } from "@/lib/env";
import { connectionBudget } from "./connection-budget";
import { postgresJsSettings } from "./connection-target";
import * as schema from "./schema";

export type Schema = typeof schema;

/** A database handle or an open transaction: every query function takes either. */
export type Db = PgDatabase<PostgresJsQueryResultHKT, Schema>;

export type Database = {
  db: PostgresJsDatabase<Schema>;
  sql: postgres.Sql;
  close: () => Promise<void>;
};

export function createDatabase(url: string, options: { max?: number } = {}): Database {
  // Behind a transaction pooler, no named prepared statements (each statement is parsed again).
  const target = postgresJsSettings(url);
  const sql = postgres(target.url, {
    ssl: target.ssl,
    prepare: target.prepare,
    max: options.max ?? 10,
    onnotice: () => {},
    // Fail fast when the server is gone instead of hanging a request.
    connect_timeout: 10,
  });
  const db = drizzle(sql, { schema });
  return { db, sql, close: () => sql.end({ timeout: 5 }) };
}

// One pool per process; dev hot reloads re-evaluate modules, so keep it on globalThis.
const globalForDb = globalThis as typeof globalThis & { cadreDatabase?: Database };

export function database(): Database {
  globalForDb.cadreDatabase ??= createDatabase(databaseUrl(), { max: connectionBudget("web").queries });
  return globalForDb.cadreDatabase;
}

export function db(): PostgresJsDatabase<Schema> {
  return database().db;
}
