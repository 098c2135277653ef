import type { SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import type { Db } from "../client";

const dialect = new PgDialect();

/**
 * db.execute, as a prepared statement: Postgres parses and plans it once per
 * connection rather than on every call (drizzle sends raw SQL unprepared). For the
 * statements a work session runs on every tool round, whose planning costs as much
 * as running them. Works in a transaction too. postgres-js keys its prepared
 * statements by their text, per connection, and ignores the name drizzle passes.
 */
export async function executePrepared<T>(db: Db, query: SQL): Promise<T[]> {
  const prepared = db._.session.prepareQuery(dialect.sqlToQuery(query), undefined, "cadre", false);
  return (await prepared.execute()) as T[];
}
