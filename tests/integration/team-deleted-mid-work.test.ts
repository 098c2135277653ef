// A team deleted while its agent works (issue 25, item 7), in a real worker process. The
// person's DELETE is expected, so the session it cuts short ends quietly: one line, no stack,
// no "unexpected error", no retry of the agent's wake-up job, no alert.
//
// The hard case is a session whose write fails while the deletion is still under way: the two
// lock the same rows from different ends (the session moving queued input into its log takes
// the input, then the log; the deletion's cascade the log, then the input), Postgres
// picks the session as the deadlock's victim, and the agent can still be read until the
// deletion commits. The test sets that up exactly, holding rows in transactions of its own;
// the deadlock Postgres counts is its control.
import { eq } from "drizzle-orm";
import type { TransactionSql } from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { assignTask, queueInput } from "@/lib/domain/tasks";
import { getAllMessages, getBackgroundConversation } from "@/lib/db/queries";
import { tasks } from "@/lib/db/schema";
import { JobQueue } from "@/lib/jobs/job-queue";
import type { TestDatabase } from "../support/database";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../support/worker-process";

let database: TestDatabase;
let jobs: JobQueue;
let openai: FakeOpenAI;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  // The DELETE goes through its route handler, which reads DATABASE_URL.
  database = await createWebTestDatabase();
  jobs = await JobQueue.start(database.url, "web", { quiet: true });
  openai = await startFakeOpenAI();
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop("SIGKILL")));
});
afterAll(async () => {
  await jobs?.stop({ graceful: false, timeoutMs: 1000 });
  await openai?.close();
  await closeWebTestDatabase(database);
});

/** A transaction of the test's own that holds what `lock` locked until `release()`; `pid`: its backend. */
async function holding(
  lock: (tx: TransactionSql) => Promise<unknown>,
): Promise<{ pid: number; release: () => Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held!: (pid: number) => void;
  const pid = new Promise<number>((resolve) => (held = resolve));
  const done = database.sql.begin(async (tx) => {
    const [row] = await tx`select pg_backend_pid() as pid`;
    await lock(tx);
    held(row!.pid as number);
    await released;
  });
  return {
    pid: await pid,
    release: async () => {
      release();
      await done;
    },
  };
}

/** Waits until a backend whose query matches `query` waits for a lock (one that a holder in `holders` holds, when given). */
function waitsForLock(query: RegExp, what: string, holders?: number[]): Promise<unknown> {
  return waitFor(
    async () => {
      const rows =
        await database.sql`select query, pg_blocking_pids(pid) as blockers from pg_stat_activity where wait_event_type = 'Lock'`;
      return rows.some(
        (row) =>
          query.test(String(row.query)) &&
          (!holders || (row.blockers as number[]).some((pid) => holders.includes(pid))),
      );
    },
    { timeoutMs: 15_000, what },
  );
}

const deadlocks = async () =>
  Number((await database.sql`select deadlocks from pg_stat_database where datname = current_database()`)[0]!.deadlocks);

describe("a team deleted while its agent works", () => {
  it("ends the session quietly, even when its write lost a deadlock to the deletion: one line, no stack, retry or alert", {
    timeout: 60_000,
  }, async () => {
    const { team, lead } = await createTeamFixture(database.db, { name: "Tide desk" });
    const log = await getBackgroundConversation(database.db, lead.id);

    // The task's model call waits for the test.
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    openai.setHandler(async (request) => {
      if (request.response_format || request.tool_choice === "none") return { text: '{"items":[]}' };
      await answered;
      return { text: "Charted." };
    });
    const worker = startWorkerProcess({
      DATABASE_URL: database.url,
      OPENAI_BASE_URL: openai.url,
      LLM_MODEL: "fake-model",
    });
    workers.push(worker);
    await waitFor(async () => worker.output.join("").includes("[worker] ready"), {
      timeoutMs: 20_000,
      what: "the worker",
    });
    await assignTask(database.db, jobs, { agentId: lead.id, source: "user", title: "Chart the tides" });
    await waitFor(async () => openai.requests.length > 0, { timeoutMs: 15_000, what: "the model call" });
    // Input about no task: the session moves it into its log once the task's turn is over.
    await queueInput(database.db, jobs, lead.id, "[webhook:ci] The tide tables changed.");
    const [first] = await getAllMessages(database.db, log.id);

    const [task] = await database.db.select().from(tasks).where(eq(tasks.agentId, lead.id));

    const deadlocksBefore = await deadlocks();
    // The log's first message: the deletion's cascade reaches it last, so holding it (as an
    // update would, which lets new messages still point at it) keeps the deletion under way.
    const firstHeld = await holding((tx) => tx`select 1 from messages where id = ${first!.id} for no key update`);
    // The turn ends and the session settles its task: it waits for the task's row.
    const taskHeld = await holding((tx) => tx`select 1 from tasks where id = ${task!.id} for no key update`);
    answer();
    // completeTask locks the row first (for update), then updates it.
    await waitsForLock(/update "tasks"|"tasks".*for update/is, "the session to settle its task", [taskHeld.pid]);
    // The deletion waits for the log, held by the test.
    const logHeld = await holding((tx) => tx`select 1 from conversations where id = ${log.id} for update`);
    const route = await import("@/app/api/teams/[teamId]/route");
    const deletion = route.DELETE(new Request(`http://localhost:3000/api/teams/${team.id}`, { method: "DELETE" }), {
      params: Promise.resolve({ teamId: team.id }),
    });
    await waitsForLock(/delete from "teams"/i, "the deletion to reach the log", [logHeld.pid]);
    // The session settles its task, takes the queued input and waits for the log, behind the deletion.
    await taskHeld.release();
    await waitsForLock(/with conversation as/i, "the session to append the input to its log");
    // The deletion takes the log and goes on to the input the session took: a deadlock, which
    // the session, waiting longer, finds first (Postgres's deadlock_timeout, 1 s) and loses.
    // The deletion goes on to the held message.
    await logHeld.release();
    await waitFor(async () => (await deadlocks()) > deadlocksBefore, {
      timeoutMs: 10_000,
      what: "the session to lose the deadlock",
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await firstHeld.release();
    expect((await deletion).status).toBe(204);

    await waitFor(async () => /ended: its team was deleted|unexpected error/.test(worker.output.join("")), {
      timeoutMs: 15_000,
      what: "the session's end",
    }).catch(() => {});
    // Time for a retry of the wake-up job to show (pg-boss's first after 2 s).
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const output = worker.output.join("");
    expect(await deadlocks(), "the control: the session lost a deadlock to the deletion").toBe(deadlocksBefore + 1);
    expect(output, output).not.toMatch(/unexpected error|deadlock|\n\s+at |Error\b/);
    // After the start-up lines, one line for the session.
    expect(output.slice(output.indexOf("[worker] ready")).match(/\[worker\] .*/g)).toEqual([
      "[worker] ready: waiting for work.",
      `[worker] session of "${lead.name}" (agent ${lead.id}) ended: its team was deleted`,
    ]);
    const retried =
      await database.sql`select count(*)::int as count from pgboss.job where name = 'agent-wake' and (retry_count > 0 or state = 'failed')`;
    expect(retried[0]!.count, "wake-up jobs retried or failed").toBe(0);
    expect(await database.sql`select 1 from inbox_items where type = 'alert'`).toHaveLength(0);
    expect(await database.sql`select 1 from conversations where id = ${log.id}`).toHaveLength(0);
  });
});
