// The timeline's stories (issue 23, item 1), through their route handlers on real sessions: the
// offline model delegates, researches, reports and briefs. Checked: one request is one story
// with each agent's work in words, its duration and cost; the engine records the task of each
// message, model call and session; a story is found from any of its tasks; its steps; a
// webhook starts a story of its own; filters, paging, 400 and 404.
import { randomUUID } from "node:crypto";
import { and, eq, isNotNull } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assignTask } from "@/lib/domain/tasks";
import { getBackgroundConversation } from "@/lib/db/queries";
import { setWebhookSecret } from "@/lib/db/queries/webhooks";
import { messages, tasks, usage, workSessions } from "@/lib/db/schema";
import type { Story, StoryPage } from "@/lib/views/stories";
import type { TimelineEntry } from "@/lib/views/timeline";
import { signedWebhookHeaders } from "@/lib/http/webhook-signature";
import { receiveWebhook } from "@/lib/domain/webhooks";
import { createTestEngine, runUntilQuiet, type TestEngine } from "../support/engine";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

let database: TestDatabase;
let engine: TestEngine;
let tavily: FakeTavily;
let api: {
  stories: typeof import("@/app/api/teams/[teamId]/stories/route");
  story: typeof import("@/app/api/teams/[teamId]/stories/[storyId]/route");
  steps: typeof import("@/app/api/teams/[teamId]/stories/[storyId]/steps/route");
};

beforeAll(async () => {
  database = await createWebTestDatabase();
  api = {
    stories: await import("@/app/api/teams/[teamId]/stories/route"),
    story: await import("@/app/api/teams/[teamId]/stories/[storyId]/route"),
    steps: await import("@/app/api/teams/[teamId]/stories/[storyId]/steps/route"),
  };
  tavily = await startFakeTavily(
    ({ query }) => ({
      results: [
        {
          title: `Solid-state batteries (${query})`,
          url: "https://example.com/ssb",
          content: "Pilot cells reached 500 Wh/kg.",
        },
      ],
    }),
    {
      extract: ({ urls }) => ({
        pages: urls.map((url) => ({
          url,
          title: "Solid-state batteries",
          content: "Pilot cells reached 500 Wh/kg in 2026.",
        })),
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

async function get<T>(
  handler: { GET: (request: Request, context: never) => Promise<Response> },
  path: string,
  params: Record<string, string>,
  status = 200,
): Promise<T> {
  const response = await handler.GET(new Request(`http://localhost${path}`), {
    params: Promise.resolve(params),
  } as never);
  expect(response.status, await response.clone().text()).toBe(status);
  return (await response.json()) as T;
}

const storiesOf = (teamId: string, query = "", status = 200) =>
  get<StoryPage>(api.stories, `/api/teams/${teamId}/stories${query}`, { teamId }, status);
const storyOf = (teamId: string, storyId: string, status = 200) =>
  get<{ story: Story }>(api.story, `/api/teams/${teamId}/stories/${storyId}`, { teamId, storyId }, status);
const stepsOf = (teamId: string, storyId: string, status = 200) =>
  get<{ entries: TimelineEntry[] }>(
    api.steps,
    `/api/teams/${teamId}/stories/${storyId}/steps`,
    { teamId, storyId },
    status,
  );

describe("stories", () => {
  let team: { id: string };
  let lead: { id: string };
  let scout: { id: string };
  let root: { id: string };
  let story: Story;

  beforeAll(async () => {
    const fixture = await createTeamFixture(database.db, { subordinates: ["Scout", "Analyst"] });
    [team, lead, scout] = [fixture.team, fixture.lead, fixture.subordinates[0]!];
    root = await assignTask(database.db, engine.jobs, {
      agentId: lead.id,
      source: "user",
      title: "Research solid-state batteries",
      description: "What changed this year?",
    });
    await runUntilQuiet(engine.deps);
    const page = await storiesOf(team.id);
    expect(page.stories).toHaveLength(1);
    story = page.stories[0]!;
  });

  it("tells one request as one story: the lead's part, each subordinate's work in words with duration and cost, the briefing", () => {
    expect(story).toMatchObject({
      id: root.id,
      title: "Research solid-state batteries",
      request: "What changed this year?",
      startedBy: "You",
      status: "done",
    });
    const [leadPart, ...delegated] = story.parts;
    expect(leadPart).toMatchObject({
      taskId: root.id,
      depth: 0,
      agent: { id: lead.id, role: "lead" },
      status: "completed",
    });
    expect(leadPart!.work).toMatch(/delegated 1 task/);
    expect(delegated).toHaveLength(1);
    expect(delegated[0]).toMatchObject({
      depth: 1,
      parentTaskId: root.id,
      agent: { id: scout.id, name: "Scout" },
      status: "completed",
    });
    expect(delegated[0]!.work).toBe("searched the web once, read 1 page, saved 1 fact");
    expect(delegated[0]!.result).toBeTruthy();
    for (const part of story.parts) {
      expect(part.durationMs).toBeGreaterThanOrEqual(0);
      expect(part.cost.tokens).toBeGreaterThan(0);
    }
    expect(story.cost.tokens).toBe(story.parts.reduce((sum, part) => sum + part.cost.tokens, 0));
    expect(story.inbox.map((item) => item.type)).toEqual(["briefing"]);
    expect(story.agents.map((agent) => agent.name)).toEqual([expect.any(String), "Scout"]);
    expect(story.endedAt).not.toBeNull();
  });

  it("the engine records each work log message's, model call's and session's task", async () => {
    const scoutTask = story.parts[1]!.taskId;
    for (const [agentId, taskId] of [
      [lead.id, root.id],
      [scout.id, scoutTask],
    ] as const) {
      const log = (await getBackgroundConversation(database.db, agentId))!;
      const rows = await database.db
        .select({ taskId: messages.taskId, role: messages.role, content: messages.content })
        .from(messages)
        .where(eq(messages.conversationId, log.id));
      expect(rows.length).toBeGreaterThan(3);
      // Every row of its log, its task's message, tool calls and results, the report back, the wrap-up, belongs to its task.
      expect(rows.filter((row) => row.taskId !== taskId)).toEqual([]);
      const sessions = await database.db
        .select({ taskId: workSessions.taskId })
        .from(workSessions)
        .where(eq(workSessions.agentId, agentId));
      expect(sessions.every((session) => session.taskId === taskId)).toBe(true);
    }
    const calls = await database.db
      .select({ taskId: usage.taskId, purpose: usage.purpose })
      .from(usage)
      .where(and(eq(usage.teamId, team.id), isNotNull(usage.workSessionId)));
    expect(
      calls
        .filter((call) => call.purpose === "work" || call.purpose === "briefing")
        .every((call) => call.taskId === root.id || call.taskId === scoutTask),
    ).toBe(true);
    const [scoutRow] = await database.db
      .select({ rootTaskId: tasks.rootTaskId })
      .from(tasks)
      .where(eq(tasks.id, scoutTask));
    expect(scoutRow!.rootTaskId).toBe(root.id);
  });

  it("a story is found from any of its tasks, and its steps are the timeline's entries of its tasks, oldest first", async () => {
    const scoutTask = story.parts[1]!.taskId;
    expect((await storyOf(team.id, scoutTask)).story.id).toBe(root.id);
    const { entries } = await stepsOf(team.id, scoutTask);
    expect(entries.every((entry, i) => i === 0 || entries[i - 1]!.position <= entry.position)).toBe(true);
    expect(new Set(entries.map((entry) => entry.agent.id))).toEqual(new Set([lead.id, scout.id]));
    expect(entries.map((entry) => entry.kind)).toEqual(expect.arrayContaining(["task", "work", "report", "briefing"]));
    const calls = entries.flatMap((entry) =>
      entry.item.type === "message" ? entry.item.toolCalls.map((call) => call.toolName) : [],
    );
    expect(calls).toEqual(
      expect.arrayContaining(["delegateToAgent", "tavilySearch", "readWebPage", "reportToLead", "createInboxItem"]),
    );
    // Steps carry their session, so each links to a trace.
    expect(entries.filter((entry) => entry.item.type === "message").every((entry) => entry.sessionId !== null)).toBe(
      true,
    );
  });

  it("a webhook starts a story of its own, and the newest story comes first", async () => {
    await setWebhookSecret(database.db, team.id, "whsec_stories");
    const body = new TextEncoder().encode(JSON.stringify({ name: "deploy", status: "failed" }));
    await receiveWebhook(engine.deps, team.id, {
      headers: new Headers(signedWebhookHeaders("whsec_stories", body)),
      body,
    });
    await runUntilQuiet(engine.deps);
    const page = await storiesOf(team.id);
    expect(page.stories.map((each) => each.title)).toEqual(["Webhook deploy", "Research solid-state batteries"]);
    expect(page.stories[0]).toMatchObject({ startedBy: "Webhook", status: "done", source: "webhook" });
    const lead0 = page.stories[0]!.parts[0]!;
    expect(lead0.agent.id).toBe(lead.id);
    const { entries } = await stepsOf(team.id, page.stories[0]!.id);
    expect(entries.some((entry) => entry.item.type === "message" && entry.item.input?.kind === "webhook")).toBe(true);
  });

  it("a subordinate's report on a task the person gave it directly belongs to that task's story, in the lead's log too", async () => {
    const direct = await assignTask(database.db, engine.jobs, {
      agentId: scout.id,
      source: "user",
      title: "Check cobalt prices",
    });
    await runUntilQuiet(engine.deps);
    const leadLog = (await getBackgroundConversation(database.db, lead.id))!;
    const reports = await database.db
      .select({ taskId: messages.taskId, content: messages.content })
      .from(messages)
      .where(and(eq(messages.conversationId, leadLog.id), eq(messages.role, "user")));
    const report = reports.find((row) => row.content.includes(`(task id: ${direct.id})`));
    expect(report?.taskId).toBe(direct.id);
    const { entries } = await stepsOf(team.id, direct.id);
    expect(entries.some((entry) => entry.agent.id === lead.id && entry.kind === "report")).toBe(true);
    // Nothing of the lead's in this story's answer went to another story.
    const { story: other } = await storyOf(team.id, root.id);
    expect(other.parts.map((part) => part.taskId)).not.toContain(direct.id);
    // Every model call of a work session (extraction too) counts toward a story.
    const calls = await database.db
      .select({ taskId: usage.taskId, purpose: usage.purpose })
      .from(usage)
      .where(and(eq(usage.teamId, team.id), isNotNull(usage.workSessionId)));
    expect(calls.filter((call) => call.taskId === null)).toEqual([]);
  });

  it("filters by agent and kind, and pages by story", async () => {
    const analyst = (await createTeamFixture(database.db)).lead;
    expect((await storiesOf(team.id, `?agentId=${scout.id}`)).stories.map((each) => each.title)).toEqual([
      "Check cobalt prices",
      "Research solid-state batteries",
    ]);
    expect((await storiesOf(team.id, `?agentId=${analyst.id}`)).stories).toEqual([]);
    expect((await storiesOf(team.id, "?kind=briefing")).stories.map((each) => each.id)).toContain(root.id);
    expect((await storiesOf(team.id, "?kind=report")).stories.map((each) => each.id)).toEqual([root.id]);
    expect((await storiesOf(team.id, "?kind=alert")).stories).toEqual([]);
    const first = await storiesOf(team.id, "?limit=1");
    expect(first.stories).toHaveLength(1);
    const second = await storiesOf(team.id, `?limit=2&before=${first.nextCursor}`);
    expect(second.stories.map((each) => each.title)).toEqual(["Webhook deploy", "Research solid-state batteries"]);
    expect(second.nextCursor).toBeNull();
  });

  it("answers 404 for an unknown team or story and 400 for a cursor it did not give out", async () => {
    await storiesOf(randomUUID(), "", 404);
    await storyOf(team.id, randomUUID(), 404);
    await stepsOf(team.id, randomUUID(), 404);
    await storyOf(team.id, "not-a-uuid", 404);
    await storiesOf(team.id, "?before=bogus", 400);
    await storiesOf(team.id, "?kind=everything", 400);
    // A task of another team is not this team's story.
    const other = await createTeamFixture(database.db);
    await storyOf(other.team.id, root.id, 404);
  });
});
