// The person in the loop (flow 8): an agent asks its person and waits; a tool call under an
// `ask` policy waits, durably and without a worker, for Approve / Edit and approve / Deny,
// then runs exactly once or tells the model why not. Several calls of one step each get
// their own approval and resolve in any order, and every decision reaches its own call.
import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult } from "@ai-sdk/provider";
import { and, eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { runWorkSession } from "@/lib/engine/agent";
import { decideApproval } from "@/lib/engine/approvals";
import { resumeChat, streamChatReply } from "@/lib/engine/chat";
import { compactConversation } from "@/lib/engine/compaction";
import { parseLogInput } from "@/lib/core/formats";
import { toModelMessages } from "@/lib/engine/model-messages";
import { answerQuestionFromPerson } from "@/lib/domain/questions";
import { assignTask, cancelTask } from "@/lib/domain/tasks";
import { setTeamStatus } from "@/lib/domain/teams";
import { setToolPolicy } from "@/lib/engine/tool-policies";
import { getAllMessages, getBackgroundConversation, getForegroundConversation, getTask } from "@/lib/db/queries";
import { listAgentApprovals } from "@/lib/db/queries/approvals";
import {
  agentInputs,
  agents as agentsTable,
  approvals,
  inboxItems,
  knowledgeItems,
  questions,
  tasks as tasksTable,
  workSessions,
} from "@/lib/db/schema";
import { CadreError } from "@/lib/errors";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { runUntilQuiet, useEngineTests } from "../support/engine";
import {
  chatAndSessionModel,
  offeredTools,
  promptText,
  sessionModel,
  textReply,
  toolCallReply,
} from "../support/mock-model";

const tests = useEngineTests();
let database: TestDatabase;
beforeAll(() => {
  database = tests.database;
});

const lastMessage = (options: LanguageModelV4CallOptions) => promptText(options.prompt.slice(-1));

/** One model step that calls several tools at once. */
function parallelCalls(calls: { id: string; toolName: string; args: object }[]): LanguageModelV4GenerateResult {
  return {
    content: [
      { type: "text", text: "Recording both findings." },
      ...calls.map((call) => ({
        type: "tool-call" as const,
        toolCallId: call.id,
        toolName: call.toolName,
        input: JSON.stringify(call.args),
      })),
    ],
    finishReason: { unified: "tool-calls", raw: undefined },
    usage: {
      inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: undefined },
      outputTokens: { total: 5, text: 5, reasoning: undefined },
    },
    warnings: [],
  };
}

async function backgroundLog(agentId: string) {
  return getAllMessages(database.db, (await getBackgroundConversation(database.db, agentId)).id);
}

async function expectCadreError(promise: Promise<unknown>, code: string): Promise<CadreError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(CadreError);
  expect((error as CadreError).code).toBe(code);
  return error as CadreError;
}

describe("tool approvals", () => {
  it("two calls of one step wait apart, resolve in reverse order, and each decision reaches its own call", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await setToolPolicy(database.db, team.id, { toolName: "addKnowledgeItem", policy: "ask", agentId: null });
    const seen: string[] = [];
    const engine = await tests.engineWith({
      model: sessionModel((options) => {
        const last = lastMessage(options);
        seen.push(promptText(options.prompt));
        if (/^Task from the person/.test(last)) {
          return parallelCalls([
            { id: "call-a", toolName: "addKnowledgeItem", args: { type: "fact", content: "Fact A", confidence: 0.5 } },
            { id: "call-b", toolName: "addKnowledgeItem", args: { type: "fact", content: "Fact B", confidence: 0.5 } },
          ]);
        }
        return textReply("Both calls are settled.");
      }),
    });
    const task = await assignTask(database.db, engine.jobs, {
      agentId: lead.id,
      source: "user",
      title: "Record two facts",
    });

    // The session ends: the step's calls wait for the person, the task waits, no worker is held.
    expect((await runWorkSession(engine.deps, lead.id)).status).toBe("completed");
    const waiting = await listAgentApprovals(database.db, lead.id);
    const a = waiting.find((approval) => approval.toolCallId === "call-a");
    const b = waiting.find((approval) => approval.toolCallId === "call-b");
    expect(waiting).toHaveLength(2);
    expect(a).toMatchObject({ status: "pending", taskId: task.id, reason: "Recording both findings." });
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "waiting_input" });
    expect(
      await database.db
        .select()
        .from(workSessions)
        .where(and(eq(workSessions.agentId, lead.id), eq(workSessions.status, "running"))),
    ).toHaveLength(0);
    const items = await database.db.select().from(inboxItems).where(eq(inboxItems.type, "approval"));
    expect(items.map((item) => item.approvalId).sort()).toEqual([a!.id, b!.id].sort());
    expect(await database.db.select().from(knowledgeItems).where(eq(knowledgeItems.agentId, lead.id))).toHaveLength(0);
    // Nothing filled the waiting calls in.
    expect((await backgroundLog(lead.id)).filter((message) => message.role === "tool")).toHaveLength(0);

    // B first, with an edit: it runs with the edited input, and the task still waits for A.
    await decideApproval(database.db, engine.jobs, b!.id, {
      decision: "approve",
      input: { type: "fact", content: "Fact B, edited", confidence: 0.9 },
    });
    const callsBefore = seen.length;
    await runWorkSession(engine.deps, lead.id);
    expect(
      (await database.db.select().from(knowledgeItems).where(eq(knowledgeItems.agentId, lead.id))).map(
        (item) => item.content,
      ),
    ).toEqual(["Fact B, edited"]);
    expect(seen.length).toBe(callsBefore); // no model call while A waits
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "waiting_input" });

    // A denied: its result says so, the model goes on seeing both outcomes beside their own calls.
    await decideApproval(database.db, engine.jobs, a!.id, { decision: "deny", reason: "not a fact I trust" });
    await runUntilQuiet(engine.deps);
    const log = await backgroundLog(lead.id);
    const resultOf = (id: string) =>
      log.find((message) => message.role === "tool" && message.toolCallId === id)?.content;
    expect(resultOf("call-a")).toBe("Denied by the person: not a fact I trust");
    expect(resultOf("call-b")).toContain('"saved":true');
    expect(
      (await database.db.select().from(knowledgeItems).where(eq(knowledgeItems.agentId, lead.id))).map(
        (item) => item.content,
      ),
    ).toEqual(["Fact B, edited"]);
    const continued = seen.at(-1)!;
    expect(continued).toContain("Denied by the person: not a fact I trust");
    expect(await getTask(database.db, task.id)).toMatchObject({
      status: "completed",
      result: "Both calls are settled.",
    });
    const all = await listAgentApprovals(database.db, lead.id);
    expect(all.every((approval) => approval.resolvedAt !== null)).toBe(true);
    // The log loads back into valid model messages: every call followed by its result.
    const messages = toModelMessages(log);
    const calls = messages.flatMap((m) =>
      m.role === "assistant" && Array.isArray(m.content) ? m.content.filter((p) => p.type === "tool-call") : [],
    );
    const results = messages.flatMap((m) =>
      m.role === "tool" ? m.content.flatMap((part) => (part.type === "tool-result" ? [part] : [])) : [],
    );
    expect(results.map((r) => r.toolCallId).sort()).toEqual(calls.map((c) => c.toolCallId).sort());
  });

  it("a second decision is a 409, an edit that does not fit the tool is a 400, a cancelled task withdraws its calls", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await setToolPolicy(database.db, team.id, { toolName: "addKnowledgeItem", policy: "ask", agentId: lead.id });
    let n = 0;
    const engine = await tests.engineWith({
      model: sessionModel((options) =>
        /^Task from the person/.test(lastMessage(options))
          ? toolCallReply("addKnowledgeItem", { type: "fact", content: `Fact ${++n}` })
          : textReply("Done."),
      ),
    });
    const first = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "One" });
    await runWorkSession(engine.deps, lead.id);
    const [approval] = await listAgentApprovals(database.db, lead.id);
    await expectCadreError(
      decideApproval(database.db, engine.jobs, approval!.id, {
        decision: "approve",
        input: { type: "rumour", content: 5 },
      }),
      "bad_request:approval_input",
    );
    await decideApproval(database.db, engine.jobs, approval!.id, { decision: "deny", reason: "no" });
    const again = await expectCadreError(
      decideApproval(database.db, engine.jobs, approval!.id, { decision: "approve" }),
      "conflict:approval_decided",
    );
    expect(again.message).toMatch(/denied already/);
    await runUntilQuiet(engine.deps);
    expect(await getTask(database.db, first.id)).toMatchObject({ status: "completed" });

    const second = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Two" });
    await runWorkSession(engine.deps, lead.id);
    const [waiting] = await listAgentApprovals(database.db, lead.id);
    expect(waiting).toMatchObject({ status: "pending", taskId: second.id });
    await cancelTask(database.db, engine.jobs, second.id);
    const withdrawn = await expectCadreError(
      decideApproval(database.db, engine.jobs, waiting!.id, { decision: "approve" }),
      "conflict:approval_withdrawn",
    );
    expect(withdrawn.message).toMatch(/cancelled/);
    await runUntilQuiet(engine.deps);
    const log = await backgroundLog(lead.id);
    expect(log.find((message) => message.toolCallId === waiting!.toolCallId)?.content).toMatch(
      /^\(not run: its task "Two" was cancelled\)$/,
    );
    expect(await database.db.select().from(knowledgeItems).where(eq(knowledgeItems.agentId, lead.id))).toHaveLength(0);
  });

  it("policies: deny is not offered, an agent's own rule beats the team's, defaults are auto", async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    await setToolPolicy(database.db, team.id, { toolName: "tavilySearch", policy: "deny", agentId: null });
    await setToolPolicy(database.db, team.id, { toolName: "tavilySearch", policy: "auto", agentId: scout.id });
    const offered = new Map<string, string[]>();
    const engine = await tests.engineWith({
      model: sessionModel((options) => {
        const who = /the lead of the team/.test(promptText(options.prompt.slice(0, 1))) ? "lead" : "scout";
        if (!offered.has(who)) offered.set(who, offeredTools(options)); // the work turn's, not the wrap-up's
        return textReply("Done.");
      }),
    });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Look" });
    await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "user", title: "Look" });
    await runUntilQuiet(engine.deps);
    expect(offered.get("lead")).not.toContain("tavilySearch");
    expect(offered.get("lead")).toContain("delegateToAgent");
    expect(offered.get("scout")).toContain("tavilySearch");
    await expectCadreError(
      setToolPolicy(database.db, team.id, { toolName: "launchMissiles", policy: "ask", agentId: null }),
      "bad_request:tool",
    );
  });

  it("compaction never separates a waiting call from its result", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await setToolPolicy(database.db, team.id, { toolName: "addKnowledgeItem", policy: "ask", agentId: null });
    const engine = await tests.engineWith({
      model: sessionModel((options) =>
        /^Task from the person/.test(lastMessage(options))
          ? toolCallReply("addKnowledgeItem", { type: "fact", content: "x".repeat(50) })
          : textReply("Done."),
      ),
    });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Keep" });
    await runWorkSession(engine.deps, lead.id);
    const conversation = await getBackgroundConversation(database.db, lead.id);
    const options = {
      db: database.db,
      model: engine.deps.chooseModel(null),
      agentId: lead.id,
      budget: 100,
      instructions: "",
    };
    expect(await compactConversation(options, conversation.id)).toBeNull();
    const [approval] = await listAgentApprovals(database.db, lead.id);
    await decideApproval(database.db, engine.jobs, approval!.id, { decision: "approve" });
    await runUntilQuiet(engine.deps);
    expect(await compactConversation(options, conversation.id)).not.toBeNull();
  });
});

describe("questions to the person", () => {
  it("askPerson waits in the inbox and the chat; the answer reaches the asking agent and its task goes on", async () => {
    const { lead } = await createTeamFixture(database.db);
    const prompts: string[] = [];
    const engine = await tests.engineWith({
      model: sessionModel((options) => {
        const last = lastMessage(options);
        prompts.push(last);
        if (/^Task from the person/.test(last))
          return toolCallReply("askPerson", { question: "Which market matters more, EU or US?" });
        if (/^The person answers/.test(last)) return textReply("Focusing on the EU, as asked.");
        return textReply("Waiting for the person.");
      }),
    });
    const task = await assignTask(database.db, engine.jobs, {
      agentId: lead.id,
      source: "user",
      title: "Market study",
    });
    await runUntilQuiet(engine.deps);
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "waiting_input" });
    const [question] = await database.db.select().from(questions).where(eq(questions.agentId, lead.id));
    expect(question).toMatchObject({ status: "open", recipientAgentId: null, taskId: task.id });
    const [item] = await database.db.select().from(inboxItems).where(eq(inboxItems.questionId, question!.id));
    expect(item).toMatchObject({ type: "question", taskId: task.id });
    const chat = await getAllMessages(database.db, (await getForegroundConversation(database.db, lead.id)).id);
    expect(chat.at(-1)).toMatchObject({ role: "assistant", inboxItemId: item!.id });
    expect(chat.at(-1)!.content).toContain("Which market matters more");

    await answerQuestionFromPerson(database.db, engine.jobs, question!.id, "EU");
    const [input] = await database.db.select().from(agentInputs).where(eq(agentInputs.agentId, lead.id));
    expect(parseLogInput(input!.content)).toEqual({ kind: "person-answer", questionId: question!.id, answer: "EU" });
    await expectCadreError(
      answerQuestionFromPerson(database.db, engine.jobs, question!.id, "US"),
      "conflict:question_answered",
    );
    await runUntilQuiet(engine.deps);
    expect(prompts).toContain(`The person answers (question id: ${question!.id}): EU`);
    expect(await getTask(database.db, task.id)).toMatchObject({
      status: "completed",
      result: "Focusing on the EU, as asked.",
    });
    const [read] = await database.db.select().from(inboxItems).where(eq(inboxItems.id, item!.id));
    expect(read!.readAt).not.toBeNull();
  });

  it("answering a question whose task was cancelled says so (409)", async () => {
    const { lead } = await createTeamFixture(database.db);
    const engine = await tests.engineWith({
      model: sessionModel((options) =>
        /^Task from the person/.test(lastMessage(options))
          ? toolCallReply("askPerson", { question: "Go ahead?" })
          : textReply("Waiting."),
      ),
    });
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Risky move" });
    await runUntilQuiet(engine.deps);
    const [question] = await database.db.select().from(questions).where(eq(questions.agentId, lead.id));
    await cancelTask(database.db, engine.jobs, task.id);
    const error = await expectCadreError(
      answerQuestionFromPerson(database.db, engine.jobs, question!.id, "yes"),
      "conflict:question_withdrawn",
    );
    expect(error.message).toContain('"Risky move"');
    expect(error.message).toContain("cancelled");
    const [unchanged] = await database.db.select().from(approvals).where(eq(approvals.agentId, lead.id));
    expect(unchanged).toBeUndefined();
  });
});

describe("approvals in the chat", () => {
  it("a chat call waits for a decision; after it, a worker carries it out and the reply goes on; a new message withdraws what still waits", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await setToolPolicy(database.db, team.id, { toolName: "createTask", policy: "ask", agentId: null });
    const engine = await tests.engineWith({
      model: chatAndSessionModel((options) => {
        const last = options.prompt.at(-1);
        if (last?.role === "tool") {
          const output = promptText([last]);
          return textReply(
            /Denied by the person|not run/.test(output)
              ? "Understood, no task then."
              : "The task is created; the team is on it.",
          );
        }
        const text = lastMessage(options);
        if (/research/i.test(text)) return toolCallReply("createTask", { title: `Research: ${text.slice(0, 40)}` });
        return textReply("Hello.");
      }),
    });
    const chatTurn = async (text: string) => {
      const response = await streamChatReply(engine.deps, lead.id, text, new AbortController().signal);
      return response.text();
    };
    const stream = await chatTurn("please research tidal power");
    expect(stream).toContain("tool-approval-request");
    const conversation = await getForegroundConversation(database.db, lead.id);
    const [waiting] = await listAgentApprovals(database.db, lead.id);
    expect(waiting).toMatchObject({
      status: "pending",
      conversationId: conversation.id,
      toolName: "createTask",
      taskId: null,
    });
    expect(await listTasks(lead.id)).toHaveLength(0);

    // Approved with an edited title: the resume job runs it once and the reply continues from its result.
    await decideApproval(database.db, engine.jobs, waiting!.id, {
      decision: "approve",
      input: { title: "Tidal power, UK only", description: "" },
    });
    await resumeChat(engine.deps, lead.id);
    await resumeChat(engine.deps, lead.id); // a second resume (a redelivered job) changes nothing
    expect((await listTasks(lead.id)).map((task) => task.title)).toEqual(["Tidal power, UK only"]);
    // The model asked for another title: its result says what ran.
    const ran = (await getAllMessages(database.db, conversation.id)).find(
      (message) => message.toolCallId === waiting!.toolCallId,
    );
    expect(ran?.content).toMatch(
      /^\(The person changed the input before approving; it ran with: \{"title":"Tidal power, UK only"/,
    );
    const chat = await getAllMessages(database.db, conversation.id);
    expect(chat.at(-1)).toMatchObject({ role: "assistant", content: "The task is created; the team is on it." });

    // A call left waiting when the person writes again is withdrawn, and the chat goes on.
    await chatTurn("please research wave power");
    const [second] = await listAgentApprovals(database.db, lead.id);
    expect(second).toMatchObject({ status: "pending" });
    await chatTurn("never mind, hello");
    const [withdrawn] = await database.db.select().from(approvals).where(eq(approvals.id, second!.id));
    expect(withdrawn).toMatchObject({ status: "withdrawn" });
    expect(withdrawn!.resolvedAt).not.toBeNull();
    const after = await getAllMessages(database.db, conversation.id);
    expect(after.find((message) => message.toolCallId === second!.toolCallId)?.content).toBe(
      "(not run: the person wrote a new message instead of deciding)",
    );
    expect(after.at(-1)).toMatchObject({ role: "assistant", content: "Hello." });
    expect(await listTasks(lead.id)).toHaveLength(1);
  });
});

async function listTasks(agentId: string) {
  return database.db.select().from(tasksTable).where(eq(tasksTable.agentId, agentId));
}

describe("what a stranger found", () => {
  it("a chat resume whose worker died after carrying the decision out still gives the reply", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await setToolPolicy(database.db, team.id, { toolName: "createTask", policy: "ask", agentId: null });
    let broken = false;
    const engine = await tests.engineWith({
      model: chatAndSessionModel((options) => {
        if (options.prompt.at(-1)?.role === "tool") {
          if (broken) throw new Error("the worker died here");
          return textReply("The task is created.");
        }
        return toolCallReply("createTask", { title: "Research tidal power" });
      }),
    });
    await (
      await streamChatReply(engine.deps, lead.id, "please research tidal power", new AbortController().signal)
    ).text();
    const [waiting] = await listAgentApprovals(database.db, lead.id);
    await decideApproval(database.db, engine.jobs, waiting!.id, { decision: "approve" });
    broken = true;
    await expect(resumeChat(engine.deps, lead.id)).rejects.toThrow("the worker died here");
    expect(await listTasks(lead.id)).toHaveLength(1);
    broken = false;
    await resumeChat(engine.deps, lead.id); // the job's retry
    const chat = await getAllMessages(database.db, (await getForegroundConversation(database.db, lead.id)).id);
    expect(chat.at(-1)).toMatchObject({ role: "assistant", content: "The task is created." });
    expect(await listTasks(lead.id)).toHaveLength(1);
  });

  it("a call approved while its team is paused runs after Resume", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await setToolPolicy(database.db, team.id, { toolName: "addKnowledgeItem", policy: "ask", agentId: null });
    const engine = await tests.engineWith({
      model: sessionModel((options) =>
        /^Task from the person/.test(lastMessage(options))
          ? parallelCalls([
              { id: "p-1", toolName: "addKnowledgeItem", args: { type: "fact", content: "Paused one" } },
              { id: "p-2", toolName: "addKnowledgeItem", args: { type: "fact", content: "Paused two" } },
            ])
          : textReply("Done."),
      ),
    });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Two facts" });
    await runUntilQuiet(engine.deps);
    await setTeamStatus(engine.deps, team.id, "paused");
    const approvalsNow = await listAgentApprovals(database.db, lead.id);
    await decideApproval(database.db, engine.jobs, approvalsNow.find((a) => a.toolCallId === "p-1")!.id, {
      decision: "approve",
    });
    await runWorkSession(engine.deps, lead.id); // the decision's nudge: a paused team's session takes nothing
    expect(await database.db.select().from(knowledgeItems).where(eq(knowledgeItems.agentId, lead.id))).toHaveLength(0);
    await setTeamStatus(engine.deps, team.id, "active");
    // Resume wakes it (not only the backlog sweep a worker makes every half minute).
    const [woken] = await database.db
      .select({ at: agentsTable.wakeRequestedAt })
      .from(agentsTable)
      .where(eq(agentsTable.id, lead.id));
    expect(woken?.at).not.toBeNull();
    await runUntilQuiet(engine.deps);
    expect(
      (await database.db.select().from(knowledgeItems).where(eq(knowledgeItems.agentId, lead.id))).map(
        (item) => item.content,
      ),
    ).toEqual(["Paused one"]);
  });

  it("NUL characters and lone surrogates from a model are stored without them; the task ends", async () => {
    const { lead } = await createTeamFixture(database.db);
    const engine = await tests.engineWith({
      model: sessionModel((options) =>
        /^Task from the person/.test(lastMessage(options))
          ? toolCallReply("searchKnowledge", { query: "a\u0000b\ud800" })
          : textReply("Found nothing\u0000 at all\udc00."),
      ),
    });
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Odd bytes" });
    await runUntilQuiet(engine.deps);
    expect(await getTask(database.db, task.id)).toMatchObject({
      status: "completed",
      result: "Found nothing at all\ufffd.",
    });
    const log = await backgroundLog(lead.id);
    expect(log.find((message) => message.toolCalls?.length)?.toolCalls?.[0]?.args).toEqual({ query: "ab\ufffd" });
  });

  it("an edited input with a field the tool does not have is a 400 naming it", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await setToolPolicy(database.db, team.id, { toolName: "addKnowledgeItem", policy: "ask", agentId: null });
    const engine = await tests.engineWith({
      model: sessionModel((options) =>
        /^Task from the person/.test(lastMessage(options))
          ? toolCallReply("addKnowledgeItem", { type: "fact", content: "x" })
          : textReply("Done."),
      ),
    });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "One fact" });
    await runUntilQuiet(engine.deps);
    const [approval] = await listAgentApprovals(database.db, lead.id);
    const error = await expectCadreError(
      decideApproval(database.db, engine.jobs, approval!.id, {
        decision: "approve",
        input: { type: "fact", content: "ok", sneaky: 1 },
      }),
      "bad_request:approval_input",
    );
    expect(error.message).toContain("sneaky");
  });
});
