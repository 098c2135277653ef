// The worker process: runs agents' work sessions from the pg-boss queue.
import { waitForDatabase } from "@/lib/db/wait";
import { databaseUnavailableReason } from "@/lib/db/errors";
import { databaseUrl, env } from "@/lib/env";
import { startTelemetry } from "@/lib/telemetry/tracing";
import type { RunningWorker } from "./runner";
import { logError } from "@/lib/telemetry/log";

// Before any session: spans go to OTEL_EXPORTER_OTLP_ENDPOINT when it is set (null: no tracing).
const telemetry = startTelemetry({ serviceName: "cadre-worker" });

// A database that is starting or full is waited for, one line per attempt; anything else that
// stops the start is one line and exit code 1 (`npm start` / systemd start it again later).
// The engine is loaded after the wait: a worker started again and again costs little until it can work.
// The wait covers the whole start, not only the first probe: the queue, the LISTEN and the
// liveness lock open connections of their own, and a server that let one probe in may refuse
// them (full, restarting). A start that fails for want of a database is undone and tried again.
let worker: RunningWorker;
try {
  worker = await startWhenTheDatabaseAnswers();
} catch (error) {
  console.error(`[worker] could not start: ${whyInOneLine(error)}`);
  process.exit(1);
}

async function startWhenTheDatabaseAnswers(): Promise<RunningWorker> {
  const log = (line: string) => console.log(`[worker] ${line}`);
  const giveUpAt = Date.now() + env().DATABASE_WAIT_SECONDS * 1000;
  const secondsLeft = () => Math.max(1, Math.round((giveUpAt - Date.now()) / 1000));
  for (let attempt = 1; ; attempt++) {
    await waitForDatabase(databaseUrl(), { log, giveUpAfterSeconds: secondsLeft() });
    const direct = env().DATABASE_DIRECT_URL;
    if (direct) await waitForDatabase(direct, { log, giveUpAfterSeconds: secondsLeft() });
    const { startWorker } = await import("./runner");
    const stopPartial: Array<() => Promise<void>> = [];
    try {
      return await startWorker({
        concurrency: Number(process.env.WORKER_CONCURRENCY) || 8,
        onPartialStart: (stop) => stopPartial.push(stop),
      });
    } catch (error) {
      const why = databaseUnavailableReason(error);
      // Undone in reverse: the heartbeat's last write needs the pool that is closed last.
      for (const stop of stopPartial.reverse()) await stop().catch(() => {});
      if (!why || Date.now() + 2_000 > giveUpAt) throw error;
      log(
        `Waiting for the database: it refused this worker's start (${why}); trying again in 2 s (start attempt ${attempt}).`,
      );
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  }
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
