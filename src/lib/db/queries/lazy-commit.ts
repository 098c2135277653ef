import "server-only";
// A one-row FROM item, `lazy_commit`, that lets the statement's own transaction commit
// without waiting for the disk (synchronous_commit = off for that transaction only):
// one WAL flush less, 0.3 to 2.5 ms on the benchmark machine. For rows written on every
// model call whose loss in a Postgres crash costs nothing but a redo: a usage row, a
// session's step count, the assistant row of a step in flight.
//
// What it risks: nothing when the worker crashes (Postgres has the commit, and it is
// visible at once); when Postgres itself crashes, such rows of the last ~0.6 s
// (3 × wal_writer_delay). Never out of order: the WAL replays as a prefix, and the next
// durable commit (a tool's result) flushes them with it. The statement must select from
// `lazy_commit`, or Postgres never evaluates it. Inside a caller's transaction it would
// make that whole transaction lazy, so there it does nothing and the caller's commit decides.
import { sql, type SQL } from "drizzle-orm";
import { PgTransaction } from "drizzle-orm/pg-core";
import type { Db } from "../client";

/** Whether a statement on `db` asked to commit lazily does: never inside a caller's transaction. */
export function commitsLazily(db: Db, lazy = true): boolean {
  return lazy && !(db instanceof PgTransaction);
}

/** The `lazy_commit` FROM item itself, for a statement built once per variant (see prepared.ts). */
export function lazyCommitClause(lazy: boolean): SQL {
  return lazy
    ? sql`(select set_config('synchronous_commit', 'off', true)) as lazy_commit`
    : sql`(select 1) as lazy_commit`;
}
