import { APICallError } from "ai";
import { and, eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { runWorkSession } from "@/lib/engine/agent";
import {
  CANCELLED_BY_PERSON,
  splitMarker,
  STOPPED_BY_PERSON,
  STOPPED_MARKER,
  taskCancelledMarker,
} from "@/lib/core/formats";
import { endReapedStop } from "@/lib/engine/session-end";
import { describeMarker, describeProblem } from "@/lib/views/plain-words";
import { stopAgent } from "@/lib/engine/stop";
import { estimateTokens } from "@/lib/engine/compaction";
import { streamChatReply } from "@/lib/engine/chat";
import { runScheduledLeadCheckIn } from "@/lib/domain/schedules";
import { assignTask, cancelTask, queueInput } from "@/lib/domain/tasks";
import {
  claimSession,
  finishSessionIfIdle,
  getWorkSession,
  reapStaleSessions,
  requestSessionStop,
  getAllMessages,
  getBackgroundConversation,
  getConversationContext,
  getForegroundConversation,
  getKnowledgeItemsBySourceConversation,
  getTask,
  listTasksByAgent,
  recordUsage,
} from "@/lib/db/queries";
import { deleteModelPrice, upsertModelPrice } from "@/lib/db/queries/model-prices";
import { deleteTeam, updateTeam } from "@/lib/db/queries/teams";
import { tasks, workSessions } from "@/lib/db/schema";
import { startFakeTavily } from "../support/fake-tavily";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { useEngineTests, type TestEngine } from "../support/engine";
import { offeredTools, promptText, sessionModel, textReply, toolCallReply } from "../support/mock-model";

const tests = useEngineTests();
const engineWith = tests.engineWith;
let database: TestDatabase;
beforeAll(() => {
  database = tests.database;
});

describe("work sessions", () => {
  it("use the agent's background conversation: the task as a user message, the answer as an assistant message", async () => {
    const { lead } = await createTeamFixture(database.db);
    const engine = await engineWith({ model: sessionModel(() => textReply("Looked into it: nothing new.")) });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Check the news" });
    const outcome = await runWorkSession(engine.deps, lead.id);
    expect(outcome.status).toBe("completed");
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(log[0]).toMatchObject({ role: "user" });
    expect(log[0]!.content).toMatch(/^Task from the person \(task id: .+\): Check the news/);
    expect(log[1]).toMatchObject({ role: "assistant", content: "Looked into it: nothing new." });
    expect((await listTasksByAgent(database.db, lead.id))[0]).toMatchObject({
      status: "completed",
      result: "Looked into it: nothing new.",
    });
  });

  it("give each call its own result when the provider reuses a call id (call_0 in every answer)", async () => {
    const { lead } = await createTeamFixture(database.db);
    const requests: { toolCallId: string; output: string }[][] = [];
    const model = sessionModel((options, call) => {
      // What each request pairs with each call: the tool results it carries.
      requests.push(
        options.prompt.flatMap((message) =>
          message.role === "tool"
            ? message.content.flatMap((part) =>
                part.type === "tool-result"
                  ? [{ toolCallId: part.toolCallId, output: JSON.stringify(part.output) }]
                  : [],
              )
            : [],
        ),
      );
      if (call === 0)
        return toolCallReply("addKnowledgeItem", { type: "fact", content: "Orbital launches moved to May." }, "call_0");
      if (call === 1) return toolCallReply("searchKnowledge", { query: "orbital launches" }, "call_0");
      if (call === 2) return toolCallReply("searchKnowledge", { query: "submarine" }, "call_0");
      // Two calls with one id in one answer: each still gets its own result.
      if (call === 3) {
        const twice = toolCallReply("searchKnowledge", { query: "orbital launches" }, "call_7");
        return {
          ...twice,
          content: [
            ...twice.content,
            {
              type: "tool-call",
              toolCallId: "call_7",
              toolName: "searchKnowledge",
              input: JSON.stringify({ query: "submarine" }),
            },
          ],
        };
      }
      return textReply("Recorded and checked.");
    });
    const engine = await engineWith({ model });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Record the launch date" });
    const outcome = await runWorkSession(engine.deps, lead.id);
    expect(outcome.status).toBe("completed");

    // Stored: three calls under three ids, each with exactly one result, right after it.
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    const calls = log.flatMap((message) => message.toolCalls ?? []);
    expect(calls.map((call) => call.toolName)).toEqual([
      "addKnowledgeItem",
      "searchKnowledge",
      "searchKnowledge",
      "searchKnowledge",
      "searchKnowledge",
    ]);
    expect(new Set(calls.map((call) => call.toolCallId)).size).toBe(5);
    expect(calls[0]!.toolCallId).toBe("call_0");
    for (const call of calls) {
      const index = log.findIndex((message) =>
        message.toolCalls?.some((stored) => stored.toolCallId === call.toolCallId),
      );
      const position = log[index]!.toolCalls!.findIndex((stored) => stored.toolCallId === call.toolCallId);
      expect(log[index + 1 + position]).toMatchObject({ role: "tool", toolCallId: call.toolCallId });
      expect(log.filter((message) => message.role === "tool" && message.toolCallId === call.toolCallId)).toHaveLength(
        1,
      );
    }
    // Seen: each request pairs the newest call with its own result, not an older call_0's.
    expect(requests[1]!.at(-1)!.output).toMatch(/"saved":true/);
    expect(requests[2]!.at(-1)!.output).toMatch(/Orbital launches moved to May/);
    expect(requests[3]!.at(-1)!.output).toMatch(/No knowledge items match/);
    expect(requests[3]!.map((result) => result.output)).toHaveLength(3);
    // The answer with call_7 twice: the first call's search found the fact, the second's nothing.
    expect(requests[4]!.slice(-2).map((result) => result.output)).toEqual([
      expect.stringMatching(/Orbital launches/),
      expect.stringMatching(/No knowledge items match/),
    ]);
    expect(new Set(requests[4]!.map((result) => result.toolCallId)).size).toBe(5);
    expect((await listTasksByAgent(database.db, lead.id))[0]).toMatchObject({ status: "completed" });
  });

  it("end quietly when the team is deleted while its agent works: nothing to retry, no error logged", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    let calls = 0;
    const model = sessionModel(async (_options, call) => {
      calls += 1;
      // The person deletes the team while the lead thinks about its second step.
      if (call === 1) await deleteTeam(database.db, team.id);
      return toolCallReply("searchKnowledge", { query: `round ${call}` });
    });
    const engine = await engineWith({ model });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Keep searching" });
    const outcome = await runWorkSession(engine.deps, lead.id);
    expect(outcome).toMatchObject({ status: "deleted", error: "its team was deleted", agentName: lead.name });
    expect(engine.logs.join("\n")).not.toMatch(/unexpected error/);
    // Both calls cost something: the one answered after the deletion counts for the team too
    // (and so does the first search's query vector).
    expect(calls).toBe(2);
    const spent =
      await database.sql`select agent_id, purpose from usage where team_id = ${team.id} order by created_at, id`;
    expect(spent.map((row) => [row.agent_id, row.purpose])).toEqual([
      [lead.id, "work"],
      [lead.id, "embedding"],
      [lead.id, "work"],
    ]);
  });

  it("write nothing more once another worker took the agent over (a worker paused past the stale window)", async () => {
    const { lead } = await createTeamFixture(database.db);
    const logId = (await getBackgroundConversation(database.db, lead.id)).id;
    let rowsAtTakeover = 0;
    const model = sessionModel(async (_options, call) => {
      if (call === 1) {
        // While this worker is frozen, the reaper gives up on its session and another worker claims the agent.
        await database.db
          .update(workSessions)
          .set({ status: "interrupted" })
          .where(and(eq(workSessions.agentId, lead.id), eq(workSessions.status, "running")));
        expect(await claimSession(database.db, lead.id, "other-worker")).not.toBeNull();
        rowsAtTakeover = (await getAllMessages(database.db, logId)).length;
      }
      return toolCallReply("searchKnowledge", { query: `round ${call}` });
    });
    const engine = await engineWith({ model });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Keep searching" });
    const outcome = await runWorkSession(engine.deps, lead.id);
    expect(outcome.status).toBe("lost");
    // The frozen worker's answer, results and wrap-up never reach the new session's log.
    expect((await getAllMessages(database.db, logId)).length).toBe(rowsAtTakeover);
    expect(engine.logs.join("\n")).not.toMatch(/unexpected error/);
  });

  it("inject a report that lands mid-session into the very next model call", async () => {
    const { lead } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    let engine!: TestEngine;
    const prompts: string[] = [];
    const model = sessionModel(async (options, call) => {
      prompts.push(promptText(options.prompt));
      if (call === 0) {
        // The report arrives while the lead is thinking about its first step.
        await queueInput(database.db, engine.jobs, lead.id, "Subordinate Scout reports: the launch moved to May.");
        return toolCallReply("getTeamStatus", {});
      }
      return textReply("Noted the launch date.");
    });
    engine = await engineWith({ model });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Track the launch" });
    await runWorkSession(engine.deps, lead.id);
    expect(prompts[0]).not.toContain("launch moved to May");
    expect(prompts[1]).toContain("Subordinate Scout reports: the launch moved to May.");
    // The log shows what each answer answered: the report after the first step, before the answer that saw it.
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(log.slice(0, 5).map((m) => m.role)).toEqual(["user", "assistant", "tool", "user", "assistant"]);
    expect(log[3]!.content).toBe("Subordinate Scout reports: the launch moved to May.");
    expect(log[4]!.content).toBe("Noted the launch date.");
  });

  it("never offer a subordinate the lead's tools, and offer a lead no subordinate tools", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const offered = new Map<string, string[]>([
      ["lead", []],
      ["subordinate", []],
    ]);
    const model = sessionModel((options) => {
      offered
        .get(/lead of the team/.test(promptText(options.prompt)) ? "lead" : "subordinate")!
        .push(...offeredTools(options));
      return textReply("ok");
    });
    const engine = await engineWith({ model });
    await assignTask(database.db, engine.jobs, { agentId: subordinates[0]!.id, source: "lead", title: "Look" });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Look" });
    await runWorkSession(engine.deps, subordinates[0]!.id);
    await runWorkSession(engine.deps, lead.id);
    const leadOnly = ["delegateToAgent", "getTeamStatus", "createInboxItem", "answerSubordinate"];
    expect(offered.get("subordinate")).toEqual(
      expect.arrayContaining([
        "tavilySearch",
        "addKnowledgeItem",
        "searchKnowledge",
        "removeKnowledgeItem",
        "requestInput",
        "reportToLead",
      ]),
    );
    for (const name of leadOnly) expect(offered.get("subordinate")).not.toContain(name);
    expect(offered.get("lead")).toEqual(expect.arrayContaining(leadOnly));
    expect(offered.get("lead")).not.toContain("reportToLead");
  });

  it("refuse a lead's delegation to an agent outside its team, whatever the model says", async () => {
    const mine = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const other = await createTeamFixture(database.db, { subordinates: ["Spy"] });
    const spy = other.subordinates[0]!;
    const model = sessionModel((_options, call) =>
      call === 0
        ? toolCallReply("delegateToAgent", { agentId: spy.id, title: "Exfiltrate", description: "" })
        : textReply("done"),
    );
    const engine = await engineWith({ model });
    await assignTask(database.db, engine.jobs, { agentId: mine.lead.id, source: "user", title: "Go" });
    await runWorkSession(engine.deps, mine.lead.id);
    expect(await listTasksByAgent(database.db, spy.id)).toEqual([]);
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, mine.lead.id)).id);
    expect(log.find((m) => m.role === "tool")!.content).toMatch(/not a subordinate in your team/);
  });

  it("requestInput puts the question in the lead's background conversation; answerSubordinate puts the answer back", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const model = sessionModel((options, call) => {
      const tools = offeredTools(options);
      if (tools.includes("requestInput")) {
        return /Your lead .* answers \(question id: [^)]+\): use the Q3 numbers/.test(promptText(options.prompt))
          ? toolCallReply("reportToLead", { result: "Q3 revenue grew 12%." })
          : // One question: a second one still open would keep the task waiting after the answer (resumeTask).
            call < 1
            ? toolCallReply("requestInput", { question: "Which quarter?" })
            : textReply("Waiting.");
      }
      const leadSaw = options.prompt.filter((message) => message.role !== "system");
      return /asks \(question id: [^)]+\): Which quarter\?/.test(promptText(leadSaw)) &&
        !/use the Q3 numbers/.test(promptText(leadSaw))
        ? toolCallReply("answerSubordinate", { agentId: scout.id, answer: "use the Q3 numbers" })
        : textReply("ok");
    });
    const engine = await engineWith({ model });
    const task = await assignTask(database.db, engine.jobs, {
      agentId: scout.id,
      source: "lead",
      title: "Revenue growth",
    });
    await runWorkSession(engine.deps, scout.id);
    expect((await getTask(database.db, task.id))!.status).toBe("waiting_input");

    await runWorkSession(engine.deps, lead.id);
    const leadLog = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(
      leadLog.some(
        (m) =>
          m.role === "user" &&
          /^Subordinate Scout asks \(question id: [0-9a-f-]{36}, agent id: [0-9a-f-]{36}\): Which quarter\?$/.test(
            m.content,
          ),
      ),
    ).toBe(true);
    expect((await getTask(database.db, task.id))!.status).toBe("in_progress");

    await runWorkSession(engine.deps, scout.id);
    const scoutLog = await getAllMessages(database.db, (await getBackgroundConversation(database.db, scout.id)).id);
    expect(
      scoutLog.some(
        (m) =>
          m.role === "user" &&
          new RegExp(`^Your lead ${lead.name} answers \\(question id: [0-9a-f-]{36}\\): use the Q3 numbers$`).test(
            m.content,
          ),
      ),
    ).toBe(true);
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "completed", result: "Q3 revenue grew 12%." });
    await runWorkSession(engine.deps, lead.id);
    const leadLogAfter = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(
      leadLogAfter.some((m) => m.content === `Subordinate Scout reports (task id: ${task.id}): Q3 revenue grew 12%.`),
    ).toBe(true);
  });

  it("createInboxItem writes the inbox item and the full briefing into the lead's foreground conversation", async () => {
    const { lead, team } = await createTeamFixture(database.db);
    const model = sessionModel((_options, call) =>
      call === 0
        ? toolCallReply("createInboxItem", {
            title: "Launch moved",
            summary: "The launch is now in May.",
            content: "## Details\nMay 14.",
          })
        : textReply("Briefed."),
    );
    const engine = await engineWith({ model });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Brief me" });
    await runWorkSession(engine.deps, lead.id);
    const foreground = await getAllMessages(database.db, (await getForegroundConversation(database.db, lead.id)).id);
    expect(foreground.at(-1)).toMatchObject({ role: "assistant", content: "**Launch moved**\n\n## Details\nMay 14." });
    const items = await database.db.query.inboxItems.findMany({ where: (item, { eq }) => eq(item.teamId, team.id) });
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ summary: "The launch is now in May.", type: "briefing" });
  });

  it("extract knowledge items linked to the background conversation", async () => {
    const { lead } = await createTeamFixture(database.db);
    const model = sessionModel(() => textReply("NVDA reports on May 28."), {
      extract: () =>
        JSON.stringify({ items: [{ type: "fact", content: "NVDA reports earnings on May 28.", confidence: 0.9 }] }),
    });
    const engine = await engineWith({ model });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "When does NVDA report?" });
    await runWorkSession(engine.deps, lead.id);
    const conversation = await getBackgroundConversation(database.db, lead.id);
    const items = await getKnowledgeItemsBySourceConversation(database.db, conversation.id);
    expect(items.map((i) => i.content)).toEqual(["NVDA reports earnings on May 28."]);
  });

  it("a lead's briefing decision is a turn of its background conversation, offered the same tools as its work (the prompt cache), of which only createInboxItem runs", async () => {
    const { lead } = await createTeamFixture(database.db);
    let decisionTools: string[] = [];
    let workTools: string[] = [];
    const model = sessionModel((options) => {
      if (/Decide whether to brief/.test(promptText(options.prompt).slice(-400))) {
        decisionTools = offeredTools(options);
        return textReply("No briefing needed.");
      }
      workTools = offeredTools(options);
      return textReply("Worked.");
    });
    const engine = await engineWith({ model });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Work" });
    await runWorkSession(engine.deps, lead.id);
    expect(decisionTools).toEqual(workTools);
    expect(decisionTools).toContain("createInboxItem");
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(log.slice(-2).map((m) => m.content)).toEqual([
      expect.stringMatching(/Decide whether to brief/),
      "No briefing needed.",
    ]);
  });
});

describe("limits, failures and stops", () => {
  it("a model failure leaves an (error: …) marker and fails the task with a reason", async () => {
    const { lead } = await createTeamFixture(database.db);
    const model = sessionModel(() => {
      throw new APICallError({
        message: "connect ECONNREFUSED 127.0.0.1:9",
        url: "http://127.0.0.1:9/v1/chat/completions",
        requestBodyValues: {},
      });
    });
    const engine = await engineWith({ model });
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Try" });
    const outcome = await runWorkSession(engine.deps, lead.id);
    expect(outcome.status).toBe("failed");
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(log.at(-1)!.content).toMatch(/^\(error: .*ECONNREFUSED/);
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "failed" });
  });

  it("a session that reaches its step limit stops with a marker", async () => {
    const { lead } = await createTeamFixture(database.db);
    const model = sessionModel(() => toolCallReply("searchKnowledge", { query: "again" }));
    const engine = await engineWith({ model, config: { maxStepsPerSession: 3 } });
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Loop" });
    const outcome = await runWorkSession(engine.deps, lead.id);
    expect(outcome).toMatchObject({ status: "failed", steps: 3 });
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(log.at(-1)!.content).toMatch(/limit of 3 tool rounds/);
    expect(log.filter((m) => m.role === "tool")).toHaveLength(3);
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "failed" });
  });

  it("a session over its token budget stops with a marker that says why", async () => {
    const { lead } = await createTeamFixture(database.db);
    const model = sessionModel(() => toolCallReply("searchKnowledge", { query: "again" }));
    // Each mock call reports 15 tokens: the budget runs out on the third step.
    const engine = await engineWith({ model, config: { sessionTokenBudget: 40 } });
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Spend" });
    const outcome = await runWorkSession(engine.deps, lead.id);
    expect(outcome).toMatchObject({ status: "failed", steps: 3 });
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(log.at(-1)!.content).toMatch(
      /^\(stopped: this session used 45 tokens, over its budget of 40 \(SESSION_TOKEN_BUDGET\)\)$/,
    );
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "failed" });
  });

  it("a team over its daily token budget takes no work and cannot chat until tomorrow", async () => {
    const { lead, team } = await createTeamFixture(database.db);
    const engine = await engineWith({
      model: sessionModel(() => textReply("fine")),
      config: { teamDailyTokenBudget: 100 },
    });
    await recordUsage(database.db, {
      agentId: lead.id,
      purpose: "work",
      model: "m",
      inputTokens: 90,
      outputTokens: 20,
    });
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "More" });
    const outcome = await runWorkSession(engine.deps, lead.id);
    expect(outcome).toMatchObject({ status: "over-budget", steps: 0 });
    // No budget of its own: the environment's default applies, and the words say how to change it.
    expect(outcome.error).toBe(
      `the team "${team.name}" used 110 tokens today, over the default daily token budget of 100 (TEAM_DAILY_TOKEN_BUDGET); its work waits until tomorrow (UTC) or until you give the team a budget of its own in the team's Settings, under Usage and budget`,
    );
    // Not begun, not failed: the task waits where it was given.
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "pending" });
    await expect(streamChatReply(engine.deps, lead.id, "hi", new AbortController().signal)).rejects.toMatchObject({
      code: "rate_limited:team_budget",
      status: 429,
      message: `The team "${team.name}" used 110 tokens today, over the default daily token budget of 100 (TEAM_DAILY_TOKEN_BUDGET); the chat is closed until tomorrow (UTC) or until you give the team a budget of its own in the team's Settings, under Usage and budget.`,
    });
  });

  it("a team's own daily token budget, set in the database, replaces the default both ways", async () => {
    const { lead, team } = await createTeamFixture(database.db);
    const engine = await engineWith({
      model: sessionModel(() => textReply("fine")),
      config: { teamDailyTokenBudget: 100 },
    });
    await recordUsage(database.db, {
      agentId: lead.id,
      purpose: "work",
      model: "m",
      inputTokens: 90,
      outputTokens: 20,
    });
    // Over the default, under the team's own: it works.
    await updateTeam(database.db, team.id, { dailyTokenBudget: 1_000 });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Allowed" });
    expect((await runWorkSession(engine.deps, lead.id)).status).toBe("completed");
    // Under the default, over the team's own: it stops, and says the budget is the team's.
    await updateTeam(database.db, team.id, { dailyTokenBudget: 120 });
    const refused = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Refused" });
    const outcome = await runWorkSession(engine.deps, lead.id);
    expect(outcome.status).toBe("over-budget");
    expect(outcome.error).toMatch(
      /^the team ".+" used \d+ tokens today, over its daily token budget of 120; its work waits until tomorrow \(UTC\) or until you raise the budget in the team's Settings, under Usage and budget$/,
    );
    expect(await getTask(database.db, refused.id)).toMatchObject({ status: "pending" });
    await expect(streamChatReply(engine.deps, lead.id, "hi", new AbortController().signal)).rejects.toMatchObject({
      status: 429,
      message: expect.stringMatching(
        /^The team ".+" used \d+ tokens today, over its daily token budget of 120; the chat is closed until tomorrow \(UTC\)/,
      ),
    });
  });

  it("a team's cost budget stops a session once its priced calls reach it, and its task waits", async () => {
    const { lead, team } = await createTeamFixture(database.db);
    // Each mock call: 10 input + 5 output tokens at $1 000 per million = $0.015.
    await upsertModelPrice(database.db, "mock-model-id", {
      inputUsdPerMtok: 1_000,
      cachedInputUsdPerMtok: null,
      outputUsdPerMtok: 1_000,
    });
    await updateTeam(database.db, team.id, { dailyCostBudgetUsd: 0.04 });
    const engine = await engineWith({
      model: sessionModel(() => toolCallReply("searchKnowledge", { query: "again" })),
    });
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Spend money" });
    const outcome = await runWorkSession(engine.deps, lead.id);
    // The session's own calls, priced as they are recorded, reach the budget after the third: the fourth is refused.
    expect(outcome).toMatchObject({ status: "over-budget", steps: 3 });
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(log.at(-1)!.content).toBe(
      `(stopped: the team "${team.name}" spent $0.045 today, over its daily cost budget of $0.04; its work waits until tomorrow (UTC) or until you raise the budget in the team's Settings, under Usage and budget)`,
    );
    // Cut, not failed: the task stays in progress for the session after the budget.
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "in_progress" });
    // A new session reads the team's spending from the usage rows, priced the same way, and takes nothing up.
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "More" });
    expect(await runWorkSession(engine.deps, lead.id)).toMatchObject({
      status: "over-budget",
      steps: 0,
      error: expect.stringContaining("spent $0.045 today"),
    });
    expect((await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id)).length).toBe(
      log.length,
    );
    await deleteModelPrice(database.db, "mock-model-id");
  });

  it("Stop aborts the model call at once, leaves the stopped marker, and cancels the tasks delegated from it", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const model = sessionModel(async (options, call) => {
      if (call === 0)
        return toolCallReply("delegateToAgent", { agentId: subordinates[0]!.id, title: "Dig", description: "" });
      // Then hang until aborted, as a slow model would.
      await new Promise((_, reject) =>
        options.abortSignal?.addEventListener("abort", () => reject(options.abortSignal?.reason)),
      );
      throw new Error("unreachable");
    });
    const engine = await engineWith({ model });
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Research" });
    const running = runWorkSession(engine.deps, lead.id);
    // Wait for the delegation to land, then stop.
    for (let i = 0; i < 100 && (await listTasksByAgent(database.db, subordinates[0]!.id)).length === 0; i++)
      await new Promise((r) => setTimeout(r, 20));
    const stoppedAt = Date.now();
    await stopAgent(database.db, engine.jobs, lead.id);
    const outcome = await running;
    expect(outcome.status).toBe("stopped");
    console.log(`[stop] session stopped ${Date.now() - stoppedAt} ms after the request`);
    // Generous: the point is that it does not wait for the model (which never answers).
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(log.at(-1)).toMatchObject({ role: "assistant", content: STOPPED_MARKER });
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "cancelled" });
    expect((await listTasksByAgent(database.db, subordinates[0]!.id))[0]).toMatchObject({ status: "cancelled" });
    const [session] = await database.db.select().from(workSessions).where(eq(workSessions.agentId, lead.id));
    expect(session).toMatchObject({ status: "stopped" });
  });

  it("cancelling an agent's only task mid-session ends it saying the task was cancelled, not that the person pressed Stop", async () => {
    const { lead } = await createTeamFixture(database.db);
    const model = sessionModel(async (options, call) => {
      if (call === 0) return toolCallReply("searchKnowledge", { query: "tides" });
      // Then hang until aborted, as a slow model would.
      await new Promise((_, reject) =>
        options.abortSignal?.addEventListener("abort", () => reject(options.abortSignal?.reason)),
      );
      throw new Error("unreachable");
    });
    const engine = await engineWith({ model });
    const task = await assignTask(database.db, engine.jobs, {
      agentId: lead.id,
      source: "user",
      title: "Chart the tides",
    });
    const running = runWorkSession(engine.deps, lead.id);
    await expect
      .poll(async () => (await getTask(database.db, task.id))?.status, { timeout: 5_000 })
      .toBe("in_progress");
    await cancelTask(database.db, engine.jobs, task.id);
    expect((await running).status).toBe("stopped");

    const marker = taskCancelledMarker("Chart the tides", CANCELLED_BY_PERSON);
    expect(marker).toBe("(task cancelled: “Chart the tides”. Cancelled by the person.)");
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(log.at(-1)).toMatchObject({ role: "assistant", content: marker });
    expect(log.map((message) => message.content)).not.toContain(STOPPED_MARKER);
    const [session] = await database.db.select().from(workSessions).where(eq(workSessions.agentId, lead.id));
    expect(session).toMatchObject({ status: "stopped", error: marker, cancelledTaskId: task.id });
    // The pages read it back in the person's words.
    expect(describeMarker(splitMarker(log.at(-1)!.content)!.marker).summary).toBe(
      "Stopped: you cancelled its task “Chart the tides”.",
    );
    expect(describeProblem(session!.error!).summary).toBe("Stopped: you cancelled its task “Chart the tides”.");
  });

  it("Stop ends a session at once even while a web search hangs", async () => {
    const { lead } = await createTeamFixture(database.db);
    const tavily = await startFakeTavily(() => new Promise(() => {}));
    try {
      const model = sessionModel((_options, call) =>
        call === 0 ? toolCallReply("tavilySearch", { query: "slow" }) : textReply("unreachable"),
      );
      const engine = await engineWith({
        model,
        config: { search: { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url } },
      });
      await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Search" });
      const running = runWorkSession(engine.deps, lead.id);
      await expect.poll(() => tavily.requests.length, { timeout: 5_000 }).toBe(1);
      const stoppedAt = Date.now();
      await stopAgent(database.db, engine.jobs, lead.id);
      expect((await running).status).toBe("stopped");
      console.log(`[stop] session in a hanging search stopped ${Date.now() - stoppedAt} ms after the request`);
      expect(Date.now() - stoppedAt).toBeLessThan(10_000);
      const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
      expect(log.slice(-2).map((m) => [m.role, m.content])).toEqual([
        ["tool", STOPPED_MARKER],
        ["assistant", STOPPED_MARKER],
      ]);
    } finally {
      await tavily.close();
    }
  });

  it("cancelling a task cancels everything delegated from it, at any depth", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const engine = await engineWith({});
    const root = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Root" });
    const child = await assignTask(database.db, engine.jobs, {
      agentId: subordinates[0]!.id,
      source: "lead",
      title: "Child",
      parentTaskId: root.id,
    });
    const grandchild = await assignTask(database.db, engine.jobs, {
      agentId: subordinates[0]!.id,
      source: "lead",
      title: "Grandchild",
      parentTaskId: child.id,
    });
    await database.db.update(tasks).set({ status: "completed" }).where(eq(tasks.id, grandchild.id));
    const { task, cancelled } = await cancelTask(database.db, engine.jobs, root.id);
    expect(task.status).toBe("cancelled");
    expect(cancelled.map((t) => t.id).sort()).toEqual([root.id, child.id].sort());
    expect((await getTask(database.db, grandchild.id))!.status).toBe("completed");
  });

  it("at most one session per agent: a second claim waits while the first is alive, and takes over a dead one", async () => {
    const { lead } = await createTeamFixture(database.db);
    const first = await claimSession(database.db, lead.id, "a");
    expect(first).not.toBeNull();
    expect(await claimSession(database.db, lead.id, "b")).toBeNull();
    await database.db
      .update(workSessions)
      .set({ heartbeatAt: new Date(Date.now() - 60_000) })
      .where(eq(workSessions.id, first!.id));
    const second = await claimSession(database.db, lead.id, "b");
    expect(second).not.toBeNull();
    const [old] = await database.db
      .select()
      .from(workSessions)
      .where(and(eq(workSessions.id, first!.id)));
    expect(old!.status).toBe("interrupted");
  });

  it("a session that finishes quietly as a Stop commits is not recorded as completed: it goes round and ends stopped", async () => {
    const { lead } = await createTeamFixture(database.db);
    const session = await claimSession(database.db, lead.id, "a");
    // The Stop committed while the session waited for the agent's lock to finish.
    await requestSessionStop(database.db, lead.id);
    expect(await finishSessionIfIdle(database.db, session!.id, lead.id, 3)).toBe(false);
    expect(await getWorkSession(database.db, session!.id)).toMatchObject({ status: "running" });
    const quiet = await claimSession(database.db, (await createTeamFixture(database.db)).lead.id, "b");
    expect(await finishSessionIfIdle(database.db, quiet!.id, quiet!.agentId, 3)).toBe(true);
    expect(await getWorkSession(database.db, quiet!.id)).toMatchObject({ status: "completed" });
  });

  it("a Stop whose session's worker died before ending it: the reaper ends it stopped, with the Stop's marker in the log", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const stopped = await claimSession(database.db, lead.id, "vm:gone");
    const crashed = await claimSession(database.db, subordinates[0]!.id, "vm:gone");
    await requestSessionStop(database.db, lead.id);
    await database.db.update(workSessions).set({ heartbeatAt: new Date(Date.now() - 600_000) });
    const reaped = await reapStaleSessions(database.db, 60);
    expect(reaped).toEqual(
      expect.arrayContaining([
        { agentId: lead.id, sessionId: stopped!.id, stopRequested: true },
        { agentId: subordinates[0]!.id, sessionId: crashed!.id, stopRequested: false },
      ]),
    );
    for (const session of reaped.filter((each) => each.stopRequested)) await endReapedStop(database.db, session);
    expect(await getWorkSession(database.db, stopped!.id)).toMatchObject({
      status: "stopped",
      error: STOPPED_BY_PERSON,
    });
    expect(await getWorkSession(database.db, crashed!.id)).toMatchObject({ status: "interrupted" });
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(log.at(-1)).toMatchObject({ role: "assistant", content: STOPPED_MARKER });
  });

  it("a scheduled check-in is skipped while the lead is working", async () => {
    const { lead } = await createTeamFixture(database.db);
    const engine = await engineWith({});
    const session = await claimSession(database.db, lead.id, "busy");
    expect(await runScheduledLeadCheckIn(engine.deps, lead.id)).toBe("skipped");
    await database.db.update(workSessions).set({ status: "completed" }).where(eq(workSessions.id, session!.id));
    expect(await runScheduledLeadCheckIn(engine.deps, lead.id)).toBe("started");
    expect((await listTasksByAgent(database.db, lead.id))[0]).toMatchObject({ source: "schedule", status: "pending" });
  });
});

describe("compaction in a session", () => {
  it("chains summaries, keeps each tool call with its result, and keeps every call within budget", async () => {
    const { lead } = await createTeamFixture(database.db);
    const budget = 1_500;
    const promptSizes: number[] = [];
    let summaries = 0;
    const model = sessionModel(
      (options, call) => {
        promptSizes.push(estimateTokens(JSON.stringify(options.prompt)));
        return call < 40
          ? toolCallReply("searchKnowledge", { query: `topic ${call} ${"detail ".repeat(40)}` })
          : textReply("Finished the survey.");
      },
      { summarize: () => `Summary ${++summaries}: surveyed topics so far; the task "Survey" is in progress.` },
    );
    const engine = await engineWith({ model, config: { contextTokenBudget: budget, maxStepsPerSession: 60 } });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Survey" });
    const outcome = await runWorkSession(engine.deps, lead.id);
    expect(outcome.status).toBe("completed");

    const conversation = await getBackgroundConversation(database.db, lead.id);
    const log = await getAllMessages(database.db, conversation.id);
    const summaryRows = log.filter((m) => m.role === "summary");
    expect(summaryRows.length).toBeGreaterThanOrEqual(3);
    for (const summary of summaryRows) {
      const before = log[log.findIndex((m) => m.id === summary.id) - 1]!;
      expect(summary.previousMessageId).toBe(before.id);
      // The message a summary follows is never a tool call still waiting for its result.
      expect(before.role === "assistant" && (before.toolCalls?.length ?? 0) > 0).toBe(false);
    }
    const context = await getConversationContext(database.db, conversation.id);
    expect(context[0]!.role).toBe("summary");
    expect(Math.max(...promptSizes)).toBeLessThanOrEqual(budget);
  });
});
