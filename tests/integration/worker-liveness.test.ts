// Workers record a heartbeat of their own; the health check reads it with the backlog, and
// work that waits with no live worker raises one "no worker" alert per episode.
import os from "node:os";
import { and, eq, sql } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { engineConfigFromEnv } from "@/lib/core/engine-config";
import { createTask } from "@/lib/db/queries/tasks";
import { markWorkerStopped, readWorkerLiveness, registerWorker } from "@/lib/db/queries/workers";
import { listAgentsAwaitingWork } from "@/lib/db/queries/work-sessions";
import { agentInputs, agents, inboxItems, tasks, teams, workers } from "@/lib/db/schema";
import { JobQueue } from "@/lib/jobs/job-queue";
import { checkBackgroundWork, checkHealth, NO_WORKER_ALERT_AFTER_SECONDS } from "@/lib/domain/health";
import { startWorker } from "@/worker/runner";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../support/worker-process";

// The in-process worker reads the environment once: no proactive runs in this file.
process.env.LEAD_SCHEDULE = "off";

const STALE = 2; // seconds: a worker beats every 0.5 s and counts as gone 2 s after its last beat

let database: TestDatabase;
let jobs: JobQueue;
const processes: WorkerProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  jobs = await JobQueue.start(database.url, "web", { quiet: true });
});
afterEach(async () => {
  await Promise.all(processes.splice(0).map((worker) => worker.stop("SIGKILL")));
  // Each test starts from no workers, no teams, no inbox.
  await database.db.delete(workers);
  await database.db.delete(teams);
});
afterAll(async () => {
  await jobs?.stop({ graceful: false, timeoutMs: 1000 });
  await database?.drop();
});

async function workerRow(id: string) {
  const [row] = await database.db.select().from(workers).where(eq(workers.id, id));
  return row;
}

/** Moves a task's creation (so its waiting) back in time. */
async function backdateTask(taskId: string, seconds: number) {
  await database.db
    .update(tasks)
    .set({ createdAt: sql`now() - make_interval(secs => ${seconds})` })
    .where(eq(tasks.id, taskId));
}

async function backdateWorker(id: string, seconds: number) {
  await database.db
    .update(workers)
    .set({ heartbeatAt: sql`heartbeat_at - make_interval(secs => ${seconds})` })
    .where(eq(workers.id, id));
}

async function noWorkerAlerts() {
  return database.db
    .select()
    .from(inboxItems)
    .where(and(eq(inboxItems.type, "alert"), sql`${inboxItems.dedupeKey} like 'no-worker:%'`))
    .orderBy(inboxItems.createdAt);
}

describe("worker liveness", () => {
  it("a worker registers when it starts, beats while it runs, and says it stopped when stopped", {
    timeout: 30_000,
  }, async () => {
    const id = "liveness-test:1";
    const lines: string[] = [];
    const worker = await startWorker({
      databaseUrl: database.url,
      concurrency: 1,
      deps: { config: { ...engineConfigFromEnv(), worker: id, staleSessionSeconds: STALE } },
      log: (line) => lines.push(line),
    });
    try {
      const registered = await workerRow(id);
      expect(registered).toMatchObject({ id, stoppedAt: null });
      expect(await readWorkerLiveness(database.db, STALE)).toMatchObject({ alive: 1 });

      const beat = await waitFor(
        async () => {
          const row = await workerRow(id);
          return row && row.heartbeatAt > registered!.heartbeatAt ? row : null;
        },
        { timeoutMs: 5_000, what: "a second heartbeat" },
      );
      // Still alive after more than one staleness window: the beats keep it fresh.
      await new Promise((resolve) => setTimeout(resolve, STALE * 1000 + 500));
      const later = await readWorkerLiveness(database.db, STALE);
      expect(later.alive).toBe(1);
      expect(later.lastSeenAt!.getTime()).toBeGreaterThan(beat.heartbeatAt.getTime());
    } finally {
      await worker.stop();
    }
    const stopped = await workerRow(id);
    expect(stopped!.stoppedAt).toBeInstanceOf(Date);
    // A graceful stop counts at once, not after the staleness window.
    expect(await readWorkerLiveness(database.db, STALE)).toMatchObject({ alive: 0, lastSeenAt: stopped!.heartbeatAt });
    expect(lines.filter((line) => /heartbeat/.test(line))).toEqual([]);
  });

  it("a failed heartbeat is logged with its cause and the worker goes on beating", { timeout: 30_000 }, async () => {
    const id = "liveness-test:2";
    const lines: string[] = [];
    const worker = await startWorker({
      databaseUrl: database.url,
      concurrency: 1,
      deps: { config: { ...engineConfigFromEnv(), worker: id, staleSessionSeconds: STALE } },
      // The error itself reaches the log, cause included (drizzle's "Failed query" alone says little).
      log: (message, error) =>
        lines.push(
          `${message} ${error instanceof Error ? `${error.message} ${error.cause instanceof Error ? error.cause.message : ""}` : ""}`,
        ),
    });
    try {
      await database.db.execute(sql`alter table workers rename to workers_elsewhere`);
      try {
        await waitFor(async () => lines.some((line) => line.includes("could not record its heartbeat")), {
          timeoutMs: 5_000,
          what: "a failed beat",
        });
      } finally {
        await database.db.execute(sql`alter table workers_elsewhere rename to workers`);
      }
      expect(lines.find((line) => line.includes("could not record its heartbeat"))).toMatch(
        /relation "workers" does not exist/,
      );
      const before = (await workerRow(id))!.heartbeatAt;
      await waitFor(async () => ((await workerRow(id))?.heartbeatAt ?? before) > before, {
        timeoutMs: 5_000,
        what: "beats to resume",
      });
      expect(await readWorkerLiveness(database.db, STALE)).toMatchObject({ alive: 1 });
    } finally {
      await worker.stop();
    }
  });

  it("a worker process killed with SIGKILL stops counting as alive after the staleness window", {
    timeout: 60_000,
  }, async () => {
    const worker = startWorkerProcess({ DATABASE_URL: database.url, SESSION_STALE_SECONDS: String(STALE) });
    processes.push(worker);
    await waitFor(async () => worker.output.join("").includes("[worker] ready"), {
      timeoutMs: 30_000,
      what: "the worker",
    }).catch((error) => {
      throw new Error(`${error.message}\nworker output:\n${worker.output.join("")}`);
    });
    const [row] = await database.db.select().from(workers);
    expect(row!.id).toBe(`${os.hostname()}:${worker.child.pid}`);
    expect(await readWorkerLiveness(database.db, STALE)).toMatchObject({ alive: 1 });

    await worker.stop("SIGKILL");
    // Killed outright, it could not say so: it is alive until its heartbeat goes stale.
    const killedAt = Date.now();
    const gone = await waitFor(
      async () => {
        const liveness = await readWorkerLiveness(database.db, STALE);
        return liveness.alive === 0 ? liveness : null;
      },
      { timeoutMs: (STALE + 3) * 1000, what: "the killed worker to count as gone" },
    );
    expect(Date.now() - killedAt).toBeLessThan((STALE + 3) * 1000);
    expect((await workerRow(row!.id))!.stoppedAt).toBeNull();
    expect(gone.lastSeenAt).not.toBeNull();

    // SIGTERM: the process says it stopped on its way out.
    const polite = startWorkerProcess({ DATABASE_URL: database.url, SESSION_STALE_SECONDS: String(STALE) });
    processes.push(polite);
    await waitFor(async () => polite.output.join("").includes("[worker] ready"), {
      timeoutMs: 30_000,
      what: "the second worker",
    });
    expect(await readWorkerLiveness(database.db, STALE)).toMatchObject({ alive: 1 });
    expect(await polite.stop("SIGTERM")).toBe(0);
    const politeRow = (
      await database.db
        .select()
        .from(workers)
        .where(sql`id like ${`%:${polite.child.pid}`}`)
    )[0];
    expect(politeRow!.stoppedAt).toBeInstanceOf(Date);
    expect(await readWorkerLiveness(database.db, STALE)).toMatchObject({ alive: 0 });
  });

  it("a worker starting forgets workers gone for more than a day", async () => {
    await registerWorker(database.db, "old-host:1");
    await registerWorker(database.db, "recent-host:2");
    await backdateWorker("old-host:1", 25 * 3600);
    await backdateWorker("recent-host:2", 3600);
    await registerWorker(database.db, "new-host:3");
    const ids = (await database.db.select({ id: workers.id }).from(workers)).map((row) => row.id).sort();
    expect(ids).toEqual(["new-host:3", "recent-host:2"]);
  });
});

describe("health with workers and backlog", () => {
  it("is degraded when a task waits and no worker is alive, ok once one is, and ok with no work", async () => {
    expect(await checkHealth({ db: database.db, jobs, staleSeconds: STALE })).toEqual({
      ok: true,
      health: {
        status: "ok",
        database: "ok",
        workers: { alive: 0, lastSeenAt: null },
        backlog: { agents: 0, oldestWaitingSince: null },
      },
    });

    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const first = await createTask(database.db, { agentId: lead.id, source: "user", title: "Research prices" });
    await createTask(database.db, { agentId: subordinates[0]!.id, source: "lead", title: "Find sources" });
    await createTask(database.db, { agentId: lead.id, source: "user", title: "And another thing" });
    const degraded = await checkHealth({ db: database.db, jobs, staleSeconds: STALE });
    expect(degraded).toEqual({
      ok: true,
      health: {
        status: "degraded",
        database: "ok",
        workers: { alive: 0, lastSeenAt: null },
        backlog: { agents: 2, oldestWaitingSince: first.createdAt.toISOString() },
      },
    });

    await registerWorker(database.db, "health-host:1");
    const live = await checkHealth({ db: database.db, jobs, staleSeconds: STALE });
    expect(live.ok && live.health).toMatchObject({ status: "ok", workers: { alive: 1 }, backlog: { agents: 2 } });
    expect(live.ok && live.health.workers.lastSeenAt).toMatch(/^\d{4}-\d\d-\d\dT/);

    // Its heartbeat goes stale: degraded again.
    await backdateWorker("health-host:1", STALE + 1);
    expect(await checkBackgroundWork(database.db, { jobs, staleSeconds: STALE })).toMatchObject({
      status: "degraded",
      workers: { alive: 0 },
    });
  });

  it("counts an agent with only queued input or only a wake-up as waiting", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    await database.db.insert(agentInputs).values({ agentId: lead.id, content: "Subordinate Scout reports: done" });
    await database.db.update(agents).set({ wakeRequestedAt: sql`now()` }).where(eq(agents.id, subordinates[0]!.id));
    expect(await checkBackgroundWork(database.db, { jobs, staleSeconds: STALE })).toMatchObject({
      status: "degraded",
      backlog: { agents: 2 },
    });
    expect((await listAgentsAwaitingWork(database.db)).map((agent) => agent.agentId).sort()).toEqual(
      [lead.id, subordinates[0]!.id].sort(),
    );
  });

  it("does not count the work of a paused team: it waits for the person, not for a worker", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await createTask(database.db, { agentId: lead.id, source: "user", title: "Later" });
    await database.db.update(teams).set({ status: "paused" }).where(eq(teams.id, team.id));
    expect(await checkBackgroundWork(database.db, { jobs, staleSeconds: STALE })).toMatchObject({
      status: "ok",
      backlog: { agents: 0 },
    });
  });
});

describe("the no-worker alert", () => {
  it("is raised once per episode however many checks run, and again for a later episode", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const task = await createTask(database.db, { agentId: lead.id, source: "user", title: "Research prices" });

    // Waiting for less than the threshold: degraded, but no alert yet.
    await checkBackgroundWork(database.db, { jobs, staleSeconds: STALE });
    expect(await noWorkerAlerts()).toEqual([]);

    await backdateTask(task.id, NO_WORKER_ALERT_AFTER_SECONDS + 5);
    await Promise.all(Array.from({ length: 6 }, () => checkBackgroundWork(database.db, { jobs, staleSeconds: STALE })));
    for (let i = 0; i < 4; i++) await checkHealth({ db: database.db, jobs, staleSeconds: STALE });
    const first = await noWorkerAlerts();
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({
      teamId: team.id,
      agentId: lead.id,
      type: "alert",
      title: "Background work is waiting: no worker is running",
    });
    expect(first[0]!.content).toContain("`npm run worker`");

    // A worker runs (and would have done the work), then goes away; the work waits again.
    await registerWorker(database.db, "episode-host:1");
    await checkBackgroundWork(database.db, { jobs, staleSeconds: STALE });
    await markWorkerStopped(database.db, "episode-host:1");
    // Gone only a moment: the work has not yet waited the threshold without a worker.
    await checkBackgroundWork(database.db, { jobs, staleSeconds: STALE });
    expect(await noWorkerAlerts()).toHaveLength(1);

    await backdateWorker("episode-host:1", NO_WORKER_ALERT_AFTER_SECONDS + 5);
    for (let i = 0; i < 5; i++) await checkBackgroundWork(database.db, { jobs, staleSeconds: STALE });
    const second = await noWorkerAlerts();
    expect(second).toHaveLength(2);
    expect(second[1]!.dedupeKey).not.toBe(second[0]!.dedupeKey);
    expect(second[1]!.content).toContain("The last worker was seen at");
  });

  it("goes to each waiting team's lead, and not while a worker is alive", async () => {
    const a = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const b = await createTeamFixture(database.db);
    await registerWorker(database.db, "alive-host:1");
    for (const agentId of [a.subordinates[0]!.id, b.lead.id]) {
      const task = await createTask(database.db, { agentId, source: "user", title: "Work" });
      await backdateTask(task.id, NO_WORKER_ALERT_AFTER_SECONDS * 2);
    }
    await checkBackgroundWork(database.db, { jobs, staleSeconds: STALE });
    expect(await noWorkerAlerts()).toEqual([]);

    await markWorkerStopped(database.db, "alive-host:1");
    await backdateWorker("alive-host:1", NO_WORKER_ALERT_AFTER_SECONDS + 5);
    await checkBackgroundWork(database.db, { jobs, staleSeconds: STALE });
    const alerts = await noWorkerAlerts();
    expect(alerts.map((item) => [item.teamId, item.agentId]).sort()).toEqual(
      [
        [a.team.id, a.lead.id],
        [b.team.id, b.lead.id],
      ].sort(),
    );
  });
});
