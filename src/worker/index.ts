// The worker process: runs agents' work sessions from the pg-boss queue.
import { waitForDatabase } from "@/lib/db/wait";
import { databaseUrl, env } from "@/lib/env";
import { startTelemetry } from "@/lib/telemetry/tracing";
import type { RunningWorker } from "./runner";
import { logError } from "@/lib/telemetry/log";

// Before any session: spans go to OTEL_EXPORTER_OTLP_ENDPOINT when it is set (null: no tracing).
const telemetry = startTelemetry({ serviceName: "cadre-worker" });

// A database that is starting or full is waited for, one line per attempt; anything else that
// stops the start is one line and exit code 1 (`npm start` / systemd start it again later).
// The engine is loaded after the wait: a worker started again and again costs little until it can work.
let worker: RunningWorker;
try {
  await waitForDatabase(databaseUrl(), {
    log: (line) => console.log(`[worker] ${line}`),
    giveUpAfterSeconds: env().DATABASE_WAIT_SECONDS,
  });
  const { startWorker } = await import("./runner");
  worker = await startWorker({ concurrency: Number(process.env.WORKER_CONCURRENCY) || 8 });
} catch (error) {
  console.error(`[worker] could not start: ${whyInOneLine(error)}`);
  process.exit(1);
}

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
process.on("unhandledRejection", (reason) =>
  logError("[worker] unhandled rejection (a bug; the worker goes on):", reason),
);
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));

/** Drizzle's "Failed query: <sql>" names the statement; its cause says what went wrong. */
function whyInOneLine(error: unknown): string {
  const cause =
    error instanceof Error && error.cause instanceof Error && /^Failed query/.test(error.message) ? error.cause : error;
  return (cause instanceof Error ? cause.message : String(cause)).split("\n")[0]!.replace(/[.\s]+$/, "");
}
