import "server-only";
import { sql, type SQL } from "drizzle-orm";

/**
 * Where a keyset page left off: a row's time to the microsecond (a JS Date keeps only
 * milliseconds, and rows written together differ in the rest) and its id, the tie-break.
 * The timeline, the inbox and team search page newest first with it.
 */
export type KeysetPosition = { atMicros: bigint; id: string };

/** A timestamp column as microseconds since the epoch, as text (a bigint does not fit a JS number). */
export function atMicros(column: SQL | SQL.Aliased | unknown): SQL<string> {
  return sql<string>`(extract(epoch from ${column}) * 1000000)::bigint::text`;
}

/** Rows strictly older than `position` in (time, id) order. */
export function olderThan(time: unknown, id: unknown, position: KeysetPosition): SQL {
  return sql`(${time}, ${id}) < (timestamptz 'epoch' + ${position.atMicros.toString()}::bigint * interval '1 microsecond', ${position.id}::uuid)`;
}
