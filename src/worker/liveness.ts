import postgres from "postgres";
import { postgresJsSettings } from "@/lib/db/connection-target";
import type { Db } from "@/lib/db/client";
import { markWorkerStopped, recordWorkerHeartbeat, registerWorker } from "@/lib/db/queries/workers";

/**
 * The worker's own heartbeat in `workers`, which the health check and the "no worker"
 * banner and alert read. Beats every `staleSeconds / 5` s (as sessions do), so a worker
 * counts as gone `staleSeconds` after it died. A failed beat is logged and the next one
 * tries again: the worker keeps working whatever happens to its heartbeat.
 *
 * Beside it, the worker's liveness lock (`workerLockKey`): a session-level advisory lock on
 * a connection of its own, which Postgres frees the moment the process dies and its
 * connection closes. The reaper (reapStaleSessions) reads it to retake a killed worker's
 * sessions after two silent beats instead of the whole stale window. The lock costs no
 * statement while it holds: it is taken again only after that connection closed. It needs
 * a direct connection (or PgBouncer in session mode); behind transaction pooling it cannot
 * be held, and the stale window alone applies.
 */
export async function startWorkerHeartbeat(
  db: Db,
  options: {
    workerId: string;
    staleSeconds: number;
    /** A URL that keeps its session; null (a transaction pooler and no direct URL): no lock, the stale window alone. */
    sessionUrl: string | null;
    log: (message: string, error?: unknown) => void;
  },
): Promise<{ stop: () => Promise<void> }> {
  const { workerId, log } = options;
  let locked = false;
  const target = options.sessionUrl ? postgresJsSettings(options.sessionUrl) : null;
  const lockConnection = postgres(target?.url ?? "postgres://unused", {
    ssl: target?.ssl ?? false,
    max: 1,
    // Held for the process's life: never recycled, never closed for being idle.
    max_lifetime: null,
    idle_timeout: 0,
    connect_timeout: 10,
    onnotice: () => {},
    onclose: () => {
      locked = false;
    },
  });
  const holdLock = async () => {
    if (locked || !target) return;
    const [row] = await lockConnection<
      { locked: boolean }[]
    >`select pg_try_advisory_lock(hashtextextended(${workerId}, 0)) as locked`;
    locked = row?.locked === true;
    if (!locked)
      log(
        `[worker] another process holds the liveness lock of ${workerId}; dead-worker detection falls back to the stale window.`,
      );
  };
  await registerWorker(db, workerId);
  await holdLock().catch((error: unknown) => log("[worker] could not take its liveness lock", error));
  let beating: Promise<void> = Promise.resolve();
  const timer = setInterval(
    () => {
      beating = Promise.all([
        recordWorkerHeartbeat(db, workerId).catch((error: unknown) =>
          log("[worker] could not record its heartbeat", error),
        ),
        holdLock().catch((error: unknown) => log("[worker] could not take its liveness lock again", error)),
      ]).then(() => {});
    },
    Math.max(500, (options.staleSeconds * 1000) / 5),
  );
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await beating; // a beat in flight must not land after the stop
      await markWorkerStopped(db, workerId).catch((error: unknown) =>
        log("[worker] could not record that it stopped", error),
      );
      await lockConnection.end({ timeout: 5 }).catch(() => {});
    },
  };
}
