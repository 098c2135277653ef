// kill -9 a real worker at random points of work sessions, 50 times, then check that
// nothing was lost or done twice. Prints its figures.
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assignTask } from "@/lib/agents/tasks";
import { JobQueue } from "@/lib/jobs/job-queue";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { teamPlay } from "../support/team-play";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../support/worker-process";

const KILLS = 50;
let database: TestDatabase;
let jobs: JobQueue;
let openai: FakeOpenAI;
let tavily: FakeTavily;
const live: WorkerProcess[] = [];

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  database = await createTestDatabase({ max: 5 });
  jobs = await JobQueue.start(database.url, "web", { quiet: true });
  // Latency on both sides so kills land in model calls, in tools and between steps.
  openai = await startFakeOpenAI(async (request) => {
    await pause(10 + Math.random() * 60);
    return teamPlay(request);
  });
  tavily = await startFakeTavily(async ({ query }) => {
    await pause(40 + Math.random() * 120);
    return { results: [{ title: `About ${query}`, url: "https://example.com/solar", content: "Prices fell." }] };
  });
});
afterAll(async () => {
  await Promise.all(live.splice(0).map((worker) => worker.stop("SIGKILL")));
  await jobs?.stop({ graceful: false, timeoutMs: 1000 });
  await openai?.close();
  await tavily?.close();
  await database?.drop();
});

function startWorker() {
  const worker = startWorkerProcess({
    DATABASE_URL: database.url,
    OPENAI_BASE_URL: openai.url,
    LLM_MODEL: "fake-model",
    TAVILY_API_KEY: "tvly-test",
    TAVILY_BASE_URL: tavily.url,
    WORKER_CONCURRENCY: "4",
    // Dead workers are noticed in seconds here, so 50 kills fit in a test run.
    SESSION_STALE_SECONDS: "2",
  });
  live.push(worker);
  return worker;
}

async function count(query: ReturnType<typeof sql>): Promise<number> {
  const [row] = await database.db.execute<{ n: string }>(query);
  return Number(row?.n ?? 0);
}

describe("crash safety", () => {
  it(`survives ${KILLS} kill -9s: every task ends, no effect lost or doubled, every call has one result`, { timeout: 420_000 }, async () => {
    const teams = await Promise.all([0, 1, 2].map(() => createTeamFixture(database.db, { subordinates: ["Scout"] })));
    let assigned = 0;
    const assign = async () => {
      const { lead } = teams[assigned % teams.length]!;
      assigned += 1;
      await assignTask(database.db, jobs, { agentId: lead.id, source: "user", title: `Research solar prices #${assigned}` });
    };
    for (let i = 0; i < 6; i++) await assign();

    // Three workers, so one is always ready to be killed while its replacement starts.
    startWorker();
    startWorker();
    startWorker();
    let kills = 0;
    while (kills < KILLS) {
      await pause(100 + Math.random() * 400);
      const ready = live.filter((worker) => worker.output.join("").includes("[worker] ready"));
      if (ready.length === 0) continue;
      const victim = ready[Math.floor(Math.random() * ready.length)]!;
      live.splice(live.indexOf(victim), 1);
      await victim.stop("SIGKILL");
      kills += 1;
      startWorker();
      if (kills % 5 === 0) await assign();
    }

    // Let the survivors finish everything.
    const quiet = sql`select count(*) as n from tasks where status in ('pending', 'in_progress', 'waiting_input')`;
    await waitFor(async () => (await count(quiet)) === 0 && (await count(sql`select count(*) as n from work_sessions where status = 'running'`)) === 0, {
      timeoutMs: 150_000,
      what: "every task to reach a final state",
    }).catch(async (error) => {
      const open = await database.db.execute(sql`select title, status, agent_id from tasks where status not in ('completed','failed','cancelled')`);
      throw new Error(`${error.message}: ${JSON.stringify(open)}\n${live.map((w) => w.output.join("").slice(-2000)).join("\n---\n")}`);
    });

    const figures = {
      kills,
      tasks: await count(sql`select count(*) as n from tasks`),
      completed: await count(sql`select count(*) as n from tasks where status = 'completed'`),
      sessions: await count(sql`select count(*) as n from work_sessions`),
      interruptedSessions: await count(sql`select count(*) as n from work_sessions where status = 'interrupted'`),
      interruptedCalls: await count(sql`select count(*) as n from messages where role = 'tool' and content like '(interrupted%'`),
      // Losses: a call without its result; a task left open.
      callsWithoutResult: await count(sql`
        select count(*) as n from messages m, jsonb_array_elements(m.tool_calls) call
         where not exists (select 1 from messages r where r.conversation_id = m.conversation_id and r.tool_call_id = call->>'toolCallId')`),
      openTasks: await count(quiet),
      // Duplicates: an effect without the result that records it, or the other way round.
      delegations: await count(sql`select count(*) as n from tasks where source = 'lead'`),
      delegationResults: await count(sql`select count(*) as n from messages where role = 'tool' and content like '%"delegated":true%'`),
      knowledgeItems: await count(sql`select count(*) as n from knowledge_items`),
      knowledgeResults: await count(sql`select count(*) as n from messages where role = 'tool' and content like '%"saved":true%'`),
      inboxItems: await count(sql`select count(*) as n from inbox_items`),
      inboxResults: await count(sql`select count(*) as n from messages where role = 'tool' and content like '%"sent":true,"inboxItemId"%'`),
      briefingsInChat: await count(sql`select count(*) as n from messages m join conversations c on c.id = m.conversation_id where c.mode = 'foreground' and m.role = 'assistant'`),
      // In the lead's log, or still in its queue.
      reports: await count(sql`select (select count(*) from messages where role = 'user' and content like 'Subordinate Scout reports %')
                                    + (select count(*) from agent_inputs where content like 'Subordinate Scout reports %') as n`),
      reportResults: await count(sql`select count(*) as n from messages where role = 'tool' and content = 'Report sent to your lead.'`),
      subtasksCompleted: await count(sql`select count(*) as n from tasks where source = 'lead' and status = 'completed'`),
    };
    const losses = figures.callsWithoutResult + figures.openTasks;
    const duplicates =
      Math.abs(figures.delegations - figures.delegationResults) +
      Math.abs(figures.knowledgeItems - figures.knowledgeResults) +
      Math.abs(figures.inboxItems - figures.inboxResults) +
      Math.abs(figures.inboxItems - figures.briefingsInChat);
    console.log(`[crash safety] kills=${kills} sessions=${figures.sessions} losses=${losses} duplicates=${duplicates}`, figures);

    expect(kills).toBe(KILLS);
    expect(figures.interruptedSessions).toBeGreaterThan(0);
    expect(losses).toBe(0);
    expect(duplicates).toBe(0);
    expect(figures.tasks).toBe(assigned + figures.delegations);
    // Every report corresponds to a completed subordinate task (reported once, by the tool or on the task's end).
    expect(figures.reports).toBeGreaterThanOrEqual(figures.reportResults);
    expect(figures.reports).toBe(figures.subtasksCompleted);
  });
});
