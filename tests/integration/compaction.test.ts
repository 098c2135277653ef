import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CompactionOptions,
  ContextReader,
  compactConversation,
  estimateTokens,
  loadContextForCall,
} from "@/lib/engine/compaction";
import { toModelMessages } from "@/lib/engine/model-messages";
import {
  appendMessages,
  getAllMessages,
  getBackgroundConversation,
  getConversationContext,
  getLastMessage,
} from "@/lib/db/queries";
import { OfflineModel } from "@/lib/llm/offline-model";
import type { ModelChoice } from "@/lib/llm/provider";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { sessionModel } from "../support/mock-model";

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

const offline: ModelChoice = { model: new OfflineModel(), modelId: "offline", kind: "offline" };

/** The context for a model call, as a work session or the chat loads it; how many summaries that appended. */
async function loadContext(options: Omit<CompactionOptions, "db">, conversationId: string) {
  let compacted = 0;
  const messages = await loadContextForCall(
    { ...options, db: database.db, onCompacted: () => compacted++ },
    new ContextReader(database.db, conversationId),
  );
  return { messages, compacted };
}

async function filledConversation(messages = 20) {
  const { lead } = await createTeamFixture(database.db);
  const conversation = await getBackgroundConversation(database.db, lead.id);
  await appendMessages(
    database.db,
    conversation.id,
    Array.from({ length: messages }, (_, i) => ({
      role: i % 2 ? ("assistant" as const) : ("user" as const),
      content: `message ${i} ${"word ".repeat(30)}`,
    })),
  );
  return { lead, conversation };
}

describe("compaction", () => {
  it("a model call's context is compacted over the budget and left alone under it", async () => {
    const { lead, conversation } = await filledConversation();
    const context = await getConversationContext(database.db, conversation.id);
    const size = estimateTokens("instructions") + estimateTokens(toModelMessages(context));
    const options = { model: offline, agentId: lead.id, instructions: "instructions" };

    const under = await loadContext({ ...options, budget: size + 100 }, conversation.id);
    expect(under).toEqual({ messages: toModelMessages(context), compacted: 0 });
    expect(await getConversationContext(database.db, conversation.id)).toEqual(context);

    const over = await loadContext({ ...options, budget: size - 1 }, conversation.id);
    expect(over.compacted).toBe(1);
    const [summary, ...rest] = await getConversationContext(database.db, conversation.id);
    expect(summary).toMatchObject({ role: "summary", previousMessageId: context.at(-1)!.id });
    expect(rest).toEqual([]);
    expect(over.messages).toEqual(toModelMessages([summary!]));
  });

  it("compactConversation appends a summary after the last message and deletes nothing", async () => {
    const { lead, conversation } = await filledConversation();
    const last = await getLastMessage(database.db, conversation.id);
    const summary = await compactConversation(
      { db: database.db, model: offline, agentId: lead.id, budget: 500, instructions: "" },
      conversation.id,
    );
    expect(summary).toMatchObject({ role: "summary", previousMessageId: last!.id });
    expect(summary!.content).toMatch(/^Summary \(offline model\)/);
    expect(await getAllMessages(database.db, conversation.id)).toHaveLength(21);
    expect((await getConversationContext(database.db, conversation.id)).map((m) => m.id)).toEqual([summary!.id]);
  });

  it("later compactions chain: each summary folds in the one before it", async () => {
    const { lead, conversation } = await filledConversation(4);
    const seen: string[] = [];
    let n = 0;
    const model = sessionModel(
      () => {
        throw new Error("no work here");
      },
      {
        summarize: (options) => {
          seen.push(JSON.stringify(options.prompt));
          return `S${++n}`;
        },
      },
    );
    const choice: ModelChoice = { model, modelId: "mock", kind: "offline" };
    const options = { model: choice, agentId: lead.id, budget: 10, instructions: "" };
    expect((await loadContext(options, conversation.id)).compacted).toBe(1);
    expect((await getConversationContext(database.db, conversation.id)).map((m) => m.content)).toEqual(["S1"]);
    await appendMessages(database.db, conversation.id, [{ role: "user", content: `more ${"x ".repeat(100)}` }]);
    expect((await loadContext(options, conversation.id)).compacted).toBe(1);
    expect(seen[1]).toContain("EARLIER SUMMARY:\\nS1");
    const context = await getConversationContext(database.db, conversation.id);
    expect(context.map((m) => m.content)).toEqual(["S2"]);
  });

  it("waits while the last tool call has no result, so a call and its result are never split", async () => {
    const { lead } = await createTeamFixture(database.db);
    const conversation = await getBackgroundConversation(database.db, lead.id);
    await appendMessages(database.db, conversation.id, [
      { role: "user", content: "x ".repeat(400) },
      { role: "assistant", content: "", toolCalls: [{ toolCallId: "c1", toolName: "tavilySearch", args: {} }] },
    ]);
    const options = { model: offline, agentId: lead.id, budget: 10, instructions: "" };
    expect((await loadContext(options, conversation.id)).compacted).toBe(0);
    expect((await getConversationContext(database.db, conversation.id)).map((m) => m.role)).toEqual([
      "user",
      "assistant",
    ]);
    await appendMessages(database.db, conversation.id, [{ role: "tool", toolCallId: "c1", content: "results" }]);
    expect((await loadContext(options, conversation.id)).compacted).toBe(1);
    expect((await getConversationContext(database.db, conversation.id)).map((m) => m.role)).toEqual(["summary"]);
  });

  it("an empty answer from the summarizer stores no empty summary: the log's latest inputs stand in", async () => {
    const { lead, conversation } = await filledConversation(4);
    const model = sessionModel(
      () => {
        throw new Error("no work here");
      },
      { summarize: () => "" },
    );
    const options = {
      model: { model, modelId: "mock", kind: "offline" as const },
      agentId: lead.id,
      budget: 150,
      instructions: "",
    };
    expect((await loadContext(options, conversation.id)).compacted).toBe(1);
    const [summary] = await getConversationContext(database.db, conversation.id);
    expect(summary!.role).toBe("summary");
    expect(summary!.content).not.toMatch(/returned nothing/);
    // The newest input first, within the summary's limit (a quarter of the budget).
    expect(summary!.content).toContain("Input: message 2 word");
    expect(summary!.content.length).toBeLessThanOrEqual(150);
  });

  it("a summary of the rendered log holds the earlier summary whole", async () => {
    const { lead, conversation } = await filledConversation(20);
    const first = `S1 ${"fact ".repeat(75)}`.trim();
    const seen: string[] = [];
    const model = sessionModel(
      () => {
        throw new Error("no work here");
      },
      {
        summarize: (options) => {
          seen.push(JSON.stringify(options.prompt));
          return seen.length === 1 ? first : "S2";
        },
      },
    );
    const options = {
      model: { model, modelId: "mock", kind: "offline" as const },
      agentId: lead.id,
      budget: 400,
      instructions: "",
    };
    expect((await loadContext(options, conversation.id)).compacted).toBe(1);
    expect((await getConversationContext(database.db, conversation.id)).map((m) => m.content)).toEqual([first]);
    await appendMessages(
      database.db,
      conversation.id,
      Array.from({ length: 12 }, (_, i) => ({ role: "user" as const, content: `more ${i} ${"word ".repeat(30)}` })),
    );
    expect((await loadContext(options, conversation.id)).compacted).toBe(1);
    expect(seen[1]).toContain(`EARLIER SUMMARY:\\n${first}\\n`);
  });

  it("what a work session restates follows the summary, in the same append, and the next call carries it", async () => {
    const { lead, conversation } = await filledConversation(4);
    const note = "(Your open tasks now)\n- [in_progress] Survey (task id: t1) ← in focus";
    const options = {
      model: offline,
      agentId: lead.id,
      budget: 10,
      instructions: "",
      restate: async () => ({ role: "user" as const, content: note }),
    };
    const { messages, compacted } = await loadContext(options, conversation.id);
    expect(compacted).toBe(1);
    const context = await getConversationContext(database.db, conversation.id);
    expect(context.map((m) => m.role)).toEqual(["summary", "user"]);
    expect(context[1]).toMatchObject({ content: note, previousMessageId: context[0]!.id });
    expect(messages).toEqual(toModelMessages(context));
  });
});
