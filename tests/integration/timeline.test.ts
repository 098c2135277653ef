// The team timeline and the session trace (issue 13, items 1 and 2), through their route
// handlers on real sessions: the offline model delegates, researches, reports and briefs; a
// mock model compacts and fails. Checked: order across agents, keyset paging with ties,
// filters, the delegation chain linked both ways, the trace's spans and outcome, 400 and 404.
import { randomUUID } from "node:crypto";
import { APICallError } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assignTask } from "@/lib/domain/tasks";
import { createInboxItem, createTask } from "@/lib/db/queries";
import { usage, workSessions } from "@/lib/db/schema";
import type { TimelineEntry, TimelinePage } from "@/lib/views/timeline";
import type { SessionTrace } from "@/lib/views/session-trace";
import { eq } from "drizzle-orm";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import { createTeamFixture } from "../support/fixtures";
import { createTestEngine, runUntilQuiet, type TestEngine } from "../support/engine";
import { sessionModel, toolCallReply } from "../support/mock-model";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

let database: TestDatabase;
let engine: TestEngine;
let tavily: FakeTavily;
let api: {
  timeline: typeof import("@/app/api/teams/[teamId]/timeline/route");
  session: typeof import("@/app/api/sessions/[sessionId]/route");
};

beforeAll(async () => {
  database = await createWebTestDatabase();
  api = {
    timeline: await import("@/app/api/teams/[teamId]/timeline/route"),
    session: await import("@/app/api/sessions/[sessionId]/route"),
  };
  tavily = await startFakeTavily(
    ({ query }) => ({
      results: [
        { title: `Grid storage news (${query})`, url: "https://example.com/grid", content: "Battery prices fell 20%." },
      ],
    }),
    {
      extract: ({ urls }) => ({
        pages: urls.map((url) => ({ url, title: "Grid storage news", content: "Battery prices fell 20% this year." })),
      }),
    },
  );
  engine = await createTestEngine(database, {
    config: { search: { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url } },
  });
});
afterAll(async () => {
  await engine?.close();
  await tavily?.close();
  await closeWebTestDatabase(database);
});

async function timeline(teamId: string, query = ""): Promise<Response> {
  return api.timeline.GET(new Request(`http://localhost/api/teams/${teamId}/timeline${query}`), {
    params: Promise.resolve({ teamId }),
  });
}

async function page(teamId: string, query = ""): Promise<TimelinePage> {
  const response = await timeline(teamId, query);
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as TimelinePage;
}

/** Every entry, walking back page by page with the cursor. */
async function walk(
  teamId: string,
  query: string,
  limit: number,
): Promise<{ entries: TimelineEntry[]; pages: number }> {
  const entries: TimelineEntry[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const next: TimelinePage = await page(teamId, `?limit=${limit}${query}${cursor ? `&before=${cursor}` : ""}`);
    expect(next.entries.length).toBeLessThanOrEqual(limit);
    entries.push(...next.entries);
    cursor = next.nextCursor;
    pages += 1;
  } while (cursor && pages < 100);
  return { entries, pages };
}

async function trace(sessionId: string): Promise<SessionTrace> {
  const response = await api.session.GET(new Request(`http://localhost/api/sessions/${sessionId}`), {
    params: Promise.resolve({ sessionId }),
  });
  expect(response.status, await response.clone().text()).toBe(200);
  return ((await response.json()) as { trace: SessionTrace }).trace;
}

const newestFirst = (entries: TimelineEntry[]) =>
  entries.every((entry, i) => i === 0 || Date.parse(entries[i - 1]!.at) >= Date.parse(entry.at));

describe("the team timeline", () => {
  let team: { id: string };
  let lead: { id: string };
  let scout: { id: string };
  let full: TimelineEntry[];

  beforeAll(async () => {
    const fixture = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    [team, lead, scout] = [fixture.team, fixture.lead, fixture.subordinates[0]!];
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Research grid storage" });
    const sessions = await runUntilQuiet(engine.deps);
    expect(sessions.map((s) => s.agentId)).toEqual([lead.id, scout.id, lead.id]);
    full = (await page(team.id, "?limit=200")).entries;
  });

  it("shows every agent's work, tasks and inbox items in one stream, newest first", () => {
    expect(newestFirst(full)).toBe(true);
    expect(new Set(full.map((entry) => entry.agent.id))).toEqual(new Set([lead.id, scout.id]));
    expect(new Set(full.map((entry) => entry.kind))).toEqual(new Set(["work", "task", "report", "briefing"]));
    // tool results ride with their calls, never as entries of their own
    expect(
      full.filter(
        (entry) =>
          entry.item.type === "message" && entry.item.role !== "assistant" && entry.item.content.startsWith("{"),
      ),
    ).toEqual([]);
    const calls = full.flatMap((entry) => (entry.item.type === "message" ? entry.item.toolCalls : []));
    expect(calls.map((call) => call.toolName)).toEqual(
      expect.arrayContaining(["delegateToAgent", "tavilySearch", "reportToLead", "createInboxItem"]),
    );
    expect(calls.every((call) => call.result !== null && !call.result.failed)).toBe(true);
    expect(new Set(full.map((entry) => entry.key)).size).toBe(full.length);
  });

  it("links a delegation: the lead's call → the subordinate's task and session → the report back in the lead's log", async () => {
    const delegation = full
      .flatMap((entry) => (entry.item.type === "message" ? entry.item.toolCalls : []))
      .find((call) => call.toolName === "delegateToAgent")!;
    expect(delegation.task).toMatchObject({ agentId: scout.id, agentName: "Scout", status: "completed" });
    const scoutSession = delegation.task!.sessionId!;
    const [session] = await database.db.select().from(workSessions).where(eq(workSessions.id, scoutSession));
    expect(session).toMatchObject({ agentId: scout.id, status: "completed" });

    const report = full.find((entry) => entry.kind === "report")!;
    expect(report.agent.id).toBe(lead.id);
    expect(report.item).toMatchObject({
      type: "message",
      input: { kind: "report", agentName: "Scout" },
      task: { id: delegation.task!.id, sessionId: scoutSession },
    });

    const given = full.find((entry) => entry.item.type === "task-given" && entry.item.task.id === delegation.task!.id)!;
    expect(given.agent.id).toBe(scout.id);
    expect(given.item).toMatchObject({
      parent: { agentId: lead.id, title: "Research grid storage" },
      task: { sessionId: scoutSession },
    });
    // the subordinate's own work happened in that session
    const scoutWork = full.filter((entry) => entry.agent.id === scout.id && entry.item.type === "message");
    expect(scoutWork.length).toBeGreaterThan(0);
    expect(scoutWork.every((entry) => entry.sessionId === scoutSession)).toBe(true);
  });

  it("filters by agent and by kind", async () => {
    const scouts = (await page(team.id, `?limit=200&agentId=${scout.id}`)).entries;
    expect(scouts.length).toBeGreaterThan(0);
    expect(scouts.map((entry) => entry.key)).toEqual(
      full.filter((entry) => entry.agent.id === scout.id).map((entry) => entry.key),
    );

    for (const kind of ["work", "task", "report", "briefing"]) {
      const entries = (await page(team.id, `?limit=200&kind=${kind}`)).entries;
      expect(entries.length, kind).toBeGreaterThan(0);
      expect(
        entries.map((entry) => entry.key),
        kind,
      ).toEqual(full.filter((entry) => entry.kind === kind).map((entry) => entry.key));
    }
    expect((await page(team.id, "?kind=alert")).entries).toEqual([]);
    expect((await page(team.id, `?kind=report&agentId=${scout.id}`)).entries).toEqual([]);
    // an agent of another team matches nothing here
    const other = await createTeamFixture(database.db);
    expect((await page(team.id, `?agentId=${other.lead.id}`)).entries).toEqual([]);
  });

  it("pages backwards with the cursor: the same entries, in the same order, no gaps and no repeats", async () => {
    const walked = await walk(team.id, "", 3);
    expect(walked.pages).toBeGreaterThan(3);
    expect(walked.entries.map((entry) => entry.key)).toEqual(full.map((entry) => entry.key));
  });

  it("keeps ties on created_at apart by id (tasks and inbox items written in one transaction share now())", async () => {
    const {
      team: tied,
      lead: tiedLead,
      subordinates,
    } = await createTeamFixture(database.db, { subordinates: ["Ada", "Bo"] });
    await database.db.transaction(async (tx) => {
      for (const agent of [tiedLead, ...subordinates]) {
        for (let i = 0; i < 4; i++)
          await createTask(tx, { agentId: agent.id, source: "user", title: `Tied task ${i}` });
        await createInboxItem(tx, {
          teamId: tied.id,
          agentId: agent.id,
          type: "alert",
          title: "Tied alert",
          summary: "s",
          content: "c",
        });
      }
    });
    const all = (await page(tied.id, "?limit=200")).entries;
    expect(all).toHaveLength(15);
    expect(new Set(all.map((entry) => entry.at)).size).toBe(1);
    for (const limit of [1, 2, 4, 7]) {
      const walked = await walk(tied.id, "", limit);
      expect(
        walked.entries.map((entry) => entry.key),
        `limit ${limit}`,
      ).toEqual(all.map((entry) => entry.key));
    }
    const tasksOnly = await walk(tied.id, "&kind=task", 5);
    expect(tasksOnly.entries).toHaveLength(12);
  });

  it("answers 400 for bad parameters and 404 for an unknown team", async () => {
    const bad = [
      "?kind=sideways",
      "?limit=0",
      "?limit=201",
      "?limit=1e309",
      "?agentId=not-a-uuid",
      "?before=%27%20or%201%3D1%20--",
      `?before=${Buffer.from("12.not-a-uuid").toString("base64url")}`,
      `?before=${Buffer.from(`99999999999999999999.${randomUUID()}`).toString("base64url")}`,
      "?unknown=1",
    ];
    for (const query of bad) {
      const response = await timeline(team.id, query);
      expect(response.status, query).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toMatch(/^bad_request:/);
    }
    for (const teamId of [randomUUID(), "not-a-uuid"]) {
      const response = await timeline(teamId);
      expect(response.status).toBe(404);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("not_found:team");
    }
  });
});

describe("the session trace", () => {
  it("lays out a session's model calls and tool calls on its time axis, with results, tokens, finish reasons and its outcome", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Research batteries" });
    await runUntilQuiet(engine.deps);
    const [session] = await database.db
      .select()
      .from(workSessions)
      .where(eq(workSessions.agentId, subordinates[0]!.id));
    const result = await trace(session!.id);

    expect(result.session).toMatchObject({ id: session!.id, status: "completed" });
    expect(result.agent).toMatchObject({ id: subordinates[0]!.id, name: "Scout" });
    expect(result.marker).toBeNull();
    const tools = result.spans.filter((span) => span.type === "tool");
    expect(tools.map((span) => span.toolName)).toEqual([
      "tavilySearch",
      "readWebPage",
      "addKnowledgeItem",
      "reportToLead",
    ]);
    for (const span of tools) {
      expect(span.result).not.toBeNull();
      expect(span.failed).toBe(false);
      expect(span.end!).toBeGreaterThanOrEqual(span.start);
      expect(span.start).toBeGreaterThanOrEqual(0);
      expect(span.end!).toBeLessThanOrEqual(result.duration + 1000);
    }
    expect(tools[0]!.args).toMatchObject({ query: expect.any(String) });

    const rows = await database.db.select().from(usage).where(eq(usage.workSessionId, session!.id));
    const models = result.spans.filter((span) => span.type === "model");
    expect(models).toHaveLength(rows.length);
    expect(new Set(models.map((span) => span.purpose))).toEqual(new Set(["work", "extraction"]));
    expect(models.filter((span) => span.purpose === "work").map((span) => span.finishReason)).toContain("tool-calls");
    expect(models.every((span) => span.model === "offline" || span.model.length > 0)).toBe(true);
    expect(result.totals).toMatchObject({
      modelCalls: rows.length,
      inputTokens: rows.reduce((sum, row) => sum + row.inputTokens, 0),
      outputTokens: rows.reduce((sum, row) => sum + row.outputTokens, 0),
      toolCalls: 4,
      failedToolCalls: 0,
    });
    // in order along the axis, and the task it took up is an event at its start
    expect(result.spans.every((span, i) => i === 0 || result.spans[i - 1]!.start <= span.start)).toBe(true);
    expect(result.events.find((event) => event.type === "input")).toMatchObject({ label: "Task taken up" });
    expect(result.events.some((event) => event.type === "knowledge")).toBe(true);
  });

  it("shows compactions, a failed tool call and the marker of a session that ended on a model error", async () => {
    const { lead } = await createTeamFixture(database.db);
    const model = sessionModel(
      (_options, call) => {
        if (call < 3) return toolCallReply("getTeamStatus", {});
        if (call === 3) return toolCallReply("answerSubordinate", { questionId: randomUUID(), answer: "x" });
        if (call === 4) return toolCallReply("noSuchTool", {});
        throw new APICallError({
          message: "connect ECONNREFUSED 127.0.0.1:9",
          url: "http://127.0.0.1:9/v1/chat/completions",
          requestBodyValues: {},
          isRetryable: false,
        });
      },
      { summarize: () => "Summary: looked at the team three times." },
    );
    const failing = await createTestEngine(database, { model, config: { contextTokenBudget: 400 } });
    try {
      await assignTask(database.db, failing.jobs, { agentId: lead.id, source: "user", title: "Look at the team" });
      const [ran] = await runUntilQuiet(failing.deps, 3);
      expect(ran!.outcome.status).toBe("failed");
    } finally {
      await failing.close();
    }
    const [session] = await database.db.select().from(workSessions).where(eq(workSessions.agentId, lead.id));
    const result = await trace(session!.id);
    expect(result.session.status).toBe("failed");
    expect(result.marker).toMatch(/^\(error: /);
    expect(result.events.some((event) => event.type === "marker" && event.label === "Error")).toBe(true);
    expect(result.events.some((event) => event.type === "summary")).toBe(true);
    expect(result.spans.some((span) => span.type === "model" && span.purpose === "compaction")).toBe(true);
    const failed = result.spans.filter((span) => span.type === "tool" && span.failed);
    expect(failed.map((span) => span.type === "tool" && span.toolName)).toContain("noSuchTool");
    expect(result.totals.failedToolCalls).toBe(failed.length);
  });

  it("answers 404 for an unknown session", async () => {
    for (const sessionId of [randomUUID(), "nope"]) {
      const response = await api.session.GET(new Request(`http://localhost/api/sessions/${sessionId}`), {
        params: Promise.resolve({ sessionId }),
      });
      expect(response.status).toBe(404);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("not_found:session");
    }
  });
});
