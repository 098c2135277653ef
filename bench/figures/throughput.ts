import { inArray } from "drizzle-orm";
import { assignTask } from "../../src/lib/domain/tasks";
import { createTeamWithLead } from "../../src/lib/db/queries/teams";
import { tasks, workSessions, type WorkSession } from "../../src/lib/db/schema";
import type { JobQueue } from "../../src/lib/jobs/job-queue";
import { waitFor } from "../../tests/support/worker-process";
import { roundsSinceTask, type ModelServer } from "../lib/model-server";
import type { BenchDatabase } from "../lib/postgres";
import { formatCount, groupBy, now } from "../lib/stats";
import type { FigureResult } from "../lib/table";
import type { Workers } from "../lib/workers";

const AGENTS = 100;
const TASKS_PER_AGENT = 3;
const STEPS = 5;

/** The most sessions of one agent that ever ran at the same moment, and of all agents together. */
function peakConcurrency(sessions: readonly WorkSession[]): { perAgent: number; overall: number } {
  const peak = (rows: readonly WorkSession[]) => {
    const events = rows.flatMap((row) => [
      { at: row.startedAt.getTime(), delta: 1 },
      { at: row.endedAt?.getTime() ?? Number.POSITIVE_INFINITY, delta: -1 },
    ]);
    // An end and a start at the same instant do not overlap.
    events.sort((a, b) => a.at - b.at || a.delta - b.delta);
    let current = 0;
    let max = 0;
    for (const event of events) {
      current += event.delta;
      max = Math.max(max, current);
    }
    return max;
  };
  const byAgent = groupBy(sessions, (row) => row.agentId);
  return { perAgent: Math.max(0, ...[...byAgent.values()].map(peak)), overall: peak(sessions) };
}

/**
 * Two worker processes, 100 agents with 3 tasks each, every task a 5-step tool loop
 * (plus knowledge extraction and the briefing decision), the model answering at
 * once. Each agent gets its next task the moment the previous one completes, so the
 * workers always have work queued.
 */
export async function throughputFigure(
  database: BenchDatabase,
  jobs: JobQueue,
  model: ModelServer,
  workers: Workers,
): Promise<FigureResult> {
  while (workers.running.length < 2) await workers.start(1);
  await workers.idle();
  const agents: { id: string; name: string }[] = [];
  for (let i = 0; i < AGENTS; i++) {
    const { lead } = await createTeamWithLead(database.db, {
      name: `Load ${i}`,
      mission: "Keep busy.",
      leadName: `Loader ${i}`,
    });
    agents.push({ id: lead.id, name: lead.name });
    model.script(lead.name, ({ request }) =>
      roundsSinceTask(request) < STEPS - 1
        ? { toolCalls: [{ name: "tavilySearch", arguments: { query: "load" } }] }
        : { text: "Task done." },
    );
  }
  const ids = new Set(agents.map((agent) => agent.id));
  const assigned = new Map(agents.map((agent) => [agent.id, 0]));
  let ended = 0;
  const assignNext = async (agentId: string) => {
    const count = assigned.get(agentId)!;
    if (count >= TASKS_PER_AGENT) return;
    assigned.set(agentId, count + 1);
    await assignTask(database.db, jobs, { agentId, source: "user", title: `Load task ${count + 1}` });
  };
  const pending: Promise<void>[] = [];
  // The next task goes out when the agent's session has ended, so each task is a session of its own.
  const listener = await database.sql.listen("cadre_events", (payload) => {
    const event = JSON.parse(payload) as { table: string; agentId?: string; status?: string };
    if (event.table !== "work_sessions" || !event.agentId || !ids.has(event.agentId) || event.status === "running")
      return;
    ended += 1;
    pending.push(assignNext(event.agentId));
  });

  const requestsBefore = model.fake.requests.length;
  const started = now();
  try {
    await Promise.all(agents.map((agent) => assignNext(agent.id)));
    await waitFor(async () => ended >= AGENTS * TASKS_PER_AGENT, {
      timeoutMs: 300_000,
      what: "every throughput session to end",
    });
    await Promise.all(pending);
  } finally {
    await listener.unlisten();
  }
  const seconds = (now() - started) / 1000;

  const sessions = await database.db
    .select()
    .from(workSessions)
    .where(inArray(workSessions.agentId, [...ids]));
  const taskRows = await database.db
    .select({ status: tasks.status })
    .from(tasks)
    .where(inArray(tasks.agentId, [...ids]));
  const completed = taskRows.filter((row) => row.status === "completed").length;
  const peak = peakConcurrency(sessions);
  return {
    rows: [
      {
        figure: "throughput",
        measure: `2 workers, ${AGENTS} agents × ${TASKS_PER_AGENT} tasks, ${STEPS}-step`,
        p50: "",
        p95: "",
        ratio: `${(sessions.length / seconds).toFixed(1)} sessions/s; max ${peak.perAgent} per agent`,
        goal: "max concurrent sessions of one agent = 1",
        pass: peak.perAgent === 1 && completed === AGENTS * TASKS_PER_AGENT,
      },
    ],
    notes: [
      `throughput: ${sessions.length} sessions, ${completed}/${taskRows.length} tasks completed in ${seconds.toFixed(1)} s, ${formatCount(model.fake.requests.length - requestsBefore)} model calls; up to ${peak.overall} sessions at once across the two workers (8 each). Each agent's next task is assigned when its session ends.`,
    ],
  };
}
