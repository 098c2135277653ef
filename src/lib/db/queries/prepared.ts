import "server-only";
import type { Query, SQL } from "drizzle-orm";
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
  return run<T>(db, dialect.sqlToQuery(query));
}

/**
 * A prepared statement whose text is built once, at its first use, from a query whose
 * values are `sql.placeholder(name)`s, then run with those values. drizzle otherwise builds
 * the text anew on every call, which on the statements of every tool round (appends, the
 * reads for the next call) cost more of this process's CPU than the round trip itself.
 * Rows come as postgres-js gives them: snake_case columns, timestamps as Dates, json parsed.
 */
export function statement<T, Values extends Record<string, unknown>>(
  build: () => SQL,
): (db: Db, values: Values) => Promise<T[]> {
  let built: Query | undefined;
  return (db, values) => {
    built ??= dialect.sqlToQuery(build());
    return run<T>(db, built, values);
  };
}

/**
 * The variants of one statement (lazy or durable commit, a condition or none), each built
 * once: `variants(key => sql…)` then `(key)(db, values)`.
 */
export function statementVariants<Key extends string, T, Values extends Record<string, unknown>>(
  build: (key: Key) => SQL,
): (key: Key) => (db: Db, values: Values) => Promise<T[]> {
  const built = new Map<Key, (db: Db, values: Values) => Promise<T[]>>();
  return (key) => {
    let variant = built.get(key);
    if (!variant) {
      variant = statement<T, Values>(() => build(key));
      built.set(key, variant);
    }
    return variant;
  };
}

async function run<T>(db: Db, query: Query, values?: Record<string, unknown>): Promise<T[]> {
  const prepared = db._.session.prepareQuery(query, undefined, "cadre", false);
  return (await prepared.execute(values)) as T[];
}
