import { inArray } from "drizzle-orm";
import { assignTask } from "../../src/lib/domain/tasks";
import { createTeamWithLead } from "../../src/lib/db/queries/teams";
import { tasks, workSessions } from "../../src/lib/db/schema";
import type { JobQueue } from "../../src/lib/jobs/job-queue";
import { waitFor } from "../../tests/support/worker-process";
import { roundsSinceTask, type ModelServer } from "../lib/model-server";
import type { BenchDatabase } from "../lib/postgres";
import { formatMs, groupBy, summarize } from "../lib/stats";
import type { FigureResult } from "../lib/table";
import type { Workers } from "../lib/workers";

const AGENTS_PER_ROUND = 10;

/**
 * A worker killed with kill -9 in the middle of its sessions: how long until another
 * worker has taken each of them up again (a new session row for the agent). Each
 * round holds every agent's first model call, kills the worker that runs most of
 * the sessions, lets the survivor's calls go on, and starts a replacement worker
 * for the next round.
 */
export async function recoveryFigure(
  database: BenchDatabase,
  jobs: JobQueue,
  model: ModelServer,
  workers: Workers,
  rounds = 3,
): Promise<FigureResult> {
  const latencies: number[] = [];
  for (let round = 0; round < rounds; round++) {
    while (workers.running.length < 2) await workers.start(1);
    await workers.idle();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held = new Set<string>();
    const agents: string[] = [];
    for (let i = 0; i < AGENTS_PER_ROUND; i++) {
      const { lead } = await createTeamWithLead(database.db, {
        name: `Phoenix ${round}.${i}`,
        mission: "Survive.",
        leadName: `Phoenix ${round}.${i}`,
      });
      agents.push(lead.id);
      model.script(lead.name, async ({ request }) => {
        if (!held.has(lead.name)) {
          held.add(lead.name);
          await gate; // the model is "thinking" when the worker dies
        }
        return roundsSinceTask(request) < 1
          ? { toolCalls: [{ name: "tavilySearch", arguments: { query: "again" } }] }
          : { text: "Done after the crash." };
      });
      await assignTask(database.db, jobs, { agentId: lead.id, source: "user", title: "Survive a crash" });
    }
    await waitFor(async () => held.size === AGENTS_PER_ROUND, {
      timeoutMs: 60_000,
      what: "every session's first model call",
    });
    const first = await database.db.select().from(workSessions).where(inArray(workSessions.agentId, agents));
    const perWorker = groupBy(first, (session) => session.worker);
    const [victimName, victimSessions] = [...perWorker].sort((a, b) => b[1].length - a[1].length)[0]!;
    const victim = workers.byName(victimName)!;
    const killedAt = Date.now();
    await workers.kill(victim);
    release();

    const orphaned = new Map(victimSessions.map((session) => [session.agentId, session.id]));
    const retaken = await waitFor(
      async () => {
        const rows = await database.db
          .select()
          .from(workSessions)
          .where(inArray(workSessions.agentId, [...orphaned.keys()]));
        const next = [...orphaned].map(
          ([agentId, oldId]) =>
            rows
              .filter((row) => row.agentId === agentId && row.id !== oldId)
              .sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime())[0],
        );
        return next.every(Boolean) ? next : null;
      },
      { timeoutMs: 90_000, what: "the killed worker's sessions to be taken up again" },
    );
    for (const session of retaken) latencies.push(session!.startedAt.getTime() - killedAt);
    await waitFor(
      async () => {
        const rows = await database.db
          .select({ status: tasks.status })
          .from(tasks)
          .where(inArray(tasks.agentId, agents));
        return rows.every((row) => row.status === "completed");
      },
      { timeoutMs: 90_000, what: "every recovered task to complete" },
    );
  }
  const summary = summarize(latencies);
  return {
    rows: [
      {
        figure: "recovery",
        measure: "worker kill -9 → session taken up again",
        p50: formatMs(summary.p50),
        p95: formatMs(summary.p95),
        ratio: "",
        goal: "p95 ≤ 10 s",
        pass: summary.p95 <= 10_000,
      },
    ],
    notes: [
      `recovery: ${summary.n} sessions orphaned by ${rounds} kill -9s (${AGENTS_PER_ROUND} agents per round on two workers), max ${formatMs(summary.max)}. A session is presumed dead after two missed heartbeats (6 s) once its worker's liveness lock is free — Postgres frees it when the killed process's connection closes — or after 15 s without a heartbeat whatever the lock says; the survivor looks every 2 s.`,
    ],
  };
}
