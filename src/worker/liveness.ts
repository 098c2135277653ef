import type { Db } from "@/lib/db/client";
import { markWorkerStopped, recordWorkerHeartbeat, registerWorker } from "@/lib/db/queries/workers";

/**
 * The worker's own heartbeat in `workers`, which the health check and the "no worker"
 * banner and alert read. Beats every `staleSeconds / 5` s (as sessions do), so a worker
 * counts as gone `staleSeconds` after it died. A failed beat is logged and the next one
 * tries again: the worker keeps working whatever happens to its heartbeat.
 */
export async function startWorkerHeartbeat(
  db: Db,
  options: { workerId: string; staleSeconds: number; log: (message: string, error?: unknown) => void },
): Promise<{ stop: () => Promise<void> }> {
  const { workerId, log } = options;
  await registerWorker(db, workerId);
  let beating: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    beating = recordWorkerHeartbeat(db, workerId).catch((error: unknown) => log("[worker] could not record its heartbeat", error));
  }, Math.max(500, (options.staleSeconds * 1000) / 5));
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await beating; // a beat in flight must not land after the stop
      await markWorkerStopped(db, workerId).catch((error: unknown) => log("[worker] could not record that it stopped", error));
    },
  };
}

