import { drizzle, type PostgresJsDatabase, type PostgresJsQueryResultHKT } from "drizzle-orm/postgres-js";
import type { PgDatabase } from "drizzle-orm/pg-core";
import postgres from "postgres";
import { databaseUrl, env } from "@/lib/env";
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
  const sql = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    // Fail fast when the server is gone instead of hanging a request.
    connect_timeout: 10,
  });
  const db = drizzle(sql, { schema });
  return { db, sql, close: () => sql.end({ timeout: 5 }) };
}

/**
 * How a process's DATABASE_POOL_SIZE is shared: pg-boss's pool a third (at least 2: a
 * fetch and a send at once), Cadre's queries the rest. Beside these pools a process holds
 * dedicated connections: one LISTEN of postgres-js (live events in the web process, stop
 * requests in a worker), one of pg-boss (job NOTIFYs), and in a worker its liveness lock
 * (worker/liveness.ts). So a web process opens at most size + 2 connections, a worker size + 3.
 */
export function connectionBudget(size: number = env().DATABASE_POOL_SIZE): { queries: number; jobs: number } {
  const jobs = Math.max(2, Math.round(size / 3));
  return { queries: Math.max(2, size - jobs), jobs };
}

// One pool per process; dev hot reloads re-evaluate modules, so keep it on globalThis.
const globalForDb = globalThis as typeof globalThis & { cadreDatabase?: Database };

export function database(): Database {
  globalForDb.cadreDatabase ??= createDatabase(databaseUrl(), { max: connectionBudget().queries });
  return globalForDb.cadreDatabase;
}

export function db(): PostgresJsDatabase<Schema> {
  return database().db;
}
