import "server-only";
import { eq, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client";
import { workers } from "../schema";

/** Rows of workers gone this long are deleted when a worker starts, so the table stays small. */
const FORGET_WORKERS_AFTER = sql`interval '1 day'`;

/**
 * A worker starting: its row (host:pid) is new or reused — a container restarts with the
 * same pid — and counts as alive from now. Also forgets workers gone for a day. (Only
 * here: the newest heartbeat names a stretch without workers for its "no worker" alert,
 * and a worker starting is what ends that stretch.)
 */
export async function registerWorker(db: Db, workerId: string): Promise<void> {
  await db
    .insert(workers)
    .values({ id: workerId })
    .onConflictDoUpdate({
      target: workers.id,
      set: { startedAt: sql`now()`, heartbeatAt: sql`now()`, stoppedAt: null },
    });
  await db.execute(sql`
    delete from workers
     where heartbeat_at < now() - ${FORGET_WORKERS_AFTER} and id <> ${workerId}`);
}

/**
 * The worker is alive. Touches only heartbeat_at, which does not notify (the live-event
 * trigger watches inserts and stopped_at). A row that vanished is registered again.
 */
export async function recordWorkerHeartbeat(db: Db, workerId: string): Promise<void> {
  const rows = await db
    .update(workers)
    .set({ heartbeatAt: sql`now()` })
    .where(eq(workers.id, workerId))
    .returning({ id: workers.id });
  if (rows.length === 0) await registerWorker(db, workerId);
}

/** A graceful stop: the worker no longer counts as alive, at once rather than after the staleness window. */
export async function markWorkerStopped(db: Db, workerId: string): Promise<void> {
  await db.update(workers).set({ stoppedAt: sql`now()`, heartbeatAt: sql`now()` }).where(eq(workers.id, workerId));
}

/**
 * The key of a worker's liveness lock: a session-level advisory lock its process holds on a
 * connection of its own for as long as it lives (worker/liveness.ts). Postgres releases it
 * the moment that connection closes, which a killed process's does at once.
 */
function workerLockKey(worker: SQL): SQL {
  return sql`hashtextextended(${worker}, 0)`;
}

/**
 * SQL: the worker named by `worker` holds its liveness lock in this database (pg_locks shows
 * a bigint advisory key as its high and low 32 bits in classid and objid).
 */
export function workerHoldsLock(worker: SQL): SQL {
  const key = workerLockKey(worker);
  return sql`exists (select 1 from pg_locks l
     where l.locktype = 'advisory' and l.granted and l.objsubid = 1
       and l.database = (select oid from pg_database where datname = current_database())
       and l.classid = ((${key} >> 32) & 4294967295)::oid and l.objid = (${key} & 4294967295)::oid)`;
}

export type WorkerLiveness = {
  /** Workers not stopped whose heartbeat is fresher than the staleness window. */
  alive: number;
  /** The newest heartbeat of any worker (a stopped one's last), null when none ever ran here. */
  lastSeenAt: Date | null;
  /** The database's clock, so ages are measured on one clock. */
  now: Date;
};

/**
 * Which workers are alive. A worker beats every `staleSeconds / 5` s; one whose heartbeat
 * is older than `staleSeconds` was killed or hangs, the same rule as for work sessions.
 */
export async function readWorkerLiveness(db: Db, staleSeconds: number): Promise<WorkerLiveness> {
  const [row] = await db.execute<{ alive: number; last_seen_at: string | null; now: string }>(sql`
    select count(*) filter (where stopped_at is null and heartbeat_at > now() - make_interval(secs => ${staleSeconds}))::int as alive,
           max(heartbeat_at) as last_seen_at,
           now() as now
      from workers`);
  return {
    alive: row!.alive,
    lastSeenAt: row!.last_seen_at ? new Date(row!.last_seen_at) : null,
    now: new Date(row!.now),
  };
}
