// Every model call goes through one helper (src/lib/llm/model-call.ts): a per-call time
// limit, bounded retries, the caller's abort kept apart from a timeout, one usage row per
// model call. A model that never answers must not hang compaction, extraction, the chat
// or drafting: each ends within its time limit and says why.
import type { LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { stepCountIs, tool } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { and, eq, isNull } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { streamChatReply } from "@/lib/engine/chat";
import { compactConversation } from "@/lib/engine/compaction";
import { extractKnowledgeFromConversation } from "@/lib/domain/knowledge-items";
import {
  appendMessages,
  getAllMessages,
  getBackgroundConversation,
  getForegroundConversation,
  searchKnowledgeItems,
} from "@/lib/db/queries";
import { usage } from "@/lib/db/schema";
import { CadreError } from "@/lib/errors";
import { draftLeadInstructions } from "@/lib/llm/draft-instructions";
import { describeModelError, isModelFailure, ModelTimeoutError } from "@/lib/llm/errors";
import { generateModelText, MODEL_CALL_RETRIES, streamModelText } from "@/lib/llm/model-call";
import { OfflineModel } from "@/lib/llm/offline-model";
import { chooseModel, type ModelChoice } from "@/lib/llm/provider";
import { getSessionTrace } from "@/lib/views/session-trace";
import { usageReport } from "@/lib/usage/report";
import { teamSpendToday } from "@/lib/usage/spend";
import { assignTask } from "@/lib/domain/tasks";
import { startFakeOpenAI, type FakeOpenAI, type FakeReply } from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTestEngine, type TestEngine } from "../support/engine";
import { textReply, toolCallReply } from "../support/mock-model";
import { startWorkerProcess, waitFor } from "../support/worker-process";

const TIMEOUT_MS = 500;
/** A timed-out call ends at its time limit, plus what a loaded machine adds. */
const SLACK_MS = 2_500;

let database: TestDatabase;
let engine: TestEngine;
let openai: FakeOpenAI;
let fakeReply: () => FakeReply = () => ({ text: "Hello from the fake model." });

beforeAll(async () => {
  database = await createTestDatabase();
  engine = await createTestEngine(database, { config: { modelTimeoutMs: TIMEOUT_MS } });
  openai = await startFakeOpenAI(() => fakeReply());
});
afterAll(async () => {
  await engine?.close();
  await openai?.close();
  await database?.drop();
});

const choice = (model: ModelChoice["model"], modelId = "mock"): ModelChoice => ({ model, modelId, kind: "offline" });
const offline = choice(new OfflineModel(), "offline");
const fakeServer = (): ModelChoice =>
  chooseModel(null, { OPENAI_BASE_URL: openai.url, OPENAI_API_KEY: undefined, LLM_MODEL: "fake-model" });

/** A model that never answers. It gives up when its call is aborted, unless told to ignore that too. */
function hangingModel(options: { ignoresAbort?: boolean } = {}): ModelChoice {
  const never = (signal: AbortSignal | undefined) =>
    new Promise<never>((_, reject) => {
      if (!options.ignoresAbort) signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  return choice(
    new MockLanguageModelV4({
      doGenerate: ({ abortSignal }) => never(abortSignal),
      doStream: ({ abortSignal }) => never(abortSignal),
    }),
  );
}

/** A model that starts its answer, then stalls mid-stream. */
function stallingModel(partial: string): ModelChoice {
  return choice(
    new MockLanguageModelV4({
      doStream: async ({ abortSignal }) => ({
        stream: new ReadableStream<LanguageModelV4StreamPart>({
          start(controller) {
            controller.enqueue({ type: "stream-start", warnings: [] });
            controller.enqueue({ type: "text-start", id: "t1" });
            controller.enqueue({ type: "text-delta", id: "t1", delta: partial });
            abortSignal?.addEventListener("abort", () => controller.error(abortSignal.reason), { once: true });
          },
        }),
      }),
    }),
  );
}

async function workLog(words = 12) {
  const { lead } = await createTeamFixture(database.db);
  const conversation = await getBackgroundConversation(database.db, lead.id);
  await appendMessages(
    database.db,
    conversation.id,
    Array.from({ length: words }, (_, i) => ({
      role: i % 2 ? ("assistant" as const) : ("user" as const),
      content: `message ${i} ${"word ".repeat(30)}`,
    })),
  );
  return { lead, conversation };
}

async function timed<T>(work: () => Promise<T>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  try {
    await work();
    return { error: undefined, ms: Date.now() - started };
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
}

async function usageRows(purpose: "chat" | "compaction" | "extraction" | "draft" | "work", agentId: string | null) {
  return database.db
    .select()
    .from(usage)
    .where(and(eq(usage.purpose, purpose), agentId === null ? isNull(usage.agentId) : eq(usage.agentId, agentId)));
}

describe("compaction", () => {
  it("is cut off when its model hangs, says it did not answer in time, and appends no summary", async () => {
    const { lead, conversation } = await workLog();
    const before = await getAllMessages(database.db, conversation.id);
    const { error, ms } = await timed(() =>
      compactConversation(
        {
          db: database.db,
          model: hangingModel(),
          agentId: lead.id,
          budget: 10,
          instructions: "",
          timeoutMs: TIMEOUT_MS,
        },
        conversation.id,
      ),
    );
    expect(ModelTimeoutError.isInstance(error)).toBe(true);
    expect(isModelFailure(error)).toBe(true);
    expect(describeModelError(error)).toMatch(
      /^The model server did not answer in time \(500 ms\)\. .*MODEL_TIMEOUT_MS/,
    );
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    expect(await getAllMessages(database.db, conversation.id)).toHaveLength(before.length);
  });

  it("is cut off even when the model ignores its abort signal", async () => {
    const { lead, conversation } = await workLog();
    const { error, ms } = await timed(() =>
      compactConversation(
        {
          db: database.db,
          model: hangingModel({ ignoresAbort: true }),
          agentId: lead.id,
          budget: 10,
          instructions: "",
          timeoutMs: TIMEOUT_MS,
        },
        conversation.id,
      ),
    );
    expect(ModelTimeoutError.isInstance(error)).toBe(true);
    expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  });

  it("stopped by its caller reads as an abort, not a timeout and not a model failure", async () => {
    const { lead, conversation } = await workLog();
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 100);
    const { error, ms } = await timed(() =>
      compactConversation(
        {
          db: database.db,
          model: hangingModel(),
          agentId: lead.id,
          budget: 10,
          instructions: "",
          timeoutMs: 10_000,
          abortSignal: stop.signal,
        },
        conversation.id,
      ),
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe("AbortError");
    expect(ModelTimeoutError.isInstance(error)).toBe(false);
    expect(isModelFailure(error)).toBe(false);
    expect(ms).toBeLessThan(5_000);
    // The request was sent, and the provider may bill it: its row stays, estimated from what was sent.
    const rows = await usageRows("compaction", lead.id);
    expect(rows.map((row) => [row.estimated, row.finishReason, row.outputTokens])).toEqual([[true, "aborted", 0]]);
    expect(rows[0]!.inputTokens).toBeGreaterThan(12 * 30); // twelve messages of thirty words, and the instructions
  });

  it("records one usage row for its model call", async () => {
    const { lead, conversation } = await workLog();
    await compactConversation(
      { db: database.db, model: offline, agentId: lead.id, budget: 10, instructions: "" },
      conversation.id,
    );
    const rows = await usageRows("compaction", lead.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ conversationId: conversation.id, model: "offline" });
    expect(rows[0]!.inputTokens).toBeGreaterThan(0);
  });
});

describe("knowledge extraction", () => {
  it("is cut off when its model hangs, says so, records no knowledge, and counts its call as estimated", async () => {
    const { lead, conversation } = await workLog();
    const messages = await getAllMessages(database.db, conversation.id);
    const { error, ms } = await timed(() =>
      extractKnowledgeFromConversation({
        db: database.db,
        model: hangingModel(),
        agentId: lead.id,
        conversationId: conversation.id,
        messages,
        maxInputChars: 10_000,
        timeoutMs: TIMEOUT_MS,
        embedding: engine.deps.embedding,
        jobs: engine.jobs,
      }),
    );
    expect(isModelFailure(error)).toBe(true);
    expect(describeModelError(error)).toMatch(/did not answer in time/);
    expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    expect(await searchKnowledgeItems(database.db, { agentId: lead.id })).toEqual([]);
    // What was sent counts (the provider may bill a call it was still working on), as an estimate.
    const rows = await usageRows("extraction", lead.id);
    expect(rows.map((row) => [row.estimated, row.finishReason, row.outputTokens])).toEqual([[true, "timeout", 0]]);
    expect(rows[0]!.inputTokens).toBeGreaterThan(0);
  });
});

describe("the chat", () => {
  async function chatWith(model: ModelChoice) {
    const { lead } = await createTeamFixture(database.db);
    engine.deps.chooseModel = () => model;
    const started = Date.now();
    const response = await streamChatReply(engine.deps, lead.id, "hello?", new AbortController().signal);
    const body = await response.text();
    const ms = Date.now() - started;
    const conversationId = (await getForegroundConversation(database.db, lead.id)).id;
    await expect.poll(async () => (await getAllMessages(database.db, conversationId)).length).toBe(2);
    return { body, ms, log: await getAllMessages(database.db, conversationId) };
  }

  it("ends a reply whose server never answers with the timeout in the stream and in the conversation", async () => {
    fakeReply = () => ({ fault: "hang" });
    const { body, ms, log } = await chatWith(fakeServer());
    expect(body).toMatch(
      /"type":"error","errorText":"The model server did not answer in time \(500 ms\)\. Try again, or raise MODEL_TIMEOUT_MS/,
    );
    expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    expect(log.map((m) => [m.role, m.content])).toEqual([
      ["user", "hello?"],
      [
        "assistant",
        "(error: The model server did not answer in time (500 ms). Try again, or raise MODEL_TIMEOUT_MS for a slow local model.)",
      ],
    ]);
  });

  it("keeps what a reply said before it stalled, then the timeout marker", async () => {
    const { body, ms, log } = await chatWith(stallingModel("Let me think about"));
    expect(body).toContain('"delta":"Let me think about"');
    expect(body).toMatch(/"type":"error","errorText":"The model server did not answer in time/);
    expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    expect(log.at(-1)!.content).toMatch(
      /^Let me think about\n\n\(error: The model server did not answer in time \(500 ms\)/,
    );
  });
});

describe("drafting a lead's instructions", () => {
  const team = { name: "Solar", mission: "Track the solar industry" };

  it("records a usage row with no agent and the purpose draft", async () => {
    const instructions = await draftLeadInstructions(database.db, team, { model: offline });
    expect(instructions).toContain("Track the solar industry");
    const rows = await usageRows("draft", null);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ agentId: null, conversationId: null, model: "offline" });
    expect(rows[0]!.inputTokens).toBeGreaterThan(0);
  });

  it("gives up when the model hangs, says so, and logs the error with its cause", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const { error, ms } = await timed(() =>
        draftLeadInstructions(database.db, team, { model: hangingModel(), timeoutMs: TIMEOUT_MS }),
      );
      expect(error).toBeInstanceOf(CadreError);
      expect((error as CadreError).code).toBe("unavailable:model");
      expect((error as CadreError).message).toMatch(
        /^Could not draft the instructions\. The model server did not answer in time \(500 ms\)/,
      );
      expect(ModelTimeoutError.isInstance((error as CadreError).cause)).toBe(true);
      expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
      expect(logged).toHaveBeenCalledWith(
        expect.stringContaining("Drafting lead instructions failed"),
        (error as CadreError).cause,
      );
    } finally {
      logged.mockRestore();
    }
  });

  it("retries a failing server a bounded number of times", async () => {
    fakeReply = () => ({ fault: "status", status: 500, retryAfterSeconds: 0 });
    const requestsBefore = openai.requests.length;
    const rowsBefore = (await usageRows("draft", null)).length;
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      await expect(draftLeadInstructions(database.db, team, { model: fakeServer(), timeoutMs: 5_000 })).rejects.toThrow(
        /The model server failed \(HTTP 500\)/,
      );
    } finally {
      logged.mockRestore();
    }
    expect(openai.requests.length - requestsBefore).toBe(1 + MODEL_CALL_RETRIES);
    // A refused request is not billed: the rows its attempts started are gone.
    expect(await usageRows("draft", null)).toHaveLength(rowsBefore);
  });
});

describe("a tool loop through the helper", () => {
  it("records one usage row per model call and still runs the caller's own onLanguageModelCallEnd", async () => {
    const { lead } = await createTeamFixture(database.db);
    const conversation = await getBackgroundConversation(database.db, lead.id);
    const replies = [toolCallReply("lookUp", { query: "solar" }), textReply("Solar is up.")];
    const model = choice(new MockLanguageModelV4({ doGenerate: async () => replies.shift()! }));
    const seen: number[] = [];
    const result = await generateModelText(
      {
        db: database.db,
        model,
        purpose: "work",
        agentId: lead.id,
        teamId: lead.teamId,
        conversationId: conversation.id,
        timeoutMs: TIMEOUT_MS,
      },
      {
        instructions: "You are the lead.",
        messages: [{ role: "user", content: "How is solar doing?" }],
        tools: {
          lookUp: tool({
            inputSchema: z.object({ query: z.string() }),
            execute: async ({ query }) => `${query}: up 3%`,
          }),
        },
        stopWhen: stepCountIs(4),
        prepareStep: async ({ stepNumber }) =>
          stepNumber === 0 ? undefined : { messages: [{ role: "user", content: "How is solar doing? (reloaded)" }] },
        onLanguageModelCallEnd: (event) => {
          seen.push(event.usage.inputTokens ?? 0);
        },
      },
    );
    expect(result.text).toBe("Solar is up.");
    expect(seen).toEqual([10, 10]);
    const rows = await usageRows("work", lead.id);
    expect(rows.map((row) => [row.inputTokens, row.outputTokens, row.model, row.conversationId])).toEqual([
      [10, 5, "mock", conversation.id],
      [10, 5, "mock", conversation.id],
    ]);
  });

  it("gives each call of a streamed answer its own id when the provider repeats one, inputs streamed or not", async () => {
    const { lead } = await createTeamFixture(database.db);
    const usageTotals = {
      inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 5, text: 5, reasoning: 0 },
    };
    const answers: LanguageModelV4StreamPart[][] = [
      [
        { type: "stream-start", warnings: [] },
        // Streamed input, then the call; then the same id again, streamed; then again, not streamed.
        { type: "tool-input-start", id: "call_0", toolName: "lookUp" },
        { type: "tool-input-delta", id: "call_0", delta: '{"query":"solar"}' },
        { type: "tool-input-end", id: "call_0" },
        { type: "tool-call", toolCallId: "call_0", toolName: "lookUp", input: '{"query":"solar"}' },
        { type: "tool-input-start", id: "call_0", toolName: "lookUp" },
        { type: "tool-input-delta", id: "call_0", delta: '{"query":"wind"}' },
        { type: "tool-input-end", id: "call_0" },
        { type: "tool-call", toolCallId: "call_0", toolName: "lookUp", input: '{"query":"wind"}' },
        { type: "tool-call", toolCallId: "call_0", toolName: "lookUp", input: '{"query":"tide"}' },
        { type: "finish", finishReason: { unified: "tool-calls", raw: undefined }, usage: usageTotals },
      ],
      [
        { type: "stream-start", warnings: [] },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "All up." },
        { type: "text-end", id: "t" },
        { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage: usageTotals },
      ],
    ];
    const prompts: string[] = [];
    const model = choice(
      new MockLanguageModelV4({
        doStream: async (options) => {
          prompts.push(JSON.stringify(options.prompt));
          const parts = answers.shift()!;
          return {
            stream: new ReadableStream({
              start: (controller) => {
                for (const part of parts) controller.enqueue(part);
                controller.close();
              },
            }),
          };
        },
      }),
    );
    const ran: { id: string; query: string }[] = [];
    const result = streamModelText(
      { db: database.db, model, purpose: "chat", agentId: lead.id, teamId: lead.teamId, timeoutMs: TIMEOUT_MS },
      {
        messages: [{ role: "user", content: "How are the renewables?" }],
        tools: {
          lookUp: tool({
            inputSchema: z.object({ query: z.string() }),
            execute: async ({ query }, { toolCallId }) => {
              ran.push({ id: toolCallId, query });
              return `${query}: up`;
            },
          }),
        },
        stopWhen: stepCountIs(3),
      },
    );
    expect(await result.text).toBe("All up.");
    expect(ran).toEqual([
      { id: "call_0", query: "solar" },
      { id: "call_0~2", query: "wind" },
      { id: "call_0~3", query: "tide" },
    ]);
    // The next request pairs each call with its own result.
    for (const [id, query] of [
      ["call_0", "solar"],
      ["call_0~2", "wind"],
      ["call_0~3", "tide"],
    ] as const) {
      expect(prompts[1]).toContain(
        `"toolCallId":"${id}","toolName":"lookUp","output":{"type":"text","value":"${query}: up"`,
      );
    }
  });
});

describe("a call cut off before the provider counted it", () => {
  it("stopped mid-stream by its caller, leaves an estimated row: the input sent, the output streamed so far; reports and budgets count it", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const stop = new AbortController();
    const partial = "The solar market grew by a third last year, and ";
    const question = `How is solar doing? ${"Tell me everything. ".repeat(50)}`;
    const result = streamModelText(
      {
        db: database.db,
        model: stallingModel(partial),
        purpose: "chat",
        agentId: lead.id,
        teamId: lead.teamId,
        timeoutMs: 10_000,
        abortSignal: stop.signal,
      },
      { instructions: "You are the lead.", messages: [{ role: "user", content: question }] },
    );
    let streamed = "";
    const read = (async () => {
      for await (const delta of result.textStream) {
        streamed += delta;
        // The person presses Stop once the answer has begun.
        if (streamed === partial) stop.abort();
      }
    })();
    await read.catch(() => {});
    expect(streamed).toBe(partial);

    const rows = await usageRows("chat", lead.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      estimated: true,
      finishReason: "aborted",
      outputTokens: Math.ceil(partial.length / 4),
      model: "mock",
    });
    expect(rows[0]!.inputTokens).toBeGreaterThanOrEqual(Math.ceil(question.length / 4));

    const report = await usageReport(database.db, { days: 1, teamId: team.id });
    expect(report.totals).toMatchObject({
      calls: 1,
      estimatedCalls: 1,
      tokens: rows[0]!.inputTokens + rows[0]!.outputTokens,
    });
    expect(await teamSpendToday(database.db, team.id)).toMatchObject({
      calls: 1,
      estimatedCalls: 1,
      tokens: rows[0]!.inputTokens + rows[0]!.outputTokens,
    });
  });

  it("answered, it settles the row its start wrote with the provider's count: one row, not estimated", async () => {
    const { lead } = await createTeamFixture(database.db);
    const result = streamModelText(
      { db: database.db, model: offline, purpose: "chat", agentId: lead.id, teamId: lead.teamId, timeoutMs: 10_000 },
      { messages: [{ role: "user", content: "hello there, offline model" }] },
    );
    await result.text;
    const rows = await usageRows("chat", lead.id);
    expect(rows.map((row) => [row.estimated, row.inputTokens > 0, row.finishReason])).toEqual([[false, true, "stop"]]);
  });

  it("in a worker killed with kill -9 mid-call, stays counted as estimated", { timeout: 60_000 }, async () => {
    const { team, lead } = await createTeamFixture(database.db);
    fakeReply = () => ({ fault: "hang" });
    const worker = startWorkerProcess({
      DATABASE_URL: database.url,
      OPENAI_BASE_URL: openai.url,
      LLM_MODEL: "fake-model",
    });
    try {
      await waitFor(async () => worker.output.join("").includes("[worker] ready"), {
        timeoutMs: 30_000,
        what: "the worker",
      });
      const requestsBefore = openai.requests.length;
      await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Research solar prices" });
      await waitFor(async () => openai.requests.length > requestsBefore, {
        timeoutMs: 30_000,
        what: "the work session's model call",
      });
      // Its row was sent before the request: it is there while the call hangs.
      await waitFor(async () => (await database.db.select().from(usage).where(eq(usage.agentId, lead.id))).length > 0, {
        timeoutMs: 5_000,
        what: "the call's usage row",
      });
    } finally {
      await worker.stop("SIGKILL");
      fakeReply = () => ({ text: "Hello from the fake model." });
    }
    const rows = await database.db.select().from(usage).where(eq(usage.agentId, lead.id));
    expect(rows.map((row) => [row.purpose, row.estimated, row.outputTokens, row.model])).toEqual([
      ["work", true, 0, "fake-model"],
    ]);
    expect(rows[0]!.inputTokens).toBeGreaterThan(100); // the lead's instructions, tools and task
    expect((await usageReport(database.db, { days: 1, teamId: team.id })).totals).toMatchObject({
      calls: 1,
      estimatedCalls: 1,
    });
    // The session's trace says the call's tokens are an estimate.
    const trace = await getSessionTrace(database.db, rows[0]!.workSessionId!);
    expect(trace.spans.flatMap((span) => (span.type === "model" ? [[span.estimated, span.inputTokens]] : []))).toEqual([
      [true, rows[0]!.inputTokens],
    ]);
  });
});
