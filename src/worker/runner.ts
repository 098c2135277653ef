import { createDatabase, type Database } from "@/lib/db/client";
import { connectionBudget, reportConnectionRoom } from "@/lib/db/connection-budget";
import { listenWithRecovery } from "@/lib/db/listener";
import { runWorkSession, stopLocalSession } from "@/lib/engine/agent";
import { endReapedStop } from "@/lib/engine/session-end";
import { resumeChat } from "@/lib/engine/chat";
import { engineDeps, type EngineDeps } from "@/lib/core/engine-config";
import { teamsOverBudget } from "@/lib/domain/budgets";
import { runScheduledLeadCheckIn, syncLeadSchedules } from "@/lib/domain/schedules";
import { embedWaitingKnowledge } from "@/lib/domain/knowledge-embedding";
import { listAgentsAwaitingWork, reapStaleSessions } from "@/lib/db/queries/work-sessions";
import { databaseUrl, env } from "@/lib/env";
import { sessionUrlFor } from "@/lib/db/connection-target";
import { JobQueue } from "@/lib/jobs/job-queue";
import { agentWakePayload, chatResumePayload, leadSchedulePayload, SESSION_STOP_CHANNEL } from "@/lib/jobs/queues";
import { workNotifications } from "@/lib/notifications/deliver";
import { closeMcpConnections, pruneMcpConnections } from "@/lib/mcp/connections";
import { listEnabledMcpServerIds } from "@/lib/db/queries/mcp-servers";
import { startWorkerHeartbeat } from "./liveness";
import { logError } from "@/lib/telemetry/log";

export type WorkerOptions = {
  databaseUrl?: string;
  /** The URL that keeps a session (LISTEN, the liveness lock); unset: DATABASE_DIRECT_URL, or `databaseUrl` unless it is pooled. */
  directDatabaseUrl?: string;
  /** Sessions this process runs at once (different agents). */
  concurrency?: number;
  deps?: Partial<Omit<EngineDeps, "db" | "jobs">>;
  /** Given a function that undoes what has started so far, should the start fail half-way (the caller tries again). */
  onPartialStart?: (stop: () => Promise<void>) => void;
  /** A line for the operator; an error keeps its cause and stack. */
  log?: (message: string, error?: unknown) => void;
};

export type RunningWorker = { jobs: JobQueue; database: Database; deps: EngineDeps; stop: () => Promise<void> };

/**
 * A worker process: works agents' wake-ups (one session per agent, any number of
 * agents at once), the leads' schedules and notification deliveries, and keeps an eye on
 * dead workers' sessions.
 */
export async function startWorker(options: WorkerOptions = {}): Promise<RunningWorker> {
  const url = options.databaseUrl ?? databaseUrl();
  // Behind a transaction pooler with no direct URL: no LISTEN and no liveness lock (null).
  const sessionUrl = sessionUrlFor(
    url,
    options.directDatabaseUrl ?? (options.databaseUrl === undefined ? env().DATABASE_DIRECT_URL : undefined),
  );
  const log =
    options.log ??
    ((message: string, error?: unknown) => (error === undefined ? console.log(message) : logError(message, error)));
  const budget = connectionBudget("worker");
  const database = createDatabase(url, { max: budget.queries });
  options.onPartialStart?.(() => database.close());
  await reportConnectionRoom(database.sql, "worker", (line) => log(line));
  const jobs = await JobQueue.start(url, "worker", {
    notificationRetryDelaySeconds: env().NOTIFICATION_RETRY_DELAY_SECONDS,
    poolSize: budget.jobs,
    listenUrl: sessionUrl,
  });
  options.onPartialStart?.(() => jobs.stop({ graceful: false, timeoutMs: 1_000 }));
  const deps = engineDeps(database.db, jobs, { ...options.deps, log });
  const shutdown = new AbortController();

  // A stop from the web process reaches the session here at once; the session's
  // heartbeat reads the same request from the database within seconds as a fallback.
  // A LISTEN lost (a restart, the connection limit) is taken up again (db/listener.ts); the
  // heartbeat is the fallback for a Stop sent in between.
  // With no session to listen on (a transaction pooler and no DATABASE_DIRECT_URL), the heartbeat alone brings a Stop.
  const listener = sessionUrl
    ? await listenWithRecovery(sessionUrl, SESSION_STOP_CHANNEL, (sessionId) => stopLocalSession(sessionId), {
        purpose: "Stop requests",
        log: (line) => log(`[worker] ${line}`),
      })
    : null;
  if (listener) options.onPartialStart?.(() => listener.stop());
  if (!sessionUrl)
    log(
      "[worker] DATABASE_URL goes through a transaction pooler and DATABASE_DIRECT_URL is not set: no LISTEN and no liveness lock. " +
        `Work is polled for every 2 s, a Stop arrives with a session's heartbeat (within ${Math.ceil(deps.config.staleSessionSeconds / 5)} s) and a killed worker's sessions are taken up after ${deps.config.staleSessionSeconds} s.`,
    );

  // Alive (row and liveness lock) before the first session: its sessions are never taken for a dead worker's.
  const liveness = await startWorkerHeartbeat(database.db, {
    workerId: deps.config.worker,
    staleSeconds: deps.config.staleSessionSeconds,
    sessionUrl,
    log,
  });
  options.onPartialStart?.(() => liveness.stop());
  await jobs.workAgentWakes(options.concurrency ?? 8, async (job) => {
    const { agentId } = agentWakePayload.parse(job.data);
    const outcome = await runWorkSession(deps, agentId, { shutdown: shutdown.signal });
    // A deletion is the person's doing, not a failure: one line that says so.
    if (outcome.status === "deleted")
      log(
        `[worker] session of ${outcome.agentName ? `${JSON.stringify(outcome.agentName)} (agent ${agentId})` : `agent ${agentId}`} ended: ${outcome.error}`,
      );
    else if (outcome.status !== "busy")
      log(
        `[worker] agent ${agentId}: session ${outcome.status} after ${outcome.steps} step(s)${outcome.error ? `: ${outcome.error}` : ""}`,
      );
  });
  await jobs.workChatResumes(async (job) => {
    const { agentId } = chatResumePayload.parse(job.data);
    await resumeChat(deps, agentId);
  });
  await jobs.workLeadSchedules(async (job) => {
    const { agentId } = leadSchedulePayload.parse(job.data);
    await runScheduledLeadCheckIn(deps, agentId);
  });
  await workNotifications(database.db, jobs, log);
  await jobs.workKnowledgeEmbeddings(async (signal) => {
    const run = await embedWaitingKnowledge(
      { db: database.db, embedding: deps.embedding, log, timeoutMs: deps.config.modelTimeoutMs },
      { signal },
    );
    if (run.embedded > 0) log(`[worker] embedded ${run.embedded} knowledge item(s) for recall by meaning`);
  });

  const reap = async () => {
    for (const reaped of await reapStaleSessions(database.db, deps.config.staleSessionSeconds)) {
      if (reaped.stopRequested) {
        log(`[worker] agent ${reaped.agentId}: its worker stopped responding after a Stop; the session ends stopped.`);
        await endReapedStop(database.db, reaped);
      } else log(`[worker] agent ${reaped.agentId}: its worker stopped responding; taking the session up again.`);
      // Work given after a Stop goes on, as after any end.
      await jobs.nudgeAgent(reaped.agentId);
    }
  };
  // The backlog that exists now (tasks created while no worker ran, sessions of a
  // crashed worker) is nudged at once rather than waiting for the next wake-up. A team over
  // its daily budget is left alone (its sessions would end at once, again and again): its
  // agents keep their wake flags, so a drain takes the work up once the next UTC day starts.
  const drainBacklog = async () => {
    const waiting = await listAgentsAwaitingWork(database.db, deps.config.staleSessionSeconds);
    const overBudget = await teamsOverBudget(
      deps,
      waiting.map((agent) => agent.teamId),
    );
    for (const { agentId, teamId } of waiting) if (!overBudget.has(teamId)) await jobs.nudgeAgent(agentId);
  };
  await reap();
  await drainBacklog();
  // The backfill: items saved before recall by meaning, or embedded by another model, are
  // embedded in the background (the job finds them; it finds nothing when none wait).
  await jobs.embedKnowledge().catch((error: unknown) => log("[worker] could not queue the knowledge backfill", error));
  await syncLeadSchedules(deps, env().LEAD_SCHEDULE).catch((error: unknown) =>
    log("[worker] could not sync lead schedules", error),
  );
  let reaps = 0;
  const reaper = setInterval(
    () => {
      reap().catch((error: unknown) => log("[worker] reaping stale sessions failed", error));
      // Now and then the backlog again: a nudge lost with a database restart, or a wake job
      // pg-boss gave up on, must not leave work waiting while a worker is alive. Nudges are
      // one per agent (singleton key), so an agent already queued costs nothing.
      if (++reaps % 15 === 0) {
        drainBacklog().catch((error: unknown) => log("[worker] nudging the backlog failed", error));
        // A stdio MCP server whose settings were deleted or turned off (its team deleted, say) must not outlive them.
        pruneMcpConnections((ids) => listEnabledMcpServerIds(database.db, ids)).catch((error: unknown) =>
          log("[worker] closing unused MCP connections failed", error),
        );
      }
      // Every stale/7.5 s (2 s by default): a killed worker's sessions are retaken once two of
      // their beats are missing and its liveness lock is free, so the reaper's rhythm is most
      // of what is left of recovery. One cheap statement; pg-boss polling less often pays for it.
    },
    Math.max(500, (deps.config.staleSessionSeconds * 1000) / 7.5),
  );

  log("[worker] ready: waiting for work.");
  return {
    jobs,
    database,
    deps,
    stop: async () => {
      clearInterval(reaper);
      // Sessions end after the step in flight, then pg-boss waits for their handlers.
      shutdown.abort();
      await liveness.stop(); // no longer counted alive: it takes no new work from here
      await jobs
        .stop({ graceful: true, timeoutMs: 60_000 })
        .catch((error: unknown) => log("[worker] stopping the queue", error));
      await listener?.stop();
      await closeMcpConnections(); // stdio servers exit with their connection
      await database.close();
    },
  };
}
