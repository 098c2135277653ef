// Running a team from the browser (issue 14, items 3 and 4) through the route handlers on a
// real Postgres: a lead's schedule in a time zone (pg-boss gets the zone; the preview and the
// next runs hold across a DST change), the team's edit and delete, the model list from the
// configured server, retrying a task by hand and a task's delegation tree.
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { EngineDeps } from "@/lib/core/engine-config";
import { runWorkSession } from "@/lib/engine/agent";
import { describeSchedule, nextRuns, previewSchedule } from "@/lib/domain/schedule-preview";
import { syncLeadSchedules } from "@/lib/domain/schedules";
import { createInboxItem, createKnowledgeItem, createTask, getTask } from "@/lib/db/queries";
import { getLastScheduledTask } from "@/lib/db/queries/tasks";
import { countTeamContents, getTeam } from "@/lib/db/queries/teams";
import { tasks, usage } from "@/lib/db/schema";
import { AGENT_WAKE_QUEUE, LEAD_SCHEDULE_QUEUE } from "@/lib/jobs/queues";
import { forgetModelList, listAvailableModels } from "@/lib/llm/models";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

async function loadRoutes() {
  return {
    team: await import("@/app/api/teams/[teamId]/route"),
    agent: await import("@/app/api/agents/[agentId]/route"),
    retry: await import("@/app/api/tasks/[taskId]/retry/route"),
    tree: await import("@/app/api/tasks/[taskId]/tree/route"),
    models: await import("@/app/api/models/route"),
  };
}

let database: TestDatabase;
let api: Awaited<ReturnType<typeof loadRoutes>>;
let engine: EngineDeps;

beforeAll(async () => {
  for (const name of [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "LLM_MODEL",
    "TAVILY_API_KEY",
    "TAVILY_BASE_URL",
    "LEAD_SCHEDULE",
  ])
    delete process.env[name];
  database = await createWebTestDatabase();
  api = await loadRoutes();
  const { webEngine } = await import("@/lib/http/server");
  engine = await webEngine();
});

afterAll(async () => {
  await closeWebTestDatabase(database);
});

const ORIGIN = "http://localhost:3000";
const params = <T extends Record<string, string>>(values: T) => ({ params: Promise.resolve(values) });
const json = (method: string, body?: unknown) =>
  new Request(
    `${ORIGIN}/x`,
    body === undefined
      ? { method }
      : { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
  );

async function answer<T>(response: Response, status = 200): Promise<T> {
  const text = await response.text();
  expect({ status: response.status, text }).toMatchObject({ status });
  return JSON.parse(text) as T;
}

const schedulesOf = async (agentId: string) =>
  (await engine.jobs.boss.getSchedules(LEAD_SCHEDULE_QUEUE, agentId)).map((schedule) => ({
    cron: schedule.cron,
    timezone: schedule.timezone,
  }));

describe("a lead's schedule in a time zone", () => {
  it("PATCH scheduleTimeZone reschedules the lead in that zone; null is UTC; an unknown zone is a 400", async () => {
    const { lead } = await createTeamFixture(database.db);
    const agentId = lead.id;
    const { agent } = await answer<{ agent: { schedule: string; scheduleTimeZone: string } }>(
      await api.agent.PATCH(
        json("PATCH", { schedule: "0 8 * * *", scheduleTimeZone: "Europe/Berlin" }),
        params({ agentId }),
      ),
    );
    expect(agent).toMatchObject({ schedule: "0 8 * * *", scheduleTimeZone: "Europe/Berlin" });
    expect(await schedulesOf(agentId)).toEqual([{ cron: "0 8 * * *", timezone: "Europe/Berlin" }]);

    // The zone alone changing reschedules too.
    await answer(await api.agent.PATCH(json("PATCH", { scheduleTimeZone: "America/New_York" }), params({ agentId })));
    expect(await schedulesOf(agentId)).toEqual([{ cron: "0 8 * * *", timezone: "America/New_York" }]);
    await answer(await api.agent.PATCH(json("PATCH", { scheduleTimeZone: null }), params({ agentId })));
    expect(await schedulesOf(agentId)).toEqual([{ cron: "0 8 * * *", timezone: "UTC" }]);

    const refused = await answer<{ error: { code: string; message: string } }>(
      await api.agent.PATCH(json("PATCH", { scheduleTimeZone: "Europe/Atlantis" }), params({ agentId })),
      400,
    );
    expect(refused.error.message).toMatch(/IANA time zone/);
    expect(await schedulesOf(agentId)).toEqual([{ cron: "0 8 * * *", timezone: "UTC" }]);
  });

  it("pausing drops the schedule; resuming and the worker's start-up sync bring it back in its zone", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await answer(
      await api.agent.PATCH(
        json("PATCH", { schedule: "30 6 * * 1-5", scheduleTimeZone: "Asia/Tokyo" }),
        params({ agentId: lead.id }),
      ),
    );
    await answer(await api.team.PATCH(json("PATCH", { status: "paused" }), params({ teamId: team.id })));
    expect(await schedulesOf(lead.id)).toEqual([]);
    await answer(await api.team.PATCH(json("PATCH", { status: "active" }), params({ teamId: team.id })));
    expect(await schedulesOf(lead.id)).toEqual([{ cron: "30 6 * * 1-5", timezone: "Asia/Tokyo" }]);

    await engine.jobs.unscheduleLead(lead.id);
    await syncLeadSchedules(engine, "0 8 * * *");
    expect(await schedulesOf(lead.id)).toEqual([{ cron: "30 6 * * 1-5", timezone: "Asia/Tokyo" }]);
  });

  it("the next three runs stay at 08:00 Berlin time across the change to summer time", () => {
    // Summer time starts in Europe/Berlin on Sunday 29 March 2026, 02:00 → 03:00.
    const from = new Date("2026-03-27T12:00:00Z");
    expect(nextRuns("0 8 * * *", "Europe/Berlin", from).map((date) => date.toISOString())).toEqual([
      "2026-03-28T07:00:00.000Z", // CET, UTC+1
      "2026-03-29T06:00:00.000Z", // CEST, UTC+2
      "2026-03-30T06:00:00.000Z",
    ]);
    // Read in UTC, the same cron would drift an hour in Berlin.
    expect(nextRuns("0 8 * * *", null, from).map((date) => date.toISOString())).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T08:00:00.000Z",
      "2026-03-30T08:00:00.000Z",
    ]);
    expect(previewSchedule("0 8 * * *", "Europe/Berlin", from)).toEqual({
      cron: "0 8 * * *",
      timeZone: "Europe/Berlin",
      text: "every day at 08:00 Europe/Berlin",
      nextRuns: [
        "Sat 28 Mar, 08:00 Europe/Berlin",
        "Sun 29 Mar, 08:00 Europe/Berlin",
        "Mon 30 Mar, 08:00 Europe/Berlin",
      ],
    });
  });

  it("reads the common shapes aloud and shows any other cron as it is", () => {
    expect(describeSchedule("0 8 * * *", null)).toBe("every day at 08:00 UTC");
    expect(describeSchedule("5 7 * * 1-5", "Europe/Berlin")).toBe("weekdays at 07:05 Europe/Berlin");
    expect(describeSchedule("0 9 * * 1", "Europe/Berlin")).toBe("every Monday at 09:00 Europe/Berlin");
    expect(describeSchedule("0 */6 * * *", "Europe/Berlin")).toBe("every 6 hours on the hour (Europe/Berlin)");
    expect(describeSchedule("*/30 * * * *", null)).toBe("every 30 minutes");
    expect(describeSchedule("0 8 1 * *", "Europe/Berlin")).toBe('cron "0 8 1 * *" (Europe/Berlin)');
    expect(describeSchedule("off", null)).toBe("off: no scheduled runs");
    expect(previewSchedule("0 8 * * *", "Mars/Base").error).toMatch(/not a time zone/);
    expect(previewSchedule("every morning", null).error).toMatch(/Not a cron expression/);
  });

  it("the last run is the newest task the schedule started", async () => {
    const { lead } = await createTeamFixture(database.db);
    expect(await getLastScheduledTask(database.db, lead.id)).toBeNull();
    await createTask(database.db, { agentId: lead.id, source: "schedule", title: "Advance the mission" });
    const newest = await createTask(database.db, {
      agentId: lead.id,
      source: "schedule",
      title: "Advance the mission again",
    });
    await createTask(database.db, { agentId: lead.id, source: "user", title: "Not a scheduled run" });
    expect((await getLastScheduledTask(database.db, lead.id))?.id).toBe(newest.id);
  });
});

describe("team settings", () => {
  it("PATCH edits the name and mission; DELETE takes what the confirmation counted", async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const { team: edited } = await answer<{ team: { name: string; mission: string } }>(
      await api.team.PATCH(
        json("PATCH", { name: "Heat pumps", mission: "Track heat pump prices in Germany." }),
        params({ teamId: team.id }),
      ),
    );
    expect(edited).toMatchObject({ name: "Heat pumps", mission: "Track heat pump prices in Germany." });
    expect(await getTeam(database.db, team.id)).toMatchObject({ name: "Heat pumps" });

    await createTask(database.db, { agentId: subordinates[0]!.id, source: "lead", title: "Find prices" });
    await createKnowledgeItem(database.db, { agentId: lead.id, type: "fact", content: "Prices fell." });
    await createInboxItem(database.db, {
      teamId: team.id,
      agentId: lead.id,
      type: "briefing",
      title: "t",
      summary: "s",
      content: "c",
    });
    expect(await countTeamContents(database.db, team.id)).toEqual({
      agents: 2,
      tasks: 1,
      messages: 0,
      knowledgeItems: 1,
      inboxItems: 1,
    });

    expect((await api.team.DELETE(json("DELETE"), params({ teamId: team.id }))).status).toBe(204);
    expect(await getTeam(database.db, team.id)).toBeNull();
    expect(await countTeamContents(database.db, team.id)).toEqual({
      agents: 0,
      tasks: 0,
      messages: 0,
      knowledgeItems: 0,
      inboxItems: 0,
    });
    expect(await schedulesOf(lead.id)).toEqual([]);
  });
});

describe("GET /api/models", () => {
  let fake: FakeOpenAI | undefined;
  afterEach(async () => {
    forgetModelList();
    await fake?.close().catch(() => undefined);
    fake = undefined;
  });

  it("offline: the offline model only", async () => {
    expect(await answer(await api.models.GET())).toEqual({ models: ["offline"], source: "none" });
  });

  it("lists what the configured server lists, sorted", async () => {
    fake = await startFakeOpenAI(undefined, { models: ["qwen3-8b", "llama-3.2-3b", "qwen3-8b"] });
    // The environment is parsed once per process, so the configuration is handed in here.
    expect(await listAvailableModels({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: undefined })).toEqual({
      models: ["llama-3.2-3b", "qwen3-8b"],
      source: "server",
    });
    // Cached briefly: a second editor opening does not ask again.
    fake.close();
    expect(await listAvailableModels({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: undefined })).toMatchObject({
      source: "server",
    });
  });

  it("a server that cannot list: no models and a reason, so the person types a name", async () => {
    // Port 9 (discard): nothing listens, the connection is refused at once.
    const list = await listAvailableModels({ OPENAI_BASE_URL: "http://127.0.0.1:9/v1", OPENAI_API_KEY: undefined });
    expect(list).toMatchObject({
      models: [],
      source: "none",
      error: expect.stringMatching(/Could not list the server's models .*Type a model name instead\./),
    });
  });
});

describe("tasks by hand", () => {
  it("retry: 404 unknown, 409 unless failed or cancelled; a retry is a new pending task that wakes its agent and runs", async () => {
    const { subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    expect((await api.retry.POST(json("POST"), params({ taskId: randomUUID() }))).status).toBe(404);

    const task = await createTask(database.db, {
      agentId: scout.id,
      source: "user",
      title: "Check the heat pump news",
      description: "German sources.",
    });
    const conflict = await answer<{ error: { code: string } }>(
      await api.retry.POST(json("POST"), params({ taskId: task.id })),
      409,
    );
    expect(conflict.error.code).toBe("conflict:task_not_ended");

    await database.db
      .update(tasks)
      .set({ status: "failed", result: "The model server failed (HTTP 500)." })
      .where(eq(tasks.id, task.id));
    const { task: retried } = await answer<{
      task: { id: string; agentId: string; status: string; source: string; title: string; description: string };
    }>(await api.retry.POST(json("POST"), params({ taskId: task.id })), 201);
    expect(retried).toMatchObject({
      agentId: scout.id,
      status: "pending",
      source: "user",
      title: "Check the heat pump news",
    });
    expect(retried.description).toBe(
      `German sources.\n\nRetry of task ${task.id} ("Check the heat pump news"), which failed: The model server failed (HTTP 500).`,
    );
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "failed" });
    expect(await engine.jobs.boss.findJobs(AGENT_WAKE_QUEUE, { key: scout.id })).not.toHaveLength(0);

    expect((await runWorkSession(engine, scout.id)).status).toBe("completed");
    expect(await getTask(database.db, retried.id)).toMatchObject({ status: "completed" });
    const calls = await database.db.select().from(usage).where(eq(usage.agentId, scout.id));
    expect(calls.map((call) => call.model)).toContain("offline");
  });

  it("retry: twenty at once make one new task; the others are a 409 naming it", async () => {
    const { subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const task = await createTask(database.db, { agentId: scout.id, source: "user", title: "Retry me once" });
    await database.db
      .update(tasks)
      .set({ status: "cancelled", result: "Cancelled by the person." })
      .where(eq(tasks.id, task.id));
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => api.retry.POST(json("POST"), params({ taskId: task.id }))),
    );
    expect(responses.map((response) => response.status).sort()).toEqual([201, ...Array<number>(19).fill(409)]);
    const copies = await database.db.select().from(tasks).where(eq(tasks.agentId, scout.id));
    expect(copies.filter((copy) => copy.id !== task.id)).toHaveLength(1);
    const refused = (await responses.find((response) => response.status === 409)!.json()) as {
      error: { code: string; message: string };
    };
    expect(refused.error.code).toBe("conflict:task_retried");
    expect(refused.error.message).toContain(copies.find((copy) => copy.id !== task.id)!.id);
  });

  it("the tree: a task and what it spawned at any depth, who did each and the result; 404 unknown", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout", "Analyst"] });
    const [scout, analyst] = subordinates as [(typeof subordinates)[0], (typeof subordinates)[0]];
    const root = await createTask(database.db, { agentId: lead.id, source: "user", title: "Heat pump report" });
    const child = await createTask(database.db, {
      agentId: scout.id,
      source: "lead",
      title: "Find prices",
      parentTaskId: root.id,
    });
    const other = await createTask(database.db, {
      agentId: analyst.id,
      source: "lead",
      title: "Compare models",
      parentTaskId: root.id,
    });
    const grandchild = await createTask(database.db, {
      agentId: analyst.id,
      source: "lead",
      title: "Check one dealer",
      parentTaskId: child.id,
    });
    await database.db.update(tasks).set({ status: "completed", result: "From 9 000 €." }).where(eq(tasks.id, child.id));
    await createTask(database.db, { agentId: scout.id, source: "user", title: "Unrelated" });

    const { tasks: tree } = await answer<{
      tasks: {
        id: string;
        parentTaskId: string | null;
        agentName: string;
        status: string;
        result: string | null;
        depth: number;
      }[];
    }>(await api.tree.GET(json("GET"), params({ taskId: root.id })));
    expect(
      tree.map(({ id, parentTaskId, agentName, status, result, depth }) => ({
        id,
        parentTaskId,
        agentName,
        status,
        result,
        depth,
      })),
    ).toEqual([
      { id: root.id, parentTaskId: null, agentName: lead.name, status: "pending", result: null, depth: 0 },
      {
        id: child.id,
        parentTaskId: root.id,
        agentName: "Scout",
        status: "completed",
        result: "From 9 000 €.",
        depth: 1,
      },
      { id: other.id, parentTaskId: root.id, agentName: "Analyst", status: "pending", result: null, depth: 1 },
      { id: grandchild.id, parentTaskId: child.id, agentName: "Analyst", status: "pending", result: null, depth: 2 },
    ]);
    expect((await api.tree.GET(json("GET"), params({ taskId: randomUUID() }))).status).toBe(404);
  });
});
