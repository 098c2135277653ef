// What is happening now and what happened since the person last looked (issue 14, item 1):
// getTeamActivity on sessions written as the engine writes them (a tool call in flight, a
// model call after a tool's result, a lead whose subordinate works, nothing running), for
// two teams in one call; and getSinceLastVisit's per-team news with its cut and counts.
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  appendMessages,
  claimSession,
  createInboxItem,
  createKnowledgeItem,
  createTask,
  endSession,
  getBackgroundConversation,
  recordUsage,
} from "@/lib/db/queries";
import { activityState } from "@/lib/views/activity";
import { tasks, teams } from "@/lib/db/schema";
import { getSinceLastVisit, SINCE_LAST_VISIT_LIMIT } from "@/lib/views/since-last-visit";
import { setSessionTask } from "@/lib/db/queries/work-sessions";
import { getTeamActivity } from "@/lib/views/team-activity";
import { describeToolCall } from "@/lib/views/tool-labels";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTeamFixture } from "../support/fixtures";

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

async function startTask(agentId: string, title: string) {
  const task = await createTask(database.db, { agentId, source: "lead", title });
  await database.db.update(tasks).set({ status: "in_progress", startedAt: new Date() }).where(eq(tasks.id, task.id));
  return task;
}

async function endTask(
  agentId: string,
  title: string,
  status: "completed" | "failed",
  completedAt: Date,
  result = `Result of ${title}`,
) {
  const task = await createTask(database.db, { agentId, source: "lead", title });
  await database.db
    .update(tasks)
    .set({ status, result, startedAt: completedAt, completedAt })
    .where(eq(tasks.id, task.id));
  return task;
}

describe("getTeamActivity", () => {
  it("says which tool runs, since when and on which task; a lead with a working subordinate says so; an idle team says nothing", async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout", "Reader"] });
    const [scout, reader] = subordinates as [
      NonNullable<(typeof subordinates)[0]>,
      NonNullable<(typeof subordinates)[0]>,
    ];
    const quiet = await createTeamFixture(database.db, { subordinates: ["Idler"] });

    await startTask(lead.id, "Brief me on tidal power");
    const scoutTask = await startTask(scout.id, "Find tidal lagoon sites");
    const scoutSession = (await claimSession(database.db, scout.id, "test-worker"))!;
    const scoutLog = await getBackgroundConversation(database.db, scout.id);
    // One model call made (its usage row), which asked for a search that has no result yet.
    const [, call] = await appendMessages(database.db, scoutLog.id, [
      { role: "user", content: "Task: Find tidal lagoon sites" },
      {
        role: "assistant",
        content: "",
        toolCalls: [{ toolCallId: "call-1", toolName: "tavilySearch", args: { query: "tidal lagoon sites UK" } }],
      },
    ]);
    await recordUsage(database.db, {
      agentId: scout.id,
      conversationId: scoutLog.id,
      purpose: "work",
      model: "m",
      workSessionId: scoutSession.id,
    });

    // Reader's search came back: the model is being called again.
    const readerSession = (await claimSession(database.db, reader.id, "test-worker"))!;
    const readerLog = await getBackgroundConversation(database.db, reader.id);
    const readerRows = await appendMessages(database.db, readerLog.id, [
      { role: "user", content: "Task: Read the report" },
      {
        role: "assistant",
        content: "",
        toolCalls: [{ toolCallId: "call-2", toolName: "readWebPage", args: { url: "https://example.com/report" } }],
      },
      { role: "tool", content: "The page says…", toolCallId: "call-2" },
    ]);
    await recordUsage(database.db, {
      agentId: reader.id,
      conversationId: readerLog.id,
      purpose: "work",
      model: "m",
      workSessionId: readerSession.id,
    });

    const activity = await getTeamActivity(database.db, [team.id, quiet.team.id]);
    const agents = activity.get(team.id)!;
    expect(agents.map((agent) => agent.name)).toEqual([lead.name, "Scout", "Reader"]);
    const [leadNow, scoutNow, readerNow] = agents;

    expect(scoutNow!.session).toMatchObject({ id: scoutSession.id, steps: 1, stopping: false });
    expect(scoutNow!.task).toEqual({ id: scoutTask.id, title: "Find tidal lagoon sites", status: "in_progress" });
    expect(scoutNow!.step).toEqual({
      kind: "tool",
      toolName: "tavilySearch",
      label: "Searching the web for “tidal lagoon sites UK”",
      since: call!.createdAt.toISOString(),
    });

    // After one call and its tool, the second model call is step 2, since the tool's result.
    expect(readerNow!.step).toEqual({
      kind: "model",
      label: "Thinking (calling the model)",
      since: readerRows[2]!.createdAt.toISOString(),
    });
    expect(readerNow!.session!.steps).toBe(2);

    // The lead runs nothing but is on a task its subordinates work on.
    expect(leadNow!.session).toBeNull();
    expect(leadNow!.step).toBeNull();
    expect(leadNow!.task?.title).toBe("Brief me on tidal power");
    expect(leadNow!.subordinatesWorking).toBe(2);

    // The result arrives: Scout is back to the model.
    await appendMessages(database.db, scoutLog.id, [{ role: "tool", content: "Results…", toolCallId: "call-1" }]);
    const after = (await getTeamActivity(database.db, [team.id])).get(team.id)!;
    expect(after[1]!.step?.kind).toBe("model");

    // A team with nothing running or open: every agent idle.
    const idle = activity.get(quiet.team.id)!;
    expect(idle).toHaveLength(2);
    expect(
      idle.every(
        (agent) =>
          agent.session === null && agent.step === null && agent.task === null && agent.subordinatesWorking === 0,
      ),
    ).toBe(true);
    expect(await getTeamActivity(database.db, [])).toEqual(new Map());
  });

  it("names the task the running session is on, not the open task started last", async () => {
    const { team, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const older = await startTask(scout.id, "Older task, back in focus");
    await new Promise((resolve) => setTimeout(resolve, 5));
    await startTask(scout.id, "Newer task, waiting on its own");
    const session = (await claimSession(database.db, scout.id, "test-worker"))!;
    await setSessionTask(database.db, session.id, older.id);
    const [, scoutNow] = (await getTeamActivity(database.db, [team.id])).get(team.id)!;
    expect(scoutNow!.task).toMatchObject({ id: older.id, title: "Older task, back in focus" });
  });

  it("never calls an agent with a waiting task idle: queued before a worker takes it up, retrying after an interrupted session", async () => {
    const { team, lead } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const given = await createTask(database.db, { agentId: lead.id, source: "user", title: "Research grid storage" });
    const queued = (await getTeamActivity(database.db, [team.id])).get(team.id)![0]!;
    expect(queued.task).toEqual({ id: given.id, title: "Research grid storage", status: "pending" });
    expect(activityState(queued)).toBe("queued");

    // The database went away under the session: it ended interrupted and its job is retried.
    const session = await claimSession(database.db, lead.id, "test-worker");
    await endSession(database.db, session!.id, "interrupted", {
      steps: 1,
      error: 'Failed query: select "id" from "tasks" params: 1',
    });
    const retrying = (await getTeamActivity(database.db, [team.id])).get(team.id)![0]!;
    expect(activityState(retrying)).toBe("retrying");

    // Taken up again: working; once the task is done, idle.
    const again = await claimSession(database.db, lead.id, "test-worker");
    expect(activityState((await getTeamActivity(database.db, [team.id])).get(team.id)![0]!)).toBe("working");
    await endSession(database.db, again!.id, "completed", { steps: 1 });
    await database.db.update(tasks).set({ status: "completed", completedAt: new Date() }).where(eq(tasks.id, given.id));
    expect(activityState((await getTeamActivity(database.db, [team.id])).get(team.id)![0]!)).toBe("idle");
    await database.db.delete(teams).where(eq(teams.id, team.id)); // its ended task is not news for the test below
  });

  it("describes tool calls in words, naming the subordinate a lead delegates to", () => {
    const names = new Map([["a1", "Scout"]]);
    expect(
      describeToolCall("delegateToAgent", { agentId: "a1", title: "Find sites" }, "running", undefined, names),
    ).toBe("Delegating to Scout: “Find sites”");
    expect(describeToolCall("readWebPage", { url: "https://example.com/x" }, "running")).toBe("Reading example.com");
    expect(describeToolCall("github__create_issue", {}, "running")).toBe("Using create_issue (github)");
    expect(describeToolCall("tavilySearch", { query: "x".repeat(200) }, "running")).toMatch(
      /^Searching the web for “x{79}…”$/,
    );
    expect(describeToolCall("somethingNew", null, "running")).toBe("Using somethingNew");
  });
});

describe("getSinceLastVisit", () => {
  it("lists per team what finished, failed, was briefed and learned after the time, newest first, cut with counts", async () => {
    const since = new Date(Date.now() - 60 * 60 * 1000);
    const before = new Date(since.getTime() - 1000);
    const { team, lead, subordinates } = await createTeamFixture(database.db, {
      subordinates: ["Analyst"],
      name: "Wave desk",
    });
    const analyst = subordinates[0]!;
    const quiet = await createTeamFixture(database.db, { name: "Quiet desk" });

    await endTask(analyst.id, "Old finished work", "completed", before);
    for (let i = 1; i <= SINCE_LAST_VISIT_LIMIT + 2; i++)
      await endTask(analyst.id, `Finished ${i}`, "completed", new Date(since.getTime() + i * 1000));
    const failed = await endTask(
      analyst.id,
      "Broken work",
      "failed",
      new Date(since.getTime() + 500),
      "The source was down.",
    );
    await endTask(quiet.lead.id, "Quiet old work", "completed", before);
    const briefing = await createInboxItem(database.db, {
      teamId: team.id,
      agentId: lead.id,
      type: "briefing",
      title: "Waves this week",
      summary: "Two new farms.",
      content: "…",
    });
    await createInboxItem(database.db, {
      teamId: team.id,
      agentId: lead.id,
      type: "alert",
      title: "Not news here",
      summary: "An alert.",
      content: "…",
    });
    const knowledge = await createKnowledgeItem(database.db, {
      agentId: analyst.id,
      type: "fact",
      content: "Wave farm X produces 5 MW.",
    });

    const news = await getSinceLastVisit(database.db, since);
    expect(news.map((entry) => entry.teamName)).toEqual(["Wave desk"]);
    const [wave] = news;
    expect(wave).toMatchObject({ completed: SINCE_LAST_VISIT_LIMIT + 2, failed: 1, briefings: 1, knowledge: 1 });
    const finished = wave!.tasks.filter((task) => task.status === "completed").map((task) => task.title);
    expect(finished).toEqual([7, 6, 5, 4, 3].map((i) => `Finished ${i}`));
    expect(wave!.tasks.find((task) => task.status === "failed")).toMatchObject({
      id: failed.id,
      result: "The source was down.",
      agentName: "Analyst",
    });
    expect(wave!.briefingItems).toEqual([
      expect.objectContaining({ id: briefing.id, title: "Waves this week", summary: "Two new farms." }),
    ]);
    expect(wave!.knowledgeItems).toEqual([
      expect.objectContaining({ id: knowledge.id, type: "fact", content: "Wave farm X produces 5 MW." }),
    ]);

    // Marked as seen after all of it: nothing new.
    expect(await getSinceLastVisit(database.db, new Date(Date.now() + 1000))).toEqual([]);
  });
});
