import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compactConversation, compactIfNeeded, estimateContextTokens, shouldCompact } from "@/lib/agents/compaction";
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
  it("shouldCompact is true over the budget and false under it", async () => {
    const { conversation } = await filledConversation();
    const context = await getConversationContext(database.db, conversation.id);
    const size = estimateContextTokens(context, "instructions");
    expect(
      await shouldCompact({ db: database.db, budget: size - 1, instructions: "instructions" }, conversation.id),
    ).toBe(true);
    expect(
      await shouldCompact({ db: database.db, budget: size + 100, instructions: "instructions" }, conversation.id),
    ).toBe(false);
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
    const first = await compactIfNeeded(
      { db: database.db, model: choice, agentId: lead.id, budget: 10, instructions: "" },
      conversation.id,
    );
    await appendMessages(database.db, conversation.id, [{ role: "user", content: `more ${"x ".repeat(100)}` }]);
    const second = await compactIfNeeded(
      { db: database.db, model: choice, agentId: lead.id, budget: 10, instructions: "" },
      conversation.id,
    );
    expect(first!.content).toBe("S1");
    expect(second!.content).toBe("S2");
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
    expect(
      await compactIfNeeded(
        { db: database.db, model: offline, agentId: lead.id, budget: 10, instructions: "" },
        conversation.id,
      ),
    ).toBeNull();
    await appendMessages(database.db, conversation.id, [{ role: "tool", toolCallId: "c1", content: "results" }]);
    const summary = await compactIfNeeded(
      { db: database.db, model: offline, agentId: lead.id, budget: 10, instructions: "" },
      conversation.id,
    );
    expect(summary?.role).toBe("summary");
  });
});
