// The worker process: runs agents' work sessions from the pg-boss queue.
import { startTelemetry } from "@/lib/telemetry";
import { startWorker } from "./runner";

// Before any session: spans go to OTEL_EXPORTER_OTLP_ENDPOINT when it is set (null: no tracing).
const telemetry = startTelemetry({ serviceName: "cadre-worker" });
const worker = await startWorker({ concurrency: Number(process.env.WORKER_CONCURRENCY) || 8 });

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`[worker] ${signal}: taking no new jobs, finishing the steps in flight …`);
  await worker.stop();
  // The sessions' last spans are still in the batch: send them before the process ends.
  await telemetry?.shutdown().catch((error: unknown) => console.error("[worker] could not send the last spans", error));
  console.log("[worker] stopped.");
  process.exit(0);
}
// A stray rejection must not end every session this worker runs: say so loudly and go on.
process.on("unhandledRejection", (reason) => console.error("[worker] unhandled rejection (a bug; the worker goes on):", reason));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
