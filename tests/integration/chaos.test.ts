// Chaos in the suite (issue 34, item 7): teams at work on a Postgres of the test's own while a
// worker is SIGKILLed (twice), Postgres is stopped and started again, and its connections are
// taken until "too many clients" for a few seconds — with the API asked all the while. Each
// team's lead delegates to Scout and Analyst, waits for both reports and briefs
// (tests/support/delegation-play.ts). Afterwards:
//   - nothing lost: every task completed, every call has its result, each report reached its lead;
//   - nothing doubled: one task per subordinate, one report each, one briefing per team;
//   - every delegation and briefing tied to its task, no lead task completed before its work;
//   - every API answer 2xx or 503 (none a 500, none thrown).
// Prints one line: `[chaos] …`.
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assignTask } from "@/lib/domain/tasks";
import { createDatabase, type Database } from "@/lib/db/client";
import { migrateDatabase } from "@/lib/db/migrate";
import { JobQueue } from "@/lib/jobs/job-queue";
import { startEmbeddedPostgres, type LocalPostgres } from "../../scripts/lib/embedded-postgres";
import { delegationPlay, speakerOf } from "../support/delegation-play";
import { stopWebProcess } from "../support/web";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../support/worker-process";

const TEAMS = 6;
const MAX_CONNECTIONS = 50;
const SETTINGS = { max_connections: String(MAX_CONNECTIONS) };
const dataDir = path.join(os.tmpdir(), `cadre-chaos-${process.pid}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let server: LocalPostgres;
let database: Database;
let openai: FakeOpenAI;
const live: WorkerProcess[] = [];
/** Workers that exited without being killed (restarted as a supervisor would). */
let gaveUp = 0;
let stopping = false;
const subIdsOf = new Map<string, Record<string, string>>();

function startWorker(): WorkerProcess {
  const worker = startWorkerProcess({
    DATABASE_URL: server.url,
    OPENAI_BASE_URL: openai.url,
    LLM_MODEL: "fake-model",
    WORKER_CONCURRENCY: "4",
    SESSION_STALE_SECONDS: "2",
    DATABASE_POOL_SIZE: "4",
  });
  live.push(worker);
  worker.child.once("exit", (_code, signal) => {
    if (stopping || signal === "SIGKILL" || !live.includes(worker)) return;
    gaveUp += 1;
    live.splice(live.indexOf(worker), 1);
    startWorker();
  });
  return worker;
}

const ready = (worker: WorkerProcess) => worker.output.join("").includes("[worker] ready");

/** SIGKILLs the worker running the most sessions (its replacement starts first). */
async function killBusiestWorker(): Promise<void> {
  const rows = await database.db
    .execute<{ worker: string; n: string }>(
      sql`select worker, count(*) as n from work_sessions where status = 'running' group by worker order by n desc`,
    )
    .catch(() => []);
  const victim =
    live.find((worker) => rows[0]?.worker.endsWith(`:${worker.child.pid}`)) ?? live.find((worker) => ready(worker));
  if (!victim) return;
  startWorker();
  live.splice(live.indexOf(victim), 1);
  await victim.stop("SIGKILL");
}

beforeAll(async () => {
  server = await startEmbeddedPostgres({ dataDir, database: "cadre", persistent: true, settings: SETTINGS });
  await migrateDatabase(server.url);
  const jobs = await JobQueue.start(server.url, "web", { quiet: true });
  await jobs.stop({ graceful: false, timeoutMs: 1000 });
  database = createDatabase(server.url, { max: 3 });
  // The route handlers' engine reads these on first use: this process is the web server.
  process.env.DATABASE_URL = server.url;
  process.env.DATABASE_POOL_SIZE = "4";
  openai = await startFakeOpenAI(async (request) => {
    const who = speakerOf(request);
    const subIds = who ? subIdsOf.get(who.team) : undefined;
    if (!who || !subIds) return { text: "I do not know this team." };
    // Calls take a while, so the chaos lands in the middle of the teams' work.
    await sleep(100 + Math.random() * 300);
    return delegationPlay(subIds, who.agent, request);
  });
  startWorker();
  startWorker();
  await waitFor(async () => live.every(ready), { timeoutMs: 60_000, what: "the workers to be ready" });
}, 120_000);

afterAll(async () => {
  stopping = true;
  await Promise.all(live.splice(0).map((worker) => worker.stop("SIGKILL")));
  await stopWebProcess();
  await database?.close();
  await openai?.close();
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe("chaos", () => {
  it("loses, doubles and unties nothing through kills, a restart and a full server", { timeout: 180_000 }, async () => {
    const started = Date.now();
    const teams: { teamId: string; leadId: string; taskId: string }[] = [];
    const jobs = await JobQueue.start(server.url, "web", { quiet: true });
    const begin = async (index: number) => {
      const name = `Chaos ${index}`;
      const { team, lead, subordinates } = await createTeamFixture(database.db, {
        name,
        subordinates: ["Scout", "Analyst"],
      });
      subIdsOf.set(name, Object.fromEntries(subordinates.map((sub) => [sub.name, sub.id])));
      const task = await assignTask(database.db, jobs, { agentId: lead.id, source: "user", title: "Research prices" });
      teams.push({ teamId: team.id, leadId: lead.id, taskId: task.id });
    };
    // Half the teams before the chaos, the rest once the database is back from its restart.
    for (let i = 0; i < TEAMS / 2; i++) await begin(i);
    await jobs.stop({ graceful: false, timeoutMs: 1000 });

    // The API, asked all the while: every answer 2xx or 503.
    const answers = new Map<string, number>();
    // Each route's GET as the server calls it: the request and its params.
    type Get = (request: Request, context: { params: Promise<Record<string, string>> }) => Promise<Response>;
    const routes = {
      health: (await import("@/app/api/health/route")).GET as Get,
      teams: (await import("@/app/api/teams/route")).GET as Get,
      stories: (await import("@/app/api/teams/[teamId]/stories/route")).GET as unknown as Get,
      usage: (await import("@/app/api/usage/route")).GET as Get,
    };
    const GET = (route: Get, url: string, params: Record<string, string> = {}) =>
      route(new Request(`http://localhost${url}`), { params: Promise.resolve(params) });
    let asking = true;
    const ask = (async () => {
      while (asking) {
        const teamId = teams[0]!.teamId;
        const calls: [string, () => Promise<Response>][] = [
          ["health", () => GET(routes.health, "/api/health")],
          ["teams", () => GET(routes.teams, "/api/teams")],
          ["stories", () => GET(routes.stories, `/api/teams/${teamId}/stories`, { teamId })],
          ["usage", () => GET(routes.usage, "/api/usage")],
        ];
        for (const [name, call] of calls) {
          const status = await call().then(
            (response) => response.status,
            () => -1,
          );
          const key = `${name} ${status === -1 ? "threw" : status}`;
          answers.set(key, (answers.get(key) ?? 0) + 1);
        }
        await sleep(150);
      }
    })();

    await sleep(1500);
    await killBusiestWorker();
    await sleep(1500);
    // Postgres stops for 3 s and comes back where its clients expect it.
    const port = server.port;
    await server.stop();
    await sleep(3000);
    server = await startEmbeddedPostgres({ dataDir, database: "cadre", persistent: true, port, settings: SETTINGS });
    const more = await JobQueue.start(server.url, "web", { quiet: true });
    const assignMore = async () => {
      for (let i = TEAMS / 2; i < TEAMS; i++) await begin(i);
    };
    await waitFor(
      () =>
        database.db.execute(sql`select 1`).then(
          () => true,
          () => false,
        ),
      { timeoutMs: 20_000, what: "the database back" },
    );
    await assignMore();
    // Every connection slot taken for 4 s: "too many clients" for everyone else.
    const hogs: postgres.Sql[] = [];
    for (let i = 0; i < MAX_CONNECTIONS; i++) {
      const hog = postgres(server.url, { max: 1, onnotice: () => {}, connect_timeout: 2 });
      if (
        !(await hog`select 1`.then(
          () => true,
          () => false,
        ))
      ) {
        await hog.end({ timeout: 1 });
        break;
      }
      hogs.push(hog);
    }
    await sleep(4000);
    await Promise.all(hogs.map((hog) => hog.end({ timeout: 1 })));
    await killBusiestWorker();
    await more.stop({ graceful: false, timeoutMs: 1000 }).catch(() => {});

    const quiet = sql`select
        (select count(*) from tasks where status in ('pending', 'in_progress', 'waiting_input'))
      + (select count(*) from work_sessions where status = 'running')
      + (select count(*) from agent_inputs)
      + (select count(*) from agents where wake_requested_at is not null) as n`;
    await waitFor(
      async () => (await database.db.execute<{ n: string }>(quiet).catch(() => [{ n: "?" }]))[0]!.n === "0",
      { timeoutMs: 90_000, what: "every team to finish its work" },
    ).catch(async (error: Error) => {
      const open = await database.db.execute(
        sql`select t.title, t.status, a.name from tasks t join agents a on a.id = t.agent_id where t.status not in ('completed', 'failed', 'cancelled')`,
      );
      throw new Error(
        `${error.message}: ${JSON.stringify(open)}\n${live.map((w) => w.output.join("").slice(-1500)).join("\n---\n")}`,
      );
    });
    asking = false;
    await ask;

    const problems: string[] = [];
    const rows = async <T>(query: ReturnType<typeof sql>) => (await database.db.execute(query)) as unknown as T[];
    for (const { teamId, leadId, taskId } of teams) {
      const say = (line: string) => problems.push(`team ${teamId.slice(0, 8)}: ${line}`);
      const tasks = await rows<{
        id: string;
        agent_id: string;
        parent_task_id: string | null;
        status: string;
        result: string | null;
        completed_at: Date | null;
      }>(sql`select t.id, t.agent_id, t.parent_task_id, t.status, t.result, t.completed_at
               from tasks t join agents a on a.id = t.agent_id where a.team_id = ${teamId}`);
      const lead = tasks.find((task) => task.id === taskId)!;
      if (lead.status !== "completed") say(`the lead's task ended ${lead.status}`);
      if (/^Waiting/.test(lead.result ?? "")) say(`the lead's task completed with "${lead.result}"`);
      const delegated = tasks.filter((task) => task.agent_id !== leadId);
      if (delegated.length !== 2 || new Set(delegated.map((task) => task.agent_id)).size !== 2)
        say(`${delegated.length} delegated tasks`);
      for (const child of delegated) {
        if (child.parent_task_id !== taskId) say(`a delegated task has parent ${child.parent_task_id}`);
        if (child.status !== "completed") say(`a delegated task ended ${child.status}`);
        if (lead.completed_at && child.completed_at && lead.completed_at < child.completed_at)
          say("the lead's task completed before a delegated task ended");
      }
      const briefings = await rows<{ task_id: string | null }>(
        sql`select task_id from inbox_items where team_id = ${teamId} and type = 'briefing'`,
      );
      if (briefings.length !== 1) say(`${briefings.length} briefings`);
      if (briefings.some((briefing) => briefing.task_id !== taskId)) say("a briefing not tied to its task");
      const [reports] = await rows<{ n: number }>(sql`
        select count(*)::int as n from messages m join conversations c on c.id = m.conversation_id
         where c.agent_id = ${leadId} and m.role = 'user' and m.content like 'Subordinate % reports %'`);
      if (reports!.n !== 2) say(`${reports!.n} reports reached the lead`);
    }
    const [open] = await rows<{ n: number }>(sql`
      select count(*)::int as n from messages m, jsonb_array_elements(m.tool_calls) call
       where (select count(*) from messages r where r.conversation_id = m.conversation_id and r.tool_call_id = call->>'toolCallId') <> 1`);
    if (open!.n > 0) problems.push(`${open!.n} calls without exactly one result`);
    const bad = [...answers].filter(([key]) => !/ (2\d\d|503)$/.test(key));

    const [sessions] = await rows<{ interrupted: number; all: number }>(
      sql`select count(*) filter (where status = 'interrupted')::int as interrupted, count(*)::int as "all" from work_sessions`,
    );
    console.log(
      `[chaos] ${TEAMS} teams, 2 kills, a restart, ${hogs.length} connections taken; sessions ${sessions!.all} (${sessions!.interrupted} interrupted); workers that exited on their own: ${gaveUp}; answers: ${[...answers].map(([key, n]) => `${key}×${n}`).join(", ")}; problems: ${problems.length}; ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    expect(problems).toEqual([]);
    expect(bad).toEqual([]);
    expect([...answers.keys()].some((key) => key.endsWith(" 503"))).toBe(true);
  });
});
