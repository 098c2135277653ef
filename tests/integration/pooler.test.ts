// Cadre behind a real PgBouncer in transaction mode (tests/support/pgbouncer.ts): real worker
// processes with DATABASE_URL through the pooler (?pgbouncer=true), first with no direct URL
// (everything by polling), then with DATABASE_DIRECT_URL for LISTEN and the liveness lock; a
// lead's task delegated to its scout, reported and completed, a worker killed mid-work. No named
// prepared statement may reach the pooler ("prepared statement … does not exist").
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSubordinate } from "@/lib/db/queries/agents";
import { createTeamWithLead } from "@/lib/db/queries/teams";
import { assignTask } from "@/lib/domain/tasks";
import { startPgBouncer, type PgBouncer } from "../support/pgbouncer";
import { systemText, teamPlay } from "../support/team-play";
import { pause, useWorkerFleet } from "../support/worker-fleet";
import { waitFor } from "../support/worker-process";

const workerEnv: Record<string, string> = { SESSION_STALE_SECONDS: "4" };
/** The "Stopper" team's model answers only once this is resolved: its session is mid-call when Stop comes. */
let releaseStalled: () => void = () => {};
const stalled = new Promise<void>((resolve) => {
  releaseStalled = resolve;
});
const fleet = useWorkerFleet(
  async (request) => {
    if (/^You are Stopper/.test(systemText(request))) await Promise.race([stalled, pause(60_000)]);
    return teamPlay(request);
  },
  { workerEnv },
);
let bouncer: PgBouncer;

beforeAll(async () => {
  bouncer = await startPgBouncer();
  workerEnv.DATABASE_URL = bouncer.url(fleet.database.name);
  // This process plays the web server for the live stream: read once per process (env()), so before anything reads it.
  process.env.DATABASE_URL = workerEnv.DATABASE_URL;
});
afterAll(async () => {
  releaseStalled();
  await Promise.all(fleet.live.map((worker) => worker.stop("SIGKILL")));
  await bouncer?.stop();
});

const settled = sql`select (select count(*) from tasks where status not in ('completed', 'failed', 'cancelled'))
                         + (select count(*) from agent_inputs)
                         + (select count(*) from work_sessions where status = 'running') as n`;

async function runTeams(label: string, options: { killOneMidWork: boolean }) {
  const { db } = fleet.database;
  const leads = [];
  for (let i = 0; i < 3; i++) {
    const { team, lead } = await createTeamWithLead(db, {
      name: `${label} ${i}`,
      mission: "Track solar prices.",
      leadName: `Lead ${label} ${i}`,
    });
    await createSubordinate(db, team.id, { name: `Scout ${label} ${i}`, instructions: "You research." });
    leads.push(lead);
  }
  for (const lead of leads)
    await assignTask(db, fleet.jobs, { agentId: lead.id, source: "user", title: `Solar prices (${label})` });
  if (options.killOneMidWork) {
    await waitFor(async () => (await fleet.count(sql`select count(*) as n from work_sessions`)) > 0, {
      timeoutMs: 30_000,
      what: "a session to start",
    });
    expect(await fleet.killOne()).toBe(true);
  }
  await waitFor(async () => (await fleet.count(settled)) === 0, {
    timeoutMs: 90_000,
    what: `${label}: all work to end`,
  }).catch((error: Error) => {
    throw new Error(
      `${error.message}\n${fleet.live.map((worker) => worker.output.join("").slice(-3000)).join("\n---\n")}`,
    );
  });
  const completed = await fleet.count(
    sql`select count(*) as n from tasks t join agents a on a.id = t.agent_id join teams on teams.id = a.team_id where teams.name like ${`${label} %`} and t.status = 'completed'`,
  );
  // Each lead's task and the scout's task it delegated.
  expect(completed).toBe(6);
}

function everyOutput(): string {
  return fleet.live.map((worker) => worker.output.join("")).join("\n");
}

describe("behind PgBouncer in transaction mode", () => {
  it("with no direct URL: the work is done by polling, no named statement, a killed worker's work taken up", {
    timeout: 180_000,
  }, async () => {
    fleet.startWorker();
    fleet.startWorker();
    await waitFor(async () => fleet.live.every((worker) => worker.output.join("").includes("[worker] ready")), {
      timeoutMs: 60_000,
      what: "the workers to start",
    });
    expect(everyOutput()).toMatch(/transaction pooler and DATABASE_DIRECT_URL is not set/);
    await runTeams("Pooled", { killOneMidWork: true });
    expect(everyOutput()).not.toMatch(/prepared statement|could not start|unhandled rejection/i);
    await Promise.all(fleet.live.splice(0).map((worker) => worker.stop()));
  });

  it("with no direct URL: Stop reaches a session mid-call through the heartbeat", { timeout: 60_000 }, async () => {
    const { db } = fleet.database;
    fleet.startWorker();
    await waitFor(async () => fleet.live.every((worker) => worker.output.join("").includes("[worker] ready")), {
      timeoutMs: 60_000,
      what: "the worker to start",
    });
    const { lead } = await createTeamWithLead(db, { name: "Stopper team", mission: "Wait.", leadName: "Stopper" });
    await assignTask(db, fleet.jobs, { agentId: lead.id, source: "user", title: "Wait for the model" });
    await waitFor(
      async () =>
        (await fleet.count(
          sql`select count(*) as n from work_sessions where agent_id = ${lead.id} and status = 'running'`,
        )) > 0,
      { timeoutMs: 30_000, what: "the session to run" },
    );
    await pause(500); // into its first model call, which does not answer
    const { stopAgent } = await import("@/lib/engine/stop");
    const stoppedAt = Date.now();
    await stopAgent(db, fleet.jobs, lead.id);
    await waitFor(
      async () =>
        (await fleet.count(
          sql`select count(*) as n from work_sessions where agent_id = ${lead.id} and status = 'stopped'`,
        )) > 0,
      { timeoutMs: 15_000, what: "the session to end stopped" },
    ).catch((error: Error) => {
      throw new Error(
        `${error.message}\n${fleet.live.map((worker) => worker.output.join("").slice(-2000)).join("\n---\n")}`,
      );
    });
    // Within a heartbeat or so (SESSION_STALE_SECONDS=4: one every 0.8 s), with no LISTEN to bring it.
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    expect(
      await fleet.count(sql`select count(*) as n from tasks where agent_id = ${lead.id} and status = 'cancelled'`),
    ).toBe(1);
    await Promise.all(fleet.live.splice(0).map((worker) => worker.stop()));
  });

  it("with no direct URL: an open page's live stream tells it to refetch every few seconds", {
    timeout: 30_000,
  }, async () => {
    const { liveEventStream, stopLiveEvents } = await import("@/lib/http/events");
    const abort = new AbortController();
    const reader = liveEventStream(new Request("http://localhost/api/events", { signal: abort.signal })).getReader();
    const decoder = new TextDecoder();
    let text = "";
    const started = Date.now();
    try {
      while ((text.match(/event: ready/g) ?? []).length < 3) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value);
      }
    } finally {
      abort.abort();
      await stopLiveEvents();
    }
    // The first `ready` at once, then one each 5 s: the page refetches on each, without reconnecting.
    expect((text.match(/event: ready/g) ?? []).length).toBe(3);
    const seconds = (Date.now() - started) / 1000;
    expect(seconds).toBeGreaterThan(8);
    expect(seconds).toBeLessThan(15);
  });

  it("with DATABASE_DIRECT_URL: LISTEN and the liveness lock go direct, the work is done", {
    timeout: 180_000,
  }, async () => {
    workerEnv.DATABASE_DIRECT_URL = fleet.database.url;
    fleet.startWorker();
    await waitFor(async () => fleet.live.every((worker) => worker.output.join("").includes("[worker] ready")), {
      timeoutMs: 60_000,
      what: "the worker to start",
    });
    expect(everyOutput()).not.toMatch(/transaction pooler/);
    // The worker's LISTENs (Stop requests, pg-boss's nudges) hold sessions of their own on the server directly.
    await waitFor(
      async () =>
        (await fleet.count(
          sql`select count(*) as n from pg_stat_activity where datname = current_database() and query ilike '%pg_listening_channels%'`,
        )) >= 2,
      { timeoutMs: 20_000, what: "the worker's two LISTEN connections" },
    );
    await runTeams("Direct", { killOneMidWork: false });
    expect(everyOutput()).not.toMatch(/prepared statement|could not start|unhandled rejection/i);
    await pause(10);
  });
});
