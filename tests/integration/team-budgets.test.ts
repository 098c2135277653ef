// Team budgets under load (a hostile tester's findings): sessions of one team running side by
// side stay within the team's daily budget (give or take a model call each), and a team over its
// budget leaves its work waiting — one alert, no failed tasks, no sessions spinning — until the
// budget is raised, which starts the work again.
import type { LanguageModelV4GenerateResult } from "@ai-sdk/provider";
import { and, eq, sql } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { runWorkSession } from "@/lib/engine/agent";
import { engineConfigFromEnv } from "@/lib/core/engine-config";
import { runScheduledLeadCheckIn } from "@/lib/domain/schedules";
import { assignTask } from "@/lib/domain/tasks";
import { getAllMessages, getBackgroundConversation, getTask, listTasksByAgent, recordUsage } from "@/lib/db/queries";
import { updateTeam } from "@/lib/db/queries/teams";
import { inboxItems, workSessions } from "@/lib/db/schema";
import { teamSpendToday } from "@/lib/usage/spend";
import { startWorker, type RunningWorker } from "@/worker/runner";
import { createTestEngine, type TestEngine } from "../support/engine";
import { createTeamFixture } from "../support/fixtures";
import { sessionModel, textReply, toolCallReply } from "../support/mock-model";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";
import { waitFor } from "../support/worker-process";

// The in-process worker reads the environment once: no proactive runs in this file.
process.env.LEAD_SCHEDULE = "off";

let database: TestDatabase;
let api: { team: typeof import("@/app/api/teams/[teamId]/route") };
const engines: TestEngine[] = [];
const workers: RunningWorker[] = [];

beforeAll(async () => {
  delete process.env.APP_PASSWORD;
  database = await createWebTestDatabase();
  api = { team: await import("@/app/api/teams/[teamId]/route") };
});

afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.stop();
  for (const engine of engines.splice(0)) await engine.close();
});

afterAll(async () => {
  await closeWebTestDatabase(database);
});

async function engineWith(options: Parameters<typeof createTestEngine>[1]): Promise<TestEngine> {
  const engine = await createTestEngine(database, options);
  engines.push(engine);
  return engine;
}

/** A reply that reports `tokens` tokens (4/5 input, 1/5 output), as a provider would. */
function spending(reply: LanguageModelV4GenerateResult, tokens: number): LanguageModelV4GenerateResult {
  const input = Math.round(tokens * 0.8);
  return {
    ...reply,
    usage: {
      inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: undefined },
      outputTokens: { total: tokens - input, text: tokens - input, reasoning: undefined },
    },
  };
}

const ORIGIN = "http://localhost:3000";
function patchTeam(teamId: string, body: unknown): Promise<Response> {
  return api.team.PATCH(
    new Request(`${ORIGIN}/api/teams/${teamId}`, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
    { params: Promise.resolve({ teamId }) },
  );
}

const SUBORDINATES = ["Ana", "Ben", "Cal", "Dee", "Eli", "Fay", "Gus"];

describe("parallel sessions of one team", () => {
  it("stay within the team's daily token budget, give or take one model call per session", async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: SUBORDINATES });
    const BUDGET = 20_000;
    const PER_CALL = 500;
    await updateTeam(database.db, team.id, { dailyTokenBudget: BUDGET });
    // A zero-latency model that never stops calling tools: only the budget ends these sessions.
    const engine = await engineWith({
      model: sessionModel(() => spending(toolCallReply("searchKnowledge", { query: "more" }), PER_CALL)),
      config: { maxStepsPerSession: 200 },
    });
    const agents = [lead, ...subordinates];
    for (const agent of agents) {
      await assignTask(database.db, engine.jobs, {
        agentId: agent.id,
        source: agent.role === "lead" ? "user" : "lead",
        title: "Spend",
      });
    }

    const outcomes = await Promise.all(agents.map((agent) => runWorkSession(engine.deps, agent.id)));

    const spent = (await teamSpendToday(database.db, team.id)).tokens;
    // Each session may have one call in flight when the budget runs out, no more.
    expect(spent).toBeGreaterThanOrEqual(BUDGET);
    expect(spent).toBeLessThanOrEqual(BUDGET + agents.length * PER_CALL);
    // Every one of them stopped for the team's budget, none for anything else.
    for (const outcome of outcomes) expect(outcome.error).toMatch(/over its daily token budget of 20,000/);
  });
});

describe("two worker processes of one team, against a server that sends no usage", () => {
  it("stop at the team's daily budget, give or take one model call per session, however fast the model answers", async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Ana", "Ben", "Cal"] });
    const BUDGET = 100_000;
    await updateTeam(database.db, team.id, { dailyTokenBudget: BUDGET });
    // A zero-latency model that never stops calling tools and counts nothing: Cadre's estimates are the spending.
    const engine = await engineWith({
      model: sessionModel(() => ({ ...toolCallReply("searchKnowledge", { query: "more" }), usage: noUsage })),
      config: { maxStepsPerSession: 1_000 },
    });
    const agents = [lead, ...subordinates];
    for (const agent of agents) {
      await assignTask(database.db, engine.jobs, {
        agentId: agent.id,
        source: agent.role === "lead" ? "user" : "lead",
        title: "Spend",
      });
    }
    // A second copy of the engine's modules: what another worker process holds, its own estimate of the team's spending.
    vi.resetModules();
    const otherWorker = (await import("@/lib/engine/agent")).runWorkSession;

    const outcomes = await Promise.all(
      agents.map((agent, n) => (n % 2 === 0 ? runWorkSession : otherWorker)(engine.deps, agent.id)),
    );

    const [row] = await database.db.execute<{ spent: number; largest: number }>(
      sql`select coalesce(sum(input_tokens + output_tokens), 0)::int as spent,
                 coalesce(max(input_tokens + output_tokens), 0)::int as largest
            from usage where team_id = ${team.id}`,
    );
    console.log(
      `[team budgets] two workers, no usage: ${row!.spent} tokens counted (budget ${BUDGET}, largest call ${row!.largest})`,
    );
    // Each session may have one call in flight when the budget runs out, no more: however many
    // calls the other process made since this one last looked.
    expect(row!.spent).toBeGreaterThanOrEqual(BUDGET);
    expect(row!.spent).toBeLessThanOrEqual(BUDGET + agents.length * row!.largest);
    for (const outcome of outcomes) expect(outcome.error).toMatch(/over its daily token budget of 100,000/);
  });
});

const noUsage = {
  inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: undefined, text: undefined, reasoning: undefined },
};

/**
 * A worker in this process on the test database, with the test's model: its backlog drain
 * runs at start and every 5 s (the reaper's minimum 0.5 s × 10), which is what a day's
 * rollover and a spinning team would show in.
 */
async function startBudgetWorker(model: ReturnType<typeof sessionModel>): Promise<RunningWorker> {
  const worker = await startWorker({
    databaseUrl: database.url,
    concurrency: 4,
    deps: {
      config: { ...engineConfigFromEnv(), worker: `budget-worker-${workers.length}`, staleSessionSeconds: 1 },
      chooseModel: () => ({ model, modelId: model.modelId, kind: "offline" }),
    },
    log: () => {},
  });
  workers.push(worker);
  return worker;
}

async function sessionsOf(agentIds: string[]): Promise<number> {
  const [row] = await database.db.execute<{ count: number }>(
    sql`select count(*)::int as count from work_sessions where agent_id in (${sql.join(
      agentIds.map((id) => sql`${id}::uuid`),
      sql`, `,
    )})`,
  );
  return row!.count;
}

async function alertsOf(teamId: string) {
  return database.db
    .select()
    .from(inboxItems)
    .where(and(eq(inboxItems.teamId, teamId), eq(inboxItems.type, "alert")));
}

async function wakeRequested(agentId: string): Promise<boolean> {
  const [row] = await database.db.execute<{ at: string | null }>(
    sql`select wake_requested_at as at from agents where id = ${agentId}`,
  );
  return row?.at != null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a team over its daily budget", () => {
  it("leaves many tasks waiting with one alert and no session spinning, and takes them up when the next UTC day starts", async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    await updateTeam(database.db, team.id, { dailyTokenBudget: 1_000 });
    await recordUsage(database.db, {
      agentId: lead.id,
      purpose: "work",
      model: "mock-model-id",
      inputTokens: 1_000,
      outputTokens: 200,
    });
    await startBudgetWorker(sessionModel(() => textReply("Done.")));
    const engine = await engineWith({});

    const given = [];
    for (let i = 0; i < 12; i++)
      given.push(await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: `Task ${i}` }));
    given.push(await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "lead", title: "Dig" }));
    // The wake-ups of the tasks given are worked off; then the team is quiet.
    await waitFor(async () => (await alertsOf(team.id)).length > 0 && !(await hasRunningSession([lead.id, scout.id])), {
      timeoutMs: 10_000,
      what: "the budget alert",
    });
    await sleep(500);
    const settled = await sessionsOf([lead.id, scout.id]);
    // Over a backlog drain (every 5 s) nothing starts: no session is woken for work the budget holds back.
    await sleep(6_000);
    expect(await sessionsOf([lead.id, scout.id])).toBe(settled);

    // Nothing failed, nothing began: every task waits where it was given.
    for (const task of given) expect(await getTask(database.db, task.id)).toMatchObject({ status: "pending" });
    // One alert for the team, none per task or per stopped session; its words are true.
    const alerts = await alertsOf(team.id);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.dedupeKey).toMatch(new RegExp(`^budget:${team.id}:\\d{4}-\\d{2}-\\d{2}:1000:none$`));
    expect(alerts[0]!.summary).toBe(
      `The team "${team.name}" used 1,200 tokens today, over its daily token budget of 1,000; its work waits until tomorrow (UTC) or until you raise the budget in the team's Settings, under Usage and budget.`,
    );
    // The durable "work waits here": the wake flags the drain acts on once the team may spend again.
    expect(await wakeRequested(lead.id)).toBe(true);
    expect(await wakeRequested(scout.id)).toBe(true);

    // Midnight (UTC): yesterday's spending no longer counts, and the next drain takes the work up.
    await database.db.execute(
      sql`update usage set created_at = created_at - interval '1 day' where agent_id = ${lead.id}`,
    );
    await waitFor(
      async () => (await listTasksByAgent(database.db, lead.id)).every((task) => task.status === "completed"),
      { timeoutMs: 20_000, what: "the lead's tasks to complete" },
    );
    await waitFor(
      async () => (await listTasksByAgent(database.db, scout.id)).every((task) => task.status === "completed"),
      { timeoutMs: 10_000, what: "Scout's task to complete" },
    );
  }, 60_000);

  it("cuts a turn with a marker and leaves its task in progress; raising the budget runs it to completion", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await updateTeam(database.db, team.id, { dailyTokenBudget: 1_000 });
    // Three tool rounds of 400 tokens each, then the answer: the budget runs out before the fourth call.
    const model = sessionModel((_options, call) =>
      call < 3
        ? spending(toolCallReply("searchKnowledge", { query: "survey" }), 400)
        : textReply("Finished the survey."),
    );
    await startBudgetWorker(model);
    const engine = await engineWith({});
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Survey" });

    await waitFor(async () => (await alertsOf(team.id)).length > 0 && !(await hasRunningSession([lead.id])), {
      timeoutMs: 10_000,
      what: "the budget stop",
    });
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "in_progress" });
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    // 1,200 tokens of three model calls, and 2 of the searches' query vector (made once: the same words each time).
    expect(log.at(-1)!.content).toBe(
      `(stopped: the team "${team.name}" used 1,202 tokens today, over its daily token budget of 1,000; its work waits until tomorrow (UTC) or until you raise the budget in the team's Settings, under Usage and budget)`,
    );
    const [stopped] = await database.db.select().from(workSessions).where(eq(workSessions.agentId, lead.id));
    expect(stopped).toMatchObject({
      status: "stopped",
      error: expect.stringMatching(/^the team .* over its daily token budget of 1,000; its work waits/),
    });
    const alerts = await alertsOf(team.id);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.title).toBe(`${team.name} is over its daily budget: its work waits`);

    const response = await patchTeam(team.id, { dailyTokenBudget: 100_000 });
    expect(response.status).toBe(200);
    await waitFor(async () => (await getTask(database.db, task.id))?.status === "completed", {
      timeoutMs: 10_000,
      what: "the task to complete",
    });
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "completed", result: "Finished the survey." });
    // No alert about the task, and none added since.
    expect(await alertsOf(team.id)).toHaveLength(1);
  }, 30_000);
});

describe("a lead's scheduled check-in", () => {
  it("is skipped while the team is over its budget: it could only wait for tomorrow", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const engine = await engineWith({});
    await updateTeam(database.db, team.id, { dailyTokenBudget: 100 });
    await recordUsage(database.db, {
      agentId: lead.id,
      purpose: "work",
      model: "mock-model-id",
      inputTokens: 100,
      outputTokens: 10,
    });
    expect(await runScheduledLeadCheckIn(engine.deps, lead.id)).toBe("skipped");
    expect(await listTasksByAgent(database.db, lead.id)).toEqual([]);
    await updateTeam(database.db, team.id, { dailyTokenBudget: 10_000 });
    expect(await runScheduledLeadCheckIn(engine.deps, lead.id)).toBe("started");
  });
});

async function hasRunningSession(agentIds: string[]): Promise<boolean> {
  const rows = await database.db
    .select({ id: workSessions.id })
    .from(workSessions)
    .where(
      and(
        eq(workSessions.status, "running"),
        sql`${workSessions.agentId} in (${sql.join(
          agentIds.map((id) => sql`${id}::uuid`),
          sql`, `,
        )})`,
      ),
    );
  return rows.length > 0;
}
