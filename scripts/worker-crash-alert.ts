// Run by the supervisor (scripts/lib/processes.ts) when the worker keeps crashing: raises the
// one alert of the streak in the person's inbox, on the web server's DATABASE_URL. A process of
// its own so the supervisor never holds a database pool or a job queue that could fail it.
import { createDatabase } from "../src/lib/db/client";
import { JobQueue } from "../src/lib/jobs/job-queue";
import { raiseWorkerCrashAlert, workerCrashReport } from "../src/lib/views/worker-crashes";

const url = process.env.DATABASE_URL;
let outcome: Awaited<ReturnType<typeof raiseWorkerCrashAlert>> | undefined;
try {
  if (!url) throw new Error("DATABASE_URL is not set");
  const report = workerCrashReport.parse(JSON.parse(process.argv[2] ?? ""));
  const database = createDatabase(url, { max: 2 });
  const jobs = await JobQueue.start(url, "web", { quiet: true, poolSize: 2 });
  try {
    outcome = await raiseWorkerCrashAlert(database.db, jobs, report);
    console.log(
      outcome === "no team"
        ? "[cadre] The worker keeps stopping; there is no team yet whose inbox could be told."
        : `[cadre] The worker keeps stopping: the inbox has an alert about it${outcome === "raised already" ? " already" : ""}.`,
    );
  } finally {
    await jobs.stop({ graceful: false, timeoutMs: 2000 }).catch(() => {});
    await database.close();
  }
  // No team to tell is no alert: the supervisor asks again at the next crash (a team may exist by then).
  process.exit(outcome === "no team" ? 3 : 0);
} catch (error) {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  console.log(
    `[cadre] Could not raise the alert that the worker keeps stopping: ${(cause instanceof Error ? cause.message : String(cause)).split("\n")[0]}`,
  );
  process.exit(1);
}
