// The worker process: runs agents' work sessions from the pg-boss queue.
import { startWorker } from "./runner";

const worker = await startWorker({ concurrency: Number(process.env.WORKER_CONCURRENCY) || 8 });

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`[worker] ${signal}: taking no new jobs, finishing the steps in flight …`);
  await worker.stop();
  console.log("[worker] stopped.");
  process.exit(0);
}
// A stray rejection must not end every session this worker runs: say so loudly and go on.
process.on("unhandledRejection", (reason) => console.error("[worker] unhandled rejection (a bug; the worker goes on):", reason));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
