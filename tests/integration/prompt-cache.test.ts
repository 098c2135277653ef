// Paying for each input token once: every request of an agent's conversation extends the one
// before it byte for byte (same instructions, same tools in the same order; what changes goes
// into the log), so a provider's prompt cache serves all of it but what the request adds.
// Driven through the real @ai-sdk/openai client against a local server that applies OpenAI's
// prefix rule and reports cached tokens as OpenAI does.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decideApproval } from "@/lib/engine/approvals";
import { streamChatReply } from "@/lib/engine/chat";
import { parseLogInput } from "@/lib/core/formats";
import { answerQuestionFromPerson } from "@/lib/domain/questions";
import { runScheduledLeadCheckIn } from "@/lib/domain/schedules";
import { assignTask, cancelTask } from "@/lib/domain/tasks";
import { setToolPolicy } from "@/lib/engine/tool-policies";
import { getAllMessages, getBackgroundConversation, getTask } from "@/lib/db/queries";
import { listAgentApprovals } from "@/lib/db/queries/approvals";
import { questions, usage } from "@/lib/db/schema";
import { chooseModel } from "@/lib/llm/provider";
import {
  lastUserText,
  startFakeOpenAI,
  type FakeChatRequest,
  type FakeOpenAI,
  type FakeReply,
} from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTestEngine, runUntilQuiet, type TestEngine } from "../support/engine";
import { extension, PromptCache, promptText } from "../support/prompt-cache";
import { lastToolCallName, systemText, toolNames } from "../support/team-play";

let database: TestDatabase;
let openai: FakeOpenAI;
let engine: TestEngine;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
/** A page of findings, so a request's prompt is long enough to be cached (1,024 tokens and more). */
const FINDINGS = Array.from(
  { length: 40 },
  (_, i) => `Finding ${i + 1}: a measured figure with its source, https://example.com/report-${i + 1}.`,
).join("\n");

/** A scripted team: each agent decides from the request alone, as a model would. */
function play(request: FakeChatRequest): FakeReply {
  if (request.response_format) return { text: '{"items":[]}' };
  if (toolNames(request).length === 0) return { text: "Summary: where each task stands." };
  const system = systemText(request);
  const last = request.messages.at(-1)!;
  const text = lastUserText(request);
  const input = parseLogInput(text);
  if (/^You are (Scout|Sage),/.test(system)) {
    if (last.role === "tool") {
      return lastToolCallName(request) === "tavilySearch"
        ? { toolCalls: [{ name: "reportToLead", arguments: { result: `Findings:\n${FINDINGS}` } }] }
        : { text: "Reported." };
    }
    return input?.kind === "task"
      ? { toolCalls: [{ name: "tavilySearch", arguments: { query: input.title } }] }
      : { text: "Nothing to do." };
  }
  if (/talking with the person/.test(system))
    return last.role === "tool"
      ? { text: "Here is where the team stands." }
      : { toolCalls: [{ name: "getTeamStatus", arguments: {} }] };
  // The lead.
  if (/Decide whether to brief the person/.test(text))
    return last.role === "tool" ? { text: "Briefed." } : { text: "No briefing needed." };
  if (last.role === "tool") return { text: `Done with ${lastToolCallName(request)} for now.` };
  const subordinate = (name: string) =>
    UUID.exec(system.split("\n").find((line) => line.startsWith(`- ${name} (id:`)) ?? "")![0];
  if (input?.kind === "report")
    return {
      toolCalls: [
        {
          name: "createInboxItem",
          arguments: {
            title: "What the team found",
            summary: "Findings are in.",
            content: `## Findings\n${input.result}`,
          },
        },
      ],
    };
  if (input?.kind === "person-answer")
    return {
      toolCalls: [
        {
          name: "delegateToAgent",
          arguments: { agentId: subordinate("Sage"), title: "Tides", description: input.answer },
        },
      ],
    };
  if (input?.kind === "task") {
    const research = /^Research (.+) with (Scout|Sage)$/.exec(input.title);
    if (research)
      return {
        toolCalls: [
          {
            name: "delegateToAgent",
            arguments: { agentId: subordinate(research[2]!), title: research[1]!, description: input.title },
          },
        ],
      };
    if (/^Ask me first/.test(input.title))
      return { toolCalls: [{ name: "askPerson", arguments: { question: "Which coast matters most?" } }] };
    if (/^Check the team/.test(input.title)) return { toolCalls: [{ name: "getTeamStatus", arguments: {} }] };
  }
  if (/^The person decided on the calls/.test(text)) return { text: "Noted the decisions." };
  return { text: "Nothing to do." };
}

beforeAll(async () => {
  database = await createTestDatabase({ max: 20 });
  openai = await startFakeOpenAI(play, { promptCache: new PromptCache() });
  engine = await createTestEngine(database);
  // The real provider path (Chat Completions), naming each conversation for the cache.
  engine.deps.chooseModel = (override) =>
    chooseModel(override, {
      OPENAI_BASE_URL: openai.url,
      OPENAI_API_KEY: undefined,
      LLM_MODEL: "fake-model",
      PROMPT_CACHE_KEY: "on",
    });
});
afterAll(async () => {
  await engine?.close();
  await openai?.close();
  await database?.drop();
});

type Break = { key: string; index: number; common: number; previous: string; next: string };

/** Each conversation's requests (by prompt_cache_key), and where one did not extend the one before it. */
function conversationsOf(requests: readonly FakeChatRequest[]): { byKey: Map<string, string[]>; breaks: Break[] } {
  const byKey = new Map<string, string[]>();
  for (const request of requests) {
    const key = String(request.prompt_cache_key ?? "(none)");
    byKey.set(key, [...(byKey.get(key) ?? []), promptText(request)]);
  }
  const breaks: Break[] = [];
  for (const [key, texts] of byKey) {
    for (let index = 1; index < texts.length; index++) {
      const { common, extends: extended } = extension(texts[index - 1]!, texts[index]!);
      if (!extended)
        breaks.push({
          key,
          index,
          common,
          previous: texts[index - 1]!.slice(common, common + 120),
          next: texts[index]!.slice(common, common + 120),
        });
    }
  }
  return { byKey, breaks };
}

describe("a prompt-cache-friendly context", () => {
  it("a lead across tasks, reports, a question, an approval and wrap-ups sends each request as an exact extension of its conversation's previous one", {
    timeout: 120_000,
  }, async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, {
      subordinates: ["Scout", "Sage"],
      name: "Cache Team",
    });
    await setToolPolicy(database.db, team.id, { toolName: "getTeamStatus", policy: "ask", agentId: lead.id });
    const { db } = database;
    const { jobs } = engine;
    const start = openai.requests.length;

    const solar = await assignTask(db, jobs, { agentId: lead.id, source: "user", title: "Research solar with Scout" });
    await runUntilQuiet(engine.deps);
    expect(await getTask(db, solar.id)).toMatchObject({ status: "completed" });

    // A call that waits for the person while the log moves on (another task, its reports, wrap-ups).
    const check = await assignTask(db, jobs, { agentId: lead.id, source: "user", title: "Check the team" });
    await runUntilQuiet(engine.deps);
    expect(await getTask(db, check.id)).toMatchObject({ status: "waiting_input" });
    const wind = await assignTask(db, jobs, { agentId: lead.id, source: "user", title: "Research wind with Sage" });
    await runUntilQuiet(engine.deps);
    expect(await getTask(db, wind.id)).toMatchObject({ status: "completed" });
    const [approval] = await listAgentApprovals(db, lead.id);
    await decideApproval(db, jobs, approval!.id, { decision: "approve" });
    await runUntilQuiet(engine.deps);
    expect(await getTask(db, check.id)).toMatchObject({ status: "completed" });

    // A question to the person, answered; the answer is handed on.
    const tides = await assignTask(db, jobs, { agentId: lead.id, source: "user", title: "Ask me first about tides" });
    await runUntilQuiet(engine.deps);
    const [question] = (await db.select().from(questions)).filter(
      (each) => each.agentId === lead.id && each.status === "open",
    );
    await answerQuestionFromPerson(db, jobs, question!.id, "The North Sea coast.");
    await runUntilQuiet(engine.deps);
    expect(await getTask(db, tides.id)).toMatchObject({ status: "completed" });

    // The chat, twice (its own conversation and key).
    for (const words of ["How is the team doing?", "And now?"]) {
      await (await streamChatReply(engine.deps, lead.id, words, new AbortController().signal)).text();
    }

    const requests = openai.requests.slice(start);
    const leadLog = await getBackgroundConversation(db, lead.id);
    const { byKey, breaks } = conversationsOf(requests);
    const leadWork = byKey.get(`cadre-${leadLog.id}`) ?? [];
    // Five tasks' turns, reports, the decisions and the wrap-ups, all in the lead's one log.
    expect(leadWork.length).toBeGreaterThanOrEqual(14);
    for (const subordinate of subordinates) {
      expect(
        (byKey.get(`cadre-${(await getBackgroundConversation(db, subordinate.id)).id}`) ?? []).length,
      ).toBeGreaterThanOrEqual(3);
    }
    // Extraction and compaction read the log anew each time: one request each, no conversation of their own.
    expect(breaks.filter((each) => !/-(extraction|compaction)$/.test(each.key))).toEqual([]);
    // Every request named its conversation: none went without a key.
    expect(byKey.has("(none)")).toBe(false);

    // What changed reached the lead as notes in its log; its instructions never listed tasks.
    const log = await getAllMessages(db, leadLog.id);
    const notes = log.filter((message) => message.content.startsWith("(Your open tasks now)"));
    expect(notes.length).toBeGreaterThanOrEqual(3);
    expect(
      notes.some(
        (note) =>
          note.content.includes(`Research wind with Sage (task id: ${wind.id}) ← in focus`) &&
          note.content.includes(`[waiting_input] Check the team`),
      ),
    ).toBe(true);
    expect(
      requests
        .filter((request) => toolNames(request).length > 0)
        .every((request) => !systemText(request).includes("← in focus")),
    ).toBe(true);
    // The approved call's result reached the lead in the note on the decision (its call, further up, still reads as it did).
    const decided = log.find((message) => message.content.startsWith("The person decided on the calls"));
    expect(decided?.content).toMatch(/getTeamStatus \(call .+\): approved; it ran\. Its result:\n/);

    // The server's cached tokens reached the usage rows: most input was served from the cache.
    const rows = await db.select().from(usage);
    const work = rows.filter(
      (row) => row.agentId === lead.id && (row.purpose === "work" || row.purpose === "briefing"),
    );
    const input = work.reduce((sum, row) => sum + row.inputTokens, 0);
    const cached = work.reduce((sum, row) => sum + row.cachedTokens, 0);
    expect(cached / input).toBeGreaterThan(0.75);
  });

  it("the wrap-up offers the same tools in the same order, and a call to another one is not run", {
    timeout: 60_000,
  }, async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"], name: "Wrap Team" });
    const seen: { tools: string[]; wrapUp: boolean }[] = [];
    openai.setHandler((request) => {
      const wrapUp = /Decide whether to brief the person/.test(lastUserText(request));
      if (!request.response_format && toolNames(request).length > 0) seen.push({ tools: toolNames(request), wrapUp });
      // A model that ignores the prompt and delegates at the wrap-up.
      if (wrapUp && request.messages.at(-1)!.role !== "tool") {
        return {
          toolCalls: [
            {
              name: "delegateToAgent",
              arguments: { agentId: subordinates[0]!.id, title: "More work", description: "Now." },
            },
          ],
        };
      }
      return play(request);
    });
    try {
      await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Say hello" });
      await runUntilQuiet(engine.deps, 30, { agentIds: [lead.id] });
    } finally {
      openai.setHandler(play);
    }
    const wrapUps = seen.filter((each) => each.wrapUp);
    expect(wrapUps.length).toBeGreaterThan(0);
    for (const each of seen) expect(each.tools).toEqual(seen[0]!.tools);
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    const refused = log.find(
      (message) => message.role === "tool" && message.content.startsWith("(not run: only createInboxItem"),
    );
    expect(refused).toBeDefined();
    // Nothing was delegated: the call did not run.
    expect(log.some((message) => message.content.includes("More work") && message.role === "user")).toBe(false);
  });

  it("a scheduled check-in that finds nothing to do costs only its own turn; one that works outside still wraps up", {
    timeout: 60_000,
  }, async () => {
    const { lead } = await createTeamFixture(database.db, { subordinates: ["Scout"], name: "Quiet Team" });
    const { db } = database;
    const leadLog = (await getBackgroundConversation(db, lead.id)).id;
    const leadCalls = () =>
      openai.requests.filter(
        (request) =>
          systemText(request).includes(`You are ${lead.name},`) ||
          String(request.prompt_cache_key ?? "").includes(leadLog),
      ).length;
    const isLeadTurn = (request: FakeChatRequest) =>
      systemText(request).includes(`You are ${lead.name},`) &&
      !request.response_format &&
      toolNames(request).length > 0;
    const checkIn = async (look: string) => {
      openai.setHandler((request) => {
        if (!isLeadTurn(request)) return play(request);
        if (/Decide whether to brief/.test(lastUserText(request))) return { text: "No briefing needed." };
        return request.messages.at(-1)!.role === "tool"
          ? { text: "Nothing new since the last briefing." }
          : { toolCalls: [{ name: look, arguments: look === "getTeamStatus" ? {} : { query: "news" } }] };
      });
      try {
        const before = leadCalls();
        expect(await runScheduledLeadCheckIn(engine.deps, lead.id)).toBe("started");
        await runUntilQuiet(engine.deps, 10, { agentIds: [lead.id] });
        return leadCalls() - before;
      } finally {
        openai.setHandler(play);
      }
    };
    const purposes = async () =>
      (await db.select().from(usage)).filter((row) => row.agentId === lead.id).map((row) => row.purpose);
    // It looks at its team and says so: its turn's two calls, no knowledge extraction, no briefing decision.
    expect(await checkIn("getTeamStatus")).toBe(2);
    expect(await purposes()).toEqual(["work", "work"]);
    // A check-in that searches the web wraps up as any session does.
    expect(await checkIn("tavilySearch")).toBe(4);
    expect(await purposes()).toEqual(expect.arrayContaining(["extraction", "briefing"]));
  });

  it("names each conversation to the provider: by default for OpenAI itself only, for another server when asked", () => {
    const choose = (config: Partial<Parameters<typeof chooseModel>[1]>) =>
      chooseModel(null, { OPENAI_API_KEY: undefined, OPENAI_BASE_URL: undefined, LLM_MODEL: undefined, ...config })
        .cacheKeys;
    expect(choose({ OPENAI_API_KEY: "sk-test" })).toBe(true);
    expect(choose({ OPENAI_BASE_URL: "https://api.openai.com/v1" })).toBe(true);
    expect(choose({ OPENAI_BASE_URL: "http://127.0.0.1:1234/v1" })).toBe(false);
    expect(choose({ OPENAI_BASE_URL: "http://127.0.0.1:1234/v1", PROMPT_CACHE_KEY: "on" })).toBe(true);
    expect(choose({ OPENAI_API_KEY: "sk-test", PROMPT_CACHE_KEY: "off" })).toBe(false);
    expect(choose({})).toBe(false);
  });

  it("a compaction is the conversation's next request (served from the cache), and the one planned break", {
    timeout: 60_000,
  }, async () => {
    const { lead } = await createTeamFixture(database.db, { name: "Long Team" });
    const small = await createTestEngine(database, { config: { contextTokenBudget: 3_000, maxStepsPerSession: 60 } });
    small.deps.chooseModel = engine.deps.chooseModel;
    let rounds = 0;
    openai.setHandler((request) => {
      if (request.response_format) return { text: '{"items":[]}' };
      if (request.tool_choice === "none")
        return { text: `Summary: surveyed ${rounds} topics so far; the survey is in progress.` };
      if (/Decide whether to brief/.test(lastUserText(request))) return { text: "No briefing needed." };
      rounds += 1;
      return rounds < 30
        ? { toolCalls: [{ name: "searchKnowledge", arguments: { query: `topic ${rounds} ${"detail ".repeat(60)}` } }] }
        : { text: "Finished the survey." };
    });
    const start = openai.requests.length;
    try {
      await assignTask(database.db, small.jobs, { agentId: lead.id, source: "user", title: "Survey" });
      await runUntilQuiet(small.deps, 10, { agentIds: [lead.id] });
    } finally {
      openai.setHandler(play);
      await small.close();
    }
    const leadLog = await getBackgroundConversation(database.db, lead.id);
    const requests = openai.requests
      .slice(start)
      .filter((request) => request.prompt_cache_key === `cadre-${leadLog.id}`);
    const compactions = requests.flatMap((request, index) => (request.tool_choice === "none" ? [index] : []));
    expect(compactions.length).toBeGreaterThanOrEqual(2);
    for (let index = 1; index < requests.length; index++) {
      const extended = extension(promptText(requests[index - 1]!), promptText(requests[index]!)).extends;
      // Only the request right after a summary starts anew; the summary's own request extends the work.
      expect({ index, extended }).toEqual({ index, extended: !compactions.includes(index - 1) });
    }
    // The summary's request offered the same tools as the work, in the same order.
    expect(toolNames(requests[compactions[0]!]!)).toEqual(toolNames(requests[0]!));
  });

  it("a held call withdrawn after the log moved on asks the model nothing: no request without news", {
    timeout: 60_000,
  }, async () => {
    const { team, lead } = await createTeamFixture(database.db, { subordinates: ["Scout"], name: "Withdraw Team" });
    await setToolPolicy(database.db, team.id, { toolName: "getTeamStatus", policy: "ask", agentId: lead.id });
    const { db } = database;
    const check = await assignTask(db, engine.jobs, { agentId: lead.id, source: "user", title: "Check the team" });
    await runUntilQuiet(engine.deps);
    const solar = await assignTask(db, engine.jobs, {
      agentId: lead.id,
      source: "user",
      title: "Research solar with Scout",
    });
    await runUntilQuiet(engine.deps);
    expect(await getTask(db, solar.id)).toMatchObject({ status: "completed" });
    const leadLog = (await getBackgroundConversation(db, lead.id)).id;
    const before = openai.requests.length;
    await cancelTask(db, engine.jobs, check.id);
    await runUntilQuiet(engine.deps);
    const after = openai.requests.slice(before).filter((request) => request.prompt_cache_key === `cadre-${leadLog}`);
    // Whatever the lead is asked after the cancel ends in something new for it, never in its own last words.
    for (const request of after) expect(request.messages.at(-1)!.role).not.toBe("assistant");
    const [approval] = await listAgentApprovals(db, lead.id);
    expect(approval).toMatchObject({ status: "withdrawn" });
  });
});
