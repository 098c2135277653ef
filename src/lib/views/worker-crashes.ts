import "server-only";
// A worker that keeps crashing: `npm start` / `npm run dev` start it again each time, with a
// growing wait; after a few exits in a short while the person hears of it once, in the inbox.
import { z } from "zod";
import { alertWorkerCrashing } from "@/lib/domain/alerts";
import type { Db } from "@/lib/db/client";
import { findLongestStandingLead } from "@/lib/db/queries/teams";
import type { JobQueue } from "@/lib/jobs/job-queue";

/** What the supervisor knows of a crash streak (passed to scripts/worker-crash-alert.ts as JSON). */
export const workerCrashReport = z.object({
  /** The machine the supervisor runs on: two machines' streaks are two alerts. */
  host: z.string().min(1),
  /** Exits within the window, the last included. */
  exits: z.number().int().positive(),
  windowMinutes: z.number().positive(),
  /** When the first of those exits happened (ISO): names the streak, so one streak is one alert. */
  since: z.iso.datetime(),
  /** The worker's last error line, or how it ended ("killed by SIGKILL"). */
  lastError: z.string().min(1),
  /** How long the supervisor now waits before each new start. */
  retrySeconds: z.number().int().positive(),
});

export type WorkerCrashReport = z.infer<typeof workerCrashReport>;

/**
 * One alert per crash streak (keyed by machine and the streak's first exit, so raising it again
 * adds nothing). Alerts belong to a team: a worker serves every team, so it goes to the
 * longest-standing one's lead, and the person sees it once rather than once per team.
 * Says which happened: raised, raised already (the same streak), or no team yet to tell.
 */
export async function raiseWorkerCrashAlert(
  db: Db,
  jobs: JobQueue,
  report: WorkerCrashReport,
): Promise<"raised" | "raised already" | "no team"> {
  const lead = await findLongestStandingLead(db);
  if (!lead) return "no team";
  return (await alertWorkerCrashing(db, jobs, lead, report)) ? "raised" : "raised already";
}
