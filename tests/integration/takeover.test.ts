// A taken-over session keeps its place (issue 34, item 5). A lead delegates to two
// subordinates (Scout, then Analyst), waits for both reports and briefs; a real worker is
// SIGKILLed at every step boundary of that work, once per run: while each of the lead's model
// calls is in flight (everything before it stored, its answer never arrives), and right after
// each answer, with the delegation's transaction held mid-write (its effect rolled back with
// the worker). Another worker takes the session over; the subordinates' model calls wait until
// it has, so no report tells the new session which task it is on. Afterwards, for every run:
//   - every delegated task names its parent task (the lead's), and each subordinate got one;
//   - the lead's task was completed only after both delegated tasks had ended, with its own
//     last words, not "Waiting for reports …";
//   - every briefing in the inbox names the task it answers; nothing briefed twice;
//   - every task ended, no call without its result.
// Prints one line: `[takeover] runs=… kills=… takeovers=…`.
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assignTask } from "@/lib/domain/tasks";
import { JobQueue } from "@/lib/jobs/job-queue";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { type FakeChatRequest, type FakeOpenAI, type FakeReply, startFakeOpenAI } from "../support/fake-openai";
import { delegationPlay, speakerOf } from "../support/delegation-play";
import { createTeamFixture } from "../support/fixtures";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../support/worker-process";

/** The lead's model calls a run kills at, 1-based; a run whose lead makes fewer calls is killed at none (and says so). */
const KILL_AT = (process.env.TAKEOVER_KILL_AT ?? "1,2,3,4,5,6,7").split(",").map(Number);
type KillMode = "in-call" | "mid-effect";

type Run = {
  teamName: string;
  killAt: number;
  mode: KillMode;
  leadCalls: number;
  subIds: Record<string, string>;
  /** Resolved when the kill point is reached: the test kills the worker, then calls `release`. */
  reached?: (release: () => void) => void;
  killed: boolean;
  /**
   * Set at the kill point: the subordinates' next model calls wait until the lead's session was
   * taken over, so the taken-over session starts with no report in (as seen from outside, where
   * a takeover takes seconds): it cannot find its task from a report, only from its own log.
   */
  subsHeld?: Promise<void>;
};

const runs = new Map<string, Run>();
let database: TestDatabase;
let jobs: JobQueue;
let openai: FakeOpenAI;
let locker: postgres.Sql;
const live: WorkerProcess[] = [];

async function handle(request: FakeChatRequest): Promise<FakeReply> {
  const who = speakerOf(request);
  const run = who ? runs.get(who.team) : undefined;
  if (!who || !run) return { text: "I do not know this team." };
  const { agent } = who;
  if (agent !== "Lead" && run.subsHeld) await run.subsHeld;
  if (agent !== "Lead" || request.response_format) return delegationPlay(run.subIds, agent, request);
  run.leadCalls += 1;
  if (run.leadCalls !== run.killAt || run.killed || !run.reached) return delegationPlay(run.subIds, agent, request);
  const reached = run.reached;
  run.reached = undefined;
  let freeSubs!: () => void;
  run.subsHeld = new Promise((resolve) => (freeSubs = resolve));
  if (run.mode === "in-call") {
    // Everything before this call is stored; its answer never arrives: the worker dies waiting.
    reached(freeSubs);
    return { fault: "hang" };
  }
  // The answer goes out while both subordinates' rows are locked: a delegation's transaction
  // (which wakes its subordinate) waits mid-write, and dies with the worker.
  const lock = await locker.reserve();
  await lock`begin`;
  await lock`select id from agents where id in ${locker([run.subIds.Scout!, run.subIds.Analyst!])} for update`;
  reached(() => {
    freeSubs();
    void lock`rollback`.finally(() => lock.release());
  });
  return delegationPlay(run.subIds, agent, request);
}

function startWorker(): WorkerProcess {
  const worker = startWorkerProcess({
    DATABASE_URL: database.url,
    OPENAI_BASE_URL: openai.url,
    LLM_MODEL: "fake-model",
    WORKER_CONCURRENCY: "4",
    SESSION_STALE_SECONDS: "2",
    MODEL_TIMEOUT_MS: "60000",
  });
  live.push(worker);
  return worker;
}

const ready = (worker: WorkerProcess) => worker.output.join("").includes("[worker] ready");

beforeAll(async () => {
  database = await createTestDatabase({ max: 5 });
  locker = postgres(database.url, { max: 4, onnotice: () => {} });
  jobs = await JobQueue.start(database.url, "web", { quiet: true });
  openai = await startFakeOpenAI(handle, { record: false });
  // Three: two stay ready to take the session over while a killed one's replacement starts.
  startWorker();
  startWorker();
  startWorker();
  await waitFor(async () => live.every(ready), { timeoutMs: 60_000, what: "the workers to be ready" });
}, 90_000);

afterAll(async () => {
  await Promise.all(live.splice(0).map((worker) => worker.stop("SIGKILL")));
  await jobs?.stop({ graceful: false, timeoutMs: 1000 });
  await openai?.close();
  await locker?.end({ timeout: 5 });
  await database?.drop();
});

/** SIGKILLs the worker running the lead's session; a replacement starts (the others take over meanwhile). */
async function killLeadsWorker(leadId: string): Promise<{ line: string; sessionId?: string }> {
  const [row] = await database.db.execute<{ id: string; worker: string }>(
    sql`select id, worker from work_sessions where agent_id = ${leadId} and status = 'running'`,
  );
  const victim = live.find((worker) => row?.worker.endsWith(`:${worker.child.pid}`));
  if (!victim) return { line: "no session running" };
  startWorker();
  live.splice(live.indexOf(victim), 1);
  await victim.stop("SIGKILL");
  return { line: `killed ${victim.child.pid}`, sessionId: row!.id };
}

async function rows<T>(query: ReturnType<typeof sql>): Promise<T[]> {
  return (await database.db.execute(query)) as unknown as T[];
}

describe("a taken-over session keeps its place", () => {
  it("keeps every delegation and briefing tied to its task when the worker dies at each step", {
    timeout: 600_000,
  }, async () => {
    const problems: string[] = [];
    let kills = 0;
    let takeovers = 0;
    for (const mode of ["in-call", "mid-effect"] as const) {
      for (const killAt of KILL_AT) {
        const teamName = `Takeover ${mode} ${killAt}`;
        const { team, lead, subordinates } = await createTeamFixture(database.db, {
          name: teamName,
          subordinates: ["Scout", "Analyst"],
        });
        const run: Run = {
          teamName,
          killAt,
          mode,
          leadCalls: 0,
          subIds: Object.fromEntries(subordinates.map((sub) => [sub.name, sub.id])),
          killed: false,
        };
        const kill = async (release: () => void): Promise<string> => {
          if (mode === "mid-effect") {
            // The answer is on its way: wait (a moment) for the step's write to block on the lock.
            await waitFor(
              async () =>
                (
                  await rows<{ n: number }>(
                    sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
                  )
                )[0]!.n > 0,
              { timeoutMs: 1500, what: "a write waiting" },
            ).catch(() => {});
          }
          const { line, sessionId } = await killLeadsWorker(lead.id);
          run.killed = true;
          // No session to kill (the lead's turn had ended): nothing to take over.
          if (!sessionId) {
            release();
            return line;
          }
          // The subordinates (and, mid-effect, their rows) are let go once another worker has taken the lead's session over.
          await waitFor(
            async () =>
              (
                await rows<{ n: number }>(
                  sql`select count(*)::int as n from work_sessions where agent_id = ${lead.id} and status = 'running' and id <> ${sessionId}`,
                )
              )[0]!.n > 0,
            { timeoutMs: 30_000, what: "the lead's session taken over" },
          ).catch(() => {});
          release();
          return line;
        };
        const killed = new Promise<string>((resolve) => {
          // A lead that never makes this many calls is not killed.
          const notReached = setTimeout(() => resolve("not reached"), 20_000);
          run.reached = (release) => {
            clearTimeout(notReached);
            void kill(release).then(resolve);
          };
        });
        runs.set(teamName, run);
        const task = await assignTask(database.db, jobs, {
          agentId: lead.id,
          source: "user",
          title: "Research prices",
        });

        const teamQuiet = sql`select
            (select count(*) from tasks t join agents a on a.id = t.agent_id where a.team_id = ${team.id}
               and t.status in ('pending', 'in_progress', 'waiting_input'))
          + (select count(*) from work_sessions s join agents a on a.id = s.agent_id where a.team_id = ${team.id} and s.status = 'running')
          + (select count(*) from agent_inputs i join agents a on a.id = i.agent_id where a.team_id = ${team.id})
          + (select count(*) from agents a where a.team_id = ${team.id} and a.wake_requested_at is not null) as n`;
        const outcome = await killed;
        if (outcome.startsWith("killed")) kills += 1;
        await waitFor(async () => (await rows<{ n: string }>(teamQuiet))[0]!.n === "0", {
          timeoutMs: 90_000,
          what: `${teamName} to be quiet`,
        }).catch((error: Error) => problems.push(`${teamName}: ${error.message}`));

        const tasks = await rows<{
          id: string;
          agent_id: string;
          parent_task_id: string | null;
          status: string;
          result: string | null;
          completed_at: Date | null;
        }>(sql`select t.id, t.agent_id, t.parent_task_id, t.status, t.result, t.completed_at
                 from tasks t join agents a on a.id = t.agent_id where a.team_id = ${team.id} order by t.created_at`);
        const leadTask = tasks.find((t) => t.id === task.id)!;
        const delegated = tasks.filter((t) => t.id !== task.id);
        const say = (line: string) => problems.push(`${teamName}: ${line}`);
        for (const sub of subordinates) {
          const own = delegated.filter((t) => t.agent_id === sub.id);
          if (own.length !== 1) say(`${sub.name} got ${own.length} tasks`);
        }
        for (const child of delegated) {
          if (child.parent_task_id !== task.id) say(`a delegated task has parent ${child.parent_task_id}`);
          if (child.status !== "completed") say(`a delegated task ended ${child.status}`);
          if (leadTask.completed_at && child.completed_at && leadTask.completed_at < child.completed_at)
            say(`the lead's task completed before a delegated task ended ("${leadTask.result}")`);
        }
        if (leadTask.status !== "completed") say(`the lead's task ended ${leadTask.status}`);
        if (/^Waiting/.test(leadTask.result ?? "")) say(`the lead's task completed with "${leadTask.result}"`);
        const briefings = await rows<{ task_id: string | null }>(
          sql`select task_id from inbox_items where team_id = ${team.id} and type = 'briefing'`,
        );
        if (briefings.length !== 1) say(`${briefings.length} briefings`);
        for (const briefing of briefings)
          if (briefing.task_id !== task.id) say(`a briefing names task ${briefing.task_id}`);
        const [open] = await rows<{ n: number }>(sql`
          select count(*)::int as n from messages m join conversations c on c.id = m.conversation_id
            join agents a on a.id = c.agent_id, jsonb_array_elements(m.tool_calls) call
           where a.team_id = ${team.id}
             and not exists (select 1 from messages r where r.conversation_id = m.conversation_id and r.tool_call_id = call->>'toolCallId')`);
        if (open!.n > 0) say(`${open!.n} calls without a result`);
        const [sessions] = await rows<{ n: number }>(
          sql`select count(*)::int as n from work_sessions where agent_id = ${lead.id} and status = 'interrupted'`,
        );
        takeovers += sessions!.n;
        console.log(`[takeover] ${teamName}: ${outcome}, ${run.leadCalls} lead calls`);
      }
    }
    console.log(
      `[takeover] runs=${KILL_AT.length * 2} kills=${kills} takeovers=${takeovers} problems=${problems.length}`,
    );
    expect(problems).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(8);
  });
});
