// Four worker processes with a small connection pool each (DATABASE_POOL_SIZE=4) on one
// database, as several machines would run against one Postgres: under load, never two
// sessions of one agent at once, and no wake-up lost. Prints its figures.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { assignTask } from "@/lib/domain/tasks";
import { createSubordinate } from "@/lib/db/queries/agents";
import { createTeamWithLead } from "@/lib/db/queries/teams";
import { systemText, teamPlay } from "../support/team-play";
import { pause, useWorkerFleet } from "../support/worker-fleet";
import { waitFor } from "../support/worker-process";

const WORKERS = 4;
const POOL_SIZE = 4;
const TEAMS = 12;
const TASKS_PER_LEAD = 3;

// Model calls in flight per agent, seen by the model server: two at once would be two sessions.
const inFlight = new Map<string, number>();
let mostInFlight = 0;
let trackedCalls = 0;
const fleet = useWorkerFleet(teamPlay, {
  workerEnv: { DATABASE_POOL_SIZE: String(POOL_SIZE), SESSION_STALE_SECONDS: "15" },
  onModelRequest: (request) => {
    const agent = /^You are (.+?), (the lead|a member)/.exec(systemText(request))?.[1];
    if (!agent) return () => {};
    trackedCalls += 1;
    const now = (inFlight.get(agent) ?? 0) + 1;
    inFlight.set(agent, now);
    mostInFlight = Math.max(mostInFlight, now);
    return () => inFlight.set(agent, inFlight.get(agent)! - 1);
  },
});
const count = (query: ReturnType<typeof sql>) => fleet.count(query);

describe("several workers on one database", () => {
  it(`${WORKERS} workers with DATABASE_POOL_SIZE=${POOL_SIZE}: one session per agent, every wake-up served by the engine itself`, {
    timeout: 120_000,
  }, async () => {
    const { db } = fleet.database;
    const leads = [];
    for (let i = 0; i < TEAMS; i++) {
      const { team, lead } = await createTeamWithLead(db, {
        name: `Fleet ${i}`,
        mission: "Track solar prices.",
        leadName: `Lead ${i}`,
      });
      await createSubordinate(db, team.id, { name: `Scout ${i}`, instructions: "You research." });
      leads.push(lead);
    }
    for (let i = 0; i < WORKERS; i++) fleet.startWorker();
    await waitFor(async () => fleet.live.every((worker) => worker.output.join("").includes("[worker] ready")), {
      timeoutMs: 60_000,
      what: "the workers to start",
    });
    const ready = Date.now();

    // Connections to this database, sampled while the work runs.
    let mostConnections = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        mostConnections = Math.max(
          mostConnections,
          await count(sql`select count(*) as n from pg_stat_activity where datname = current_database()`),
        );
        await pause(100);
      }
    })();

    // Tasks land at random moments, so wake-ups race with sessions ending; each lead task
    // delegates to its scout, whose report wakes the lead again (queued input).
    const assignments = [];
    for (let round = 0; round < TASKS_PER_LEAD; round++) {
      for (const lead of leads) {
        await pause(Math.random() * 150);
        assignments.push(
          assignTask(db, fleet.jobs, { agentId: lead.id, source: "user", title: `Solar prices, round ${round + 1}` }),
        );
      }
    }
    await Promise.all(assignments);

    const settled = sql`select (select count(*) from tasks where status not in ('completed', 'failed', 'cancelled'))
                             + (select count(*) from agent_inputs)
                             + (select count(*) from work_sessions where status = 'running')
                             + (select count(*) from agents where wake_requested_at is not null) as n`;
    await waitFor(async () => (await count(settled)) === 0, { timeoutMs: 90_000, what: "all work to end" }).catch(
      async (error: Error) => {
        const open = await db.execute(
          sql`select title, status from tasks where status not in ('completed', 'failed', 'cancelled')`,
        );
        throw new Error(
          `${error.message}: ${JSON.stringify(open)}\n${fleet.live.map((worker) => worker.output.join("").slice(-1500)).join("\n---\n")}`,
        );
      },
    );
    const seconds = (Date.now() - ready) / 1000;
    sampling = false;
    await sampler;

    const figures = {
      seconds: Number(seconds.toFixed(1)),
      tasks: await count(sql`select count(*) as n from tasks`),
      completed: await count(sql`select count(*) as n from tasks where status = 'completed'`),
      sessions: await count(sql`select count(*) as n from work_sessions`),
      workersUsed: await count(sql`select count(distinct worker) as n from work_sessions`),
      interrupted: await count(sql`select count(*) as n from work_sessions where status <> 'completed'`),
      briefings: await count(sql`select count(*) as n from inbox_items where type = 'briefing'`),
      trackedCalls,
      mostInFlightPerAgent: mostInFlight,
      mostConnections,
    };
    console.log(`[many workers] ${WORKERS} workers, pool ${POOL_SIZE} each:`, figures);

    // Every lead task delegated one scout task, and both completed: no wake-up was lost
    // (a lead's task completes only once its scout's report woke it).
    expect(figures.tasks).toBe(TEAMS * TASKS_PER_LEAD * 2);
    expect(figures.completed).toBe(figures.tasks);
    expect(figures.briefings).toBe(TEAMS * TASKS_PER_LEAD);
    expect(figures.interrupted).toBe(0);
    expect(figures.mostInFlightPerAgent).toBe(1);
    expect(figures.workersUsed).toBeGreaterThan(1);
    // The workers' backstops (the backlog nudged every 30 s, pg-boss polling every 30 s) never
    // ran during the work: every wake-up was delivered by the engine itself, not recovered.
    expect(seconds).toBeLessThan(30);
    // Each worker: its pools (DATABASE_POOL_SIZE) + 3 dedicated connections; this test's own: 5 + 3 + 1.
    expect(figures.mostConnections).toBeLessThanOrEqual(WORKERS * (POOL_SIZE + 3) + 9);
  });
});
