import { eq } from "drizzle-orm";
import { assignTask, queueInput } from "../../src/lib/domain/tasks";
import { createTeamWithLead } from "../../src/lib/db/queries/teams";
import { workSessions } from "../../src/lib/db/schema";
import type { JobQueue } from "../../src/lib/jobs/job-queue";
import { waitFor } from "../../tests/support/worker-process";
import { promptIncludes, roundsSinceTask, type ModelServer } from "../lib/model-server";
import type { BenchDatabase } from "../lib/postgres";
import { formatMs, now, summarize } from "../lib/stats";
import type { FigureResult } from "../lib/table";
import type { Workers } from "../lib/workers";

const ROUNDS = 10;

/**
 * A message posted into an agent's log while its session runs (the way a subordinate's
 * report arrives: queueInput, committed) must be in the very next model call.
 * The model server posts it while it holds a step's answer, so the post has committed
 * before the session prepares its next call; latency runs from that commit to the
 * next request's arrival.
 */
export async function injectFigure(
  database: BenchDatabase,
  jobs: JobQueue,
  model: ModelServer,
  workers: Workers,
  sessions = 5,
): Promise<FigureResult> {
  await workers.idle();
  const latencies: number[] = [];
  let posted = 0;
  let present = 0;
  for (let s = 0; s < sessions; s++) {
    const { lead } = await createTeamWithLead(database.db, {
      name: `Inject ${s}`,
      mission: "Listen while working.",
      leadName: `Listener ${s}`,
    });
    let pending: { text: string; postedAt: number } | undefined;
    model.script(lead.name, async ({ request, arrivedAt }) => {
      if (pending) {
        if (promptIncludes(request, pending.text)) {
          present += 1;
          latencies.push(arrivedAt - pending.postedAt);
        }
        pending = undefined;
      }
      const rounds = roundsSinceTask(request);
      if (rounds >= ROUNDS - 1) return { text: "Done, with every note read." };
      if (rounds >= 1) {
        const text = `Subordinate Scout reports: note ${s}.${rounds}, the launch moved.`;
        await queueInput(database.db, jobs, lead.id, text);
        pending = { text, postedAt: now() };
        posted += 1;
      }
      return { toolCalls: [{ name: "tavilySearch", arguments: { query: `round ${rounds}` } }] };
    });
    await assignTask(database.db, jobs, { agentId: lead.id, source: "user", title: "Work while listening" });
    await waitFor(
      async () => {
        const rows = await database.db.select().from(workSessions).where(eq(workSessions.agentId, lead.id));
        return rows.length > 0 && rows.every((row) => row.status !== "running") && pending === undefined;
      },
      { timeoutMs: 60_000, what: `the session of ${lead.name} to end` },
    );
  }
  const summary = summarize(latencies);
  const share = posted ? present / posted : 0;
  return {
    rows: [
      {
        figure: "inject",
        measure: "posted mid-session → in the next model call",
        p50: formatMs(summary.p50),
        p95: formatMs(summary.p95),
        ratio: `${present}/${posted} present (${(share * 100).toFixed(0)}%)`,
        goal: "100%",
        pass: posted > 0 && present === posted,
      },
    ],
    notes: [
      `inject: ${posted} messages posted during ${sessions} ${ROUNDS}-round sessions on a worker process; latency = commit of the post → arrival of the next model request.`,
    ],
  };
}
