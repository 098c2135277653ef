// Models as they are (issue 33): the engine's flows run through the real @ai-sdk/openai client
// against a local server that departs from OpenAI the way real servers do (tests/support/fake-openai.ts,
// FakeMisbehaviour) — Ollama ignoring tool_choice, llama.cpp's and vLLM's strict chat templates —
// and every flow still ends as it should: research in a briefing through two subordinates whose
// reports arrive together, tasks completed with findings, a chat answered, compaction's summary when
// due, an approval carried out, a Stop and work after it; no session fails, and no request is
// refused twice for the same reason. Another misbehaviour is one more row of `modes`.
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseLogInput } from "@/lib/core/formats";
import { runWorkSession, stopLocalSession, type SessionOutcome } from "@/lib/engine/agent";
import { decideApproval } from "@/lib/engine/approvals";
import { streamChatReply } from "@/lib/engine/chat";
import { stopAgent } from "@/lib/engine/stop";
import { setToolPolicy } from "@/lib/engine/tool-policies";
import { assignTask } from "@/lib/domain/tasks";
import {
  getAllMessages,
  getBackgroundConversation,
  getForegroundConversation,
  getTask,
  listTasksByAgent,
} from "@/lib/db/queries";
import { listAgentApprovals } from "@/lib/db/queries/approvals";
import { saveModelProfile } from "@/lib/db/queries/model-profiles";
import { inboxItems, workSessions } from "@/lib/db/schema";
import { chooseModel } from "@/lib/llm/provider";
import {
  lastUserText,
  startFakeOpenAI,
  type FakeChatRequest,
  type FakeMisbehaviour,
  type FakeOpenAI,
  type FakeReply,
  separatedMessages,
} from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTestEngine, runUntilQuiet, type TestEngine } from "../support/engine";
import { SUMMARY_PREFIX } from "@/lib/engine/model-messages";
import { SESSION_STOP_CHANNEL } from "@/lib/jobs/queues";
import { lastToolCallName, systemText, toolNames } from "../support/team-play";

/** One way of misbehaving per row; the flows below run under each. */
const modes: { name: string; misbehaviours: FakeMisbehaviour[] }[] = [
  { name: "a server that ignores tool_choice (Ollama)", misbehaviours: ["ignoreToolChoice"] },
  { name: "a server whose chat template wants alternating roles (llama.cpp, vLLM)", misbehaviours: ["strictRoles"] },
];

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
const SUMMARY = "Summary: where each task stands, with its findings.";
const findingsOf = (name: string) => `Findings from ${name}: panel prices fell 12% (https://example.com/${name}).`;

/** A scripted team, deciding from the request alone as a model would (its inputs read as log inputs). */
function play(request: FakeChatRequest): FakeReply {
  if (request.response_format) return { text: '{"items":[]}' };
  // A summary: asked without tools, or as the log's next request with none callable.
  if (toolNames(request).length === 0 || request.tool_choice === "none") return { text: blankSummaries ? "" : SUMMARY };
  const system = systemText(request);
  const last = request.messages.at(-1)!;
  const text = lastUserText(request);
  const input = parseLogInput(text);
  const name = /^You are (\w+),/.exec(system)?.[1] ?? "";
  if (/talking with the person/.test(system))
    return last.role === "tool"
      ? { text: "Here is where the team stands: two briefings are out." }
      : { toolCalls: [{ name: "getTeamStatus", arguments: {} }] };
  if (toolNames(request).includes("reportToLead")) {
    if (last.role === "tool") return { text: "Reported." };
    return input?.kind === "task"
      ? { toolCalls: [{ name: "reportToLead", arguments: { result: findingsOf(name) } }] }
      : { text: "Nothing to do." };
  }
  // The lead.
  if (/Decide whether to brief the person/.test(text))
    return last.role === "tool" ? { text: "Briefed." } : { text: "No briefing needed." };
  if (last.role === "tool") {
    const called = lastToolCallName(request);
    if (called === "createInboxItem") return { text: "Briefed the person on what the team found." };
    if (called === "searchKnowledge") return surveyRound();
    return { text: `Waiting on ${called}.` };
  }
  // A survey goes on from its summary, if the request still says which task is in focus (as a
  // model would, it does not guess); once it is done, there is nothing more to do.
  if (system.includes('team "Survey') && !input && summaryAt(request) >= 0) {
    if (!surveying) return { text: "Nothing more to do." };
    return focusAfterSummary(request) ? surveyRound() : { text: "No open task." };
  }
  const member = (who: string) =>
    UUID.exec(system.split("\n").find((line) => line.startsWith(`- ${who} (id:`)) ?? "")![0];
  // Both reports in (they arrive together): the briefing, with what each found.
  const reports = userInputs(request).filter((each) => each?.kind === "report");
  if (input?.kind === "report" && reports.length >= 2)
    return {
      toolCalls: [
        {
          name: "createInboxItem",
          arguments: {
            title: "What the team found",
            summary: "Both researchers reported.",
            content: reports
              .map((report) => (report?.kind === "report" ? `## ${report.agentName}\n${report.result}` : ""))
              .join("\n\n"),
          },
        },
      ],
    };
  if (input?.kind === "report") return { text: "One report in; waiting for the other." };
  if (input?.kind === "task") {
    if (/^Research solar/.test(input.title))
      return {
        toolCalls: ["Scout", "Sage"].map((who) => ({
          name: "delegateToAgent",
          arguments: { agentId: member(who), title: `Solar prices (${who})`, description: input.title },
        })),
      };
    if (/^Brief me on wind/.test(input.title))
      return {
        toolCalls: [
          {
            name: "createInboxItem",
            arguments: { title: "Wind", summary: "Wind is steady.", content: "## Wind\nSteady, per the last report." },
          },
        ],
      };
    if (/^Check the team/.test(input.title)) return { toolCalls: [{ name: "getTeamStatus", arguments: {} }] };
    if (/^Dawdle/.test(input.title)) return { text: "Dawdled.", delayMs: 1_500 };
    if (/^Survey/.test(input.title)) return surveyRound();
    return { text: `Done: ${input.title}.` };
  }
  return { text: "Nothing to do." };
}

/** Summaries answered with nothing at all (the summarizer's empty answer). */
let blankSummaries = false;

/** Where the request's summary is among its (separated) messages; -1 for none. */
function summaryAt(request: FakeChatRequest): number {
  return separatedMessages(request.messages).findLastIndex(
    (message) => message.role === "user" && String(message.content ?? "").startsWith(SUMMARY_PREFIX),
  );
}

/** Whether the request names the task in focus in its summary or after it. */
function focusAfterSummary(request: FakeChatRequest): boolean {
  return separatedMessages(request.messages)
    .slice(summaryAt(request))
    .some((message) => message.role === "user" && String(message.content ?? "").includes("← in focus"));
}

let surveyRounds = 0;
/** How many rounds a survey has. */
let surveyLength = 15;
let surveying = false;
/**
 * A survey of 15 rounds unless told otherwise (each a search of the team's knowledge) and a long last word, so the log
 * outgrows a small context budget during the survey and again as the wrap-up asks its question.
 */
function surveyRound(): FakeReply {
  surveying = true;
  surveyRounds += 1;
  if (surveyRounds % surveyLength !== 0)
    return {
      toolCalls: [{ name: "searchKnowledge", arguments: { query: `topic ${surveyRounds} ${"detail ".repeat(50)}` } }],
    };
  surveying = false;
  return { text: `Finished the survey. ${"A finding of the survey, with its source. ".repeat(200)}` };
}

/** Every log input the request's user messages carry, whether sent one by one or joined into one message. */
function userInputs(request: FakeChatRequest) {
  return separatedMessages(request.messages)
    .filter((message) => message.role === "user")
    .map((message) => parseLogInput(String(message.content ?? "")));
}

describe.each(modes)("under $name", ({ misbehaviours }) => {
  let database: TestDatabase;
  let openai: FakeOpenAI;
  let engine: TestEngine;
  /** Every session the flows ran, whatever ran it. */
  const outcomes: SessionOutcome[] = [];
  const runAll = async (deps: TestEngine["deps"], agentIds?: readonly string[]) => {
    const ran = await runUntilQuiet(deps, 40, { agentIds });
    outcomes.push(...ran.map((each) => each.outcome));
  };

  beforeAll(async () => {
    database = await createTestDatabase({ max: 20 });
    // A Stop reaches this process's sessions at once, as it does a worker's.
    await database.sql.listen(SESSION_STOP_CHANNEL, (sessionId) => stopLocalSession(sessionId));
    openai = await startFakeOpenAI(play, { misbehaviours });
    engine = await createTestEngine(database, { config: { modelTimeoutMs: 10_000 } });
    // The real provider path (Chat Completions over HTTP).
    engine.deps.chooseModel = (override) =>
      chooseModel(override, {
        OPENAI_BASE_URL: openai.url,
        OPENAI_API_KEY: undefined,
        LLM_MODEL: "fake-model",
        // Each request names its conversation: refusals are told apart by it.
        PROMPT_CACHE_KEY: "on",
      });
  });
  afterAll(async () => {
    await engine?.close();
    await openai?.close();
    await database?.drop();
  });

  it("research ends in a briefing through two subordinates whose reports arrive together; a second briefing; the chat answers", {
    timeout: 90_000,
  }, async () => {
    const { db } = database;
    const { lead, subordinates } = await createTeamFixture(db, { subordinates: ["Scout", "Sage"], name: "Solar" });
    const research = await assignTask(db, engine.jobs, {
      agentId: lead.id,
      source: "user",
      title: "Research solar with Scout and Sage",
    });
    await runAll(engine.deps, [lead.id]);
    // Both subordinates work before the lead hears from either: their reports reach it together.
    await runAll(
      engine.deps,
      subordinates.map((each) => each.id),
    );
    await runAll(engine.deps);
    expect(await getTask(db, research.id)).toMatchObject({ status: "completed" });
    for (const subordinate of subordinates) {
      const [task] = await listTasksByAgent(db, subordinate.id);
      expect(task).toMatchObject({ status: "completed", result: findingsOf(subordinate.name) });
    }
    const leadLog = await getAllMessages(db, (await getBackgroundConversation(db, lead.id)).id);
    const reports = leadLog.flatMap((message, index) =>
      message.role === "user" && parseLogInput(message.content)?.kind === "report" ? [index] : [],
    );
    expect(reports).toHaveLength(2);
    // The two reports are adjacent in the log, as the lead's server got them.
    expect(reports[1]! - reports[0]!).toBe(1);
    const briefings = await db.select().from(inboxItems).where(eq(inboxItems.teamId, lead.teamId));
    const briefing = briefings.find((item) => item.type === "briefing");
    expect(briefing?.content).toContain(findingsOf("Scout"));
    expect(briefing?.content).toContain(findingsOf("Sage"));

    // A second briefing: the lead's chat now holds two of them, one after the other.
    const wind = await assignTask(db, engine.jobs, { agentId: lead.id, source: "user", title: "Brief me on wind" });
    await runAll(engine.deps);
    expect(await getTask(db, wind.id)).toMatchObject({ status: "completed" });
    const chat = await getForegroundConversation(db, lead.id);
    expect((await getAllMessages(db, chat.id)).map((message) => message.role)).toEqual(["assistant", "assistant"]);

    for (const words of ["How is the team doing?", "And now?"]) {
      const body = await (await streamChatReply(engine.deps, lead.id, words, new AbortController().signal)).text();
      expect(body).not.toMatch(/"type":"error"/);
    }
    const replies = (await getAllMessages(db, chat.id)).filter((message) =>
      message.content.startsWith("Here is where the team stands"),
    );
    expect(replies).toHaveLength(2);
  });

  it("an approval is carried out, and a Stop mid-call ends the session stopped; work after it completes", {
    timeout: 60_000,
  }, async () => {
    const { db } = database;
    const { team, lead } = await createTeamFixture(db, { subordinates: ["Scout"], name: "Checks" });
    await setToolPolicy(db, team.id, { toolName: "getTeamStatus", policy: "ask", agentId: lead.id });
    const check = await assignTask(db, engine.jobs, { agentId: lead.id, source: "user", title: "Check the team" });
    await runAll(engine.deps, [lead.id]);
    expect(await getTask(db, check.id)).toMatchObject({ status: "waiting_input" });
    // Work while the call waits: a note on the two open tasks goes in just before the new one.
    const greet = await assignTask(db, engine.jobs, { agentId: lead.id, source: "user", title: "Greet the team" });
    await runAll(engine.deps, [lead.id]);
    expect(await getTask(db, greet.id)).toMatchObject({ status: "completed", result: "Done: Greet the team." });
    const [approval] = await listAgentApprovals(db, lead.id);
    await decideApproval(db, engine.jobs, approval!.id, { decision: "approve" });
    await runAll(engine.deps, [lead.id]);
    expect(await getTask(db, check.id)).toMatchObject({ status: "completed" });

    const dawdle = await assignTask(db, engine.jobs, { agentId: lead.id, source: "user", title: "Dawdle a while" });
    const asked = openai.requests.length;
    const running = runWorkSession(engine.deps, lead.id);
    await expect.poll(() => openai.requests.length > asked, { timeout: 10_000 }).toBe(true);
    await stopAgent(db, engine.jobs, lead.id);
    expect((await running).status).toBe("stopped");
    expect(await getTask(db, dawdle.id)).toMatchObject({ status: "cancelled" });

    const after = await assignTask(db, engine.jobs, { agentId: lead.id, source: "user", title: "Say hello" });
    await runAll(engine.deps, [lead.id]);
    expect(await getTask(db, after.id)).toMatchObject({ status: "completed", result: "Done: Say hello." });
  });

  it("compaction produces its summary when due, with a small context budget", { timeout: 90_000 }, async () => {
    const { db } = database;
    const { lead } = await createTeamFixture(db, { name: "Survey" });
    const small = await createTestEngine(database, { config: { contextTokenBudget: 3_000, maxStepsPerSession: 60 } });
    small.deps.chooseModel = engine.deps.chooseModel;
    try {
      const first = await assignTask(db, small.jobs, { agentId: lead.id, source: "user", title: "Survey the field" });
      await runAll(small.deps, [lead.id]);
      const second = await assignTask(db, small.jobs, { agentId: lead.id, source: "user", title: "Survey again" });
      await runAll(small.deps, [lead.id]);
      for (const task of [first, second]) expect(await getTask(db, task.id)).toMatchObject({ status: "completed" });
    } finally {
      await small.close();
    }
    const log = await getAllMessages(db, (await getBackgroundConversation(db, lead.id)).id);
    const summaries = log.filter((message) => message.role === "summary");
    expect(summaries.length).toBeGreaterThanOrEqual(2);
    for (const summary of summaries) expect(summary.content).toBe(SUMMARY);
    // One was due as a task came in: the summary was asked right after a user message.
    const byId = new Map(log.map((message) => [message.id, message]));
    expect(summaries.some((summary) => byId.get(summary.previousMessageId ?? "")?.role === "user")).toBe(true);
  });

  it("a summarizer that answers nothing leaves the work its task: the survey goes on to its findings", {
    timeout: 90_000,
  }, async () => {
    const { db } = database;
    const { lead } = await createTeamFixture(db, { name: "Survey unsummarized" });
    const small = await createTestEngine(database, { config: { contextTokenBudget: 3_000, maxStepsPerSession: 60 } });
    small.deps.chooseModel = engine.deps.chooseModel;
    const from = openai.requests.length;
    blankSummaries = true;
    // A survey of 40 rounds from the first, so the log outgrows the budget during it.
    [surveyRounds, surveyLength] = [0, 40];
    try {
      const task = await assignTask(db, small.jobs, { agentId: lead.id, source: "user", title: "Survey the field" });
      await runAll(small.deps, [lead.id]);
      expect(await getTask(db, task.id)).toMatchObject({ status: "completed" });
      expect((await getTask(db, task.id))?.result).toMatch(/^Finished the survey/);
    } finally {
      [blankSummaries, surveyLength] = [false, 15];
      await small.close();
    }
    const log = await getAllMessages(db, (await getBackgroundConversation(db, lead.id)).id);
    const summaries = log.filter((message) => message.role === "summary");
    expect(summaries.length).toBeGreaterThanOrEqual(1);
    for (const summary of summaries) expect(summary.content).toContain("Survey the field");
    // Every request of the survey after a summary says again which task is in focus (the
    // session's wrap-up, its task completed, has none to say).
    const after = openai.requests
      .slice(from)
      .filter(
        (request) =>
          toolNames(request).length > 0 &&
          request.tool_choice !== "none" &&
          summaryAt(request) >= 0 &&
          !JSON.stringify(request.messages).includes("(Session ending)"),
      );
    expect(after.length).toBeGreaterThan(0);
    for (const request of after) expect(focusAfterSummary(request)).toBe(true);
  });

  it("a model known to ignore 'no tools now' (its profile) is asked for its summary without tools at all", {
    timeout: 90_000,
  }, async () => {
    const { db } = database;
    await saveModelProfile(db, {
      model: "fake-model",
      baseUrl: openai.url.replace(/\/+$/, ""),
      callsNamedTool: true,
      callsToolWhenRequired: true,
      respectsNoTools: false,
      parallelToolCalls: true,
      acceptsConsecutiveRoles: false,
      reportsUsage: true,
      reportsCachedTokens: false,
      contextTokens: null,
      problem: null,
    });
    const { lead } = await createTeamFixture(db, { name: "Profiled" });
    const small = await createTestEngine(database, { config: { contextTokenBudget: 3_000, maxStepsPerSession: 60 } });
    small.deps.chooseModel = engine.deps.chooseModel;
    const from = openai.requests.length;
    try {
      const task = await assignTask(db, small.jobs, { agentId: lead.id, source: "user", title: "Survey the field" });
      await runAll(small.deps, [lead.id]);
      expect(await getTask(db, task.id)).toMatchObject({ status: "completed" });
    } finally {
      await small.close();
      await database.sql`delete from model_profiles`;
    }
    const log = await getAllMessages(db, (await getBackgroundConversation(db, lead.id)).id);
    expect(log.filter((message) => message.role === "summary").length).toBeGreaterThanOrEqual(1);
    // Every summary came from the summarizer that offers no tools: no request said "no tools now".
    expect(openai.requests.slice(from).filter((request) => request.tool_choice === "none")).toEqual([]);
  });

  it("no session failed, and no request was refused twice for the same reason", async () => {
    console.log(
      `[misbehaving] ${misbehaviours.join("+")}: ${openai.requests.length} requests, ${outcomes.length} sessions (${outcomes.filter((outcome) => outcome.status === "failed").length} failed), ${openai.refusals.length} refused`,
    );
    expect(outcomes.length).toBeGreaterThan(5);
    expect(outcomes.filter((outcome) => outcome.status === "failed")).toEqual([]);
    const failed = await database.db.select().from(workSessions).where(eq(workSessions.status, "failed"));
    expect(failed).toEqual([]);
    const reasons = openai.refusals.map((refusal) => `${refusal.request.prompt_cache_key ?? ""} ${refusal.reason}`);
    expect(reasons.length).toBe(new Set(reasons).size);
    // Sent as every template accepts them, nothing is refused at all.
    expect(openai.refusals.map((refusal) => refusal.reason)).toEqual([]);
  });
});
