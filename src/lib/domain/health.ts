import "server-only";
import { alertNoWorker } from "@/lib/domain/alerts";
import { db as processDb, type Db } from "@/lib/db/client";
import { databaseAnswers } from "@/lib/db/health";
import { listTeamsAwaitingWork, type WaitingTeam } from "@/lib/db/queries/work-sessions";
import { readWorkerLiveness, type WorkerLiveness } from "@/lib/db/queries/workers";
import { env } from "@/lib/env";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { webEngine } from "@/lib/http/server";
import { logError } from "@/lib/telemetry/log";

/** Work that has waited this long with no live worker raises a "no worker" alert. */
export const NO_WORKER_ALERT_AFTER_SECONDS = 60;

/** How often the web process looks for work waiting with no worker (the workers, being absent, cannot). */
const WATCH_INTERVAL_MS = 20_000;

/** What `GET /api/health` answers while the database answers. */
export type Health = {
  /** `degraded`: work waits and no worker is alive to do it. */
  status: "ok" | "degraded";
  database: "ok";
  /** Workers alive now (fresh heartbeat, not stopped) and the newest heartbeat of any, ISO or null. */
  workers: { alive: number; lastSeenAt: string | null };
  /**
   * Work no session is serving, in active teams: how many agents have a pending task, queued
   * input or a wake-up, and since when the oldest of them has waited (ISO, null when none).
   * With a live worker this is work about to start; with none, work that will not.
   */
  backlog: { agents: number; oldestWaitingSince: string | null };
};

export type HealthCheck = { ok: true; health: Health } | { ok: false; reason: string };

/**
 * The health probe: does the database answer, are workers alive, does work wait. Raises the
 * "no worker" alerts that are due on the way. Never throws: a failure is `ok: false` with
 * the reason (drizzle's "Failed query" replaced by its cause).
 */
/** The database and job queue to use: the web process's own unless given (tests give theirs). */
export type HealthOptions = { db?: Db; jobs?: JobQueue; staleSeconds?: number };

export async function checkHealth(options: HealthOptions = {}): Promise<HealthCheck> {
  try {
    const db = options.db ?? processDb();
    const answer = await databaseAnswers(db);
    if (!answer.ok) return answer;
    return { ok: true, health: { ...(await checkBackgroundWork(db, options)), database: "ok" } };
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    return { ok: false, reason: cause instanceof Error ? cause.message : String(cause) };
  }
}

/**
 * Reads worker liveness and the backlog (two small queries) and raises a "no worker" alert
 * for each team whose work has waited more than NO_WORKER_ALERT_AFTER_SECONDS with no live
 * worker. Alerts are best effort: failing to raise one is logged, the answer still stands.
 */
export async function checkBackgroundWork(
  db: Db,
  options: Omit<HealthOptions, "db"> = {},
): Promise<Omit<Health, "database">> {
  const staleSeconds = options.staleSeconds ?? env().SESSION_STALE_SECONDS;
  const [liveness, waiting] = await Promise.all([
    readWorkerLiveness(db, staleSeconds),
    listTeamsAwaitingWork(db, staleSeconds),
  ]);
  if (liveness.alive === 0) {
    await raiseNoWorkerAlerts(db, async () => options.jobs ?? (await webEngine()).jobs, liveness, waiting).catch(
      (error: unknown) => logError('Could not raise the "no worker is running" alert:', error),
    );
  }
  const oldest = waiting.reduce<Date | null>(
    (min, team) => (min && min <= team.waitingSince ? min : team.waitingSince),
    null,
  );
  return {
    status: waiting.length > 0 && liveness.alive === 0 ? "degraded" : "ok",
    workers: { alive: liveness.alive, lastSeenAt: liveness.lastSeenAt?.toISOString() ?? null },
    backlog: {
      agents: waiting.reduce((sum, team) => sum + team.agents, 0),
      oldestWaitingSince: oldest?.toISOString() ?? null,
    },
  };
}

/** The "no worker" alerts that are due: one per team per episode (alertNoWorker). */
async function raiseNoWorkerAlerts(
  db: Db,
  queue: () => Promise<JobQueue>,
  liveness: WorkerLiveness,
  waiting: WaitingTeam[],
): Promise<void> {
  const lastSeen = liveness.lastSeenAt;
  for (const team of waiting) {
    // Waiting with no worker began when both were true: work waited and the last worker had gone.
    const since = lastSeen && lastSeen > team.waitingSince ? lastSeen : team.waitingSince;
    if (liveness.now.getTime() - since.getTime() < NO_WORKER_ALERT_AFTER_SECONDS * 1000) continue;
    // Through the web process's queue: the alert goes out to the team's channels with no worker running.
    await alertNoWorker(db, await queue(), team, lastSeen);
  }
}

/** For the page banner: true when work waits and no worker is alive. A failure reads as "not stalled" (and is logged). */
export async function backgroundWorkStalled(): Promise<boolean> {
  try {
    return (await checkBackgroundWork(processDb())).status === "degraded";
  } catch (error) {
    logError("Could not check whether a worker is running:", error);
    return false;
  }
}

const holder = globalThis as typeof globalThis & { cadreStalledWorkWatch?: NodeJS.Timeout };

/**
 * Looks for stalled work every WATCH_INTERVAL_MS in this (web) process, so the alert is
 * raised even when nobody has a page open. Once per process (dev reloads reuse it); the
 * timer is unref'd so it never keeps a process alive. A failure is logged once per streak.
 */
export function watchForStalledWork(): void {
  if (holder.cadreStalledWorkWatch) return;
  let failing = false;
  holder.cadreStalledWorkWatch = setInterval(() => {
    checkBackgroundWork(processDb()).then(
      () => {
        failing = false;
      },
      (error: unknown) => {
        if (!failing) logError("Checking for background work with no worker failed (retrying quietly):", error);
        failing = true;
      },
    );
  }, WATCH_INTERVAL_MS);
  holder.cadreStalledWorkWatch.unref();
}
