import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  appendMessage,
  appendMessages,
  createConversation,
  getAllMessages,
  getBackgroundConversation,
  getConversationByMode,
  getConversationContext,
  getForegroundConversation,
  getLastMessage,
  getLatestConversation,
  getMessagesSince,
  getOrCreateConversation,
  listMessages,
} from "@/lib/db/queries";
import { createApproval } from "@/lib/db/queries/approvals";
import { deleteTeam } from "@/lib/db/queries/teams";
import type { Message } from "@/lib/db/schema";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase({ max: 20 });
});
afterAll(async () => {
  await database?.drop();
});

/** Follows previousMessageId from the first message: the order the chain itself defines. */
function assertUnbrokenChain(chain: Message[]) {
  expect(chain[0]?.previousMessageId).toBeNull();
  for (let i = 1; i < chain.length; i++) expect(chain[i]!.previousMessageId).toBe(chain[i - 1]!.id);
}

async function newConversation(mode: "foreground" | "background" = "foreground") {
  const { lead } = await createTeamFixture(database.db);
  return mode === "background"
    ? getBackgroundConversation(database.db, lead.id)
    : createConversation(database.db, lead.id, mode);
}

describe("conversations", () => {
  it("getOrCreateConversation returns one foreground conversation per agent, created on first use", async () => {
    const { subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    expect(await getConversationByMode(database.db, scout.id, "foreground")).toBeNull();
    const [a, b] = await Promise.all([
      getOrCreateConversation(database.db, scout.id, "foreground"),
      getOrCreateConversation(database.db, scout.id, "foreground"),
    ]);
    expect(a.id).toBe(b.id);
    expect(a.mode).toBe("foreground");
    expect((await getForegroundConversation(database.db, scout.id)).id).toBe(a.id);
  });

  it("getOrCreateConversation returns the agent's one background conversation", async () => {
    const { lead } = await createTeamFixture(database.db);
    const a = await getOrCreateConversation(database.db, lead.id, "background");
    const b = await getBackgroundConversation(database.db, lead.id);
    expect(a.mode).toBe("background");
    expect(b.id).toBe(a.id);
    const foreground = await getForegroundConversation(database.db, lead.id);
    expect(foreground.id).not.toBe(a.id);
    expect((await getLatestConversation(database.db, lead.id, "background"))?.id).toBe(a.id);
    expect(await getLatestConversation(database.db, lead.id)).not.toBeNull();
  });
});

describe("appending", () => {
  it("50 concurrent appends to one conversation give one unbroken chain with nothing lost", async () => {
    const conversation = await newConversation();
    const contents = Array.from({ length: 50 }, (_, i) => `message ${i}`);
    await Promise.all(
      contents.map((content) => appendMessage(database.db, conversation.id, { role: "user", content })),
    );
    const chain = await getAllMessages(database.db, conversation.id);
    expect(chain).toHaveLength(50);
    assertUnbrokenChain(chain);
    expect(new Set(chain.map((m) => m.content))).toEqual(new Set(contents));
    expect((await getLastMessage(database.db, conversation.id))?.id).toBe(chain.at(-1)!.id);
  });

  it("several inserts in one transaction keep their order", async () => {
    const conversation = await newConversation();
    await database.db.transaction(async (tx) => {
      for (let i = 0; i < 10; i++) await appendMessage(tx, conversation.id, { role: "user", content: `in tx ${i}` });
    });
    await appendMessages(database.db, conversation.id, [
      { role: "assistant", content: "batch a" },
      { role: "assistant", content: "batch b" },
    ]);
    const chain = await getAllMessages(database.db, conversation.id);
    assertUnbrokenChain(chain);
    expect(chain.map((m) => m.content)).toEqual([
      ...Array.from({ length: 10 }, (_, i) => `in tx ${i}`),
      "batch a",
      "batch b",
    ]);
  });

  it("refuses to append after a predecessor that is no longer the tail", async () => {
    const conversation = await newConversation();
    const first = await appendMessage(database.db, conversation.id, { role: "user", content: "one" });
    await appendMessage(database.db, conversation.id, { role: "user", content: "two" });
    await expect(
      appendMessage(database.db, conversation.id, { role: "summary", content: "stale", previousMessageId: first.id }),
    ).rejects.toMatchObject({ code: "conflict:message_chain" });
  });

  it("a tool result follows its call, linked by toolCallId", async () => {
    const conversation = await newConversation("background");
    const call = await appendMessage(database.db, conversation.id, {
      role: "assistant",
      content: "",
      toolCalls: [{ toolCallId: "call_42", toolName: "tavilySearch", args: { query: "NVDA price" } }],
    });
    const result = await appendMessage(database.db, conversation.id, {
      role: "tool",
      toolCallId: "call_42",
      content: '{"price":142.5}',
    });
    expect(result.role).toBe("tool");
    expect(result.toolCallId).toBe(call.toolCalls![0]!.toolCallId);
    expect(result.previousMessageId).toBe(call.id);
  });
});

describe("getConversationContext", () => {
  it("is empty for a new conversation", async () => {
    const conversation = await newConversation();
    expect(await getConversationContext(database.db, conversation.id)).toEqual([]);
  });

  it("returns every message in chain order when nothing was compacted", async () => {
    const conversation = await newConversation("background");
    await appendMessages(database.db, conversation.id, [
      { role: "user", content: "Research NVDA" },
      {
        role: "assistant",
        content: "Looking.",
        toolCalls: [{ toolCallId: "c1", toolName: "tavilySearch", args: { query: "NVDA" } }],
      },
      { role: "tool", toolCallId: "c1", content: "[]" },
      { role: "assistant", content: "Done." },
    ]);
    const context = await getConversationContext(database.db, conversation.id);
    expect(context.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
  });

  it("after 1 compaction: the summary and everything after it; nothing deleted", async () => {
    const conversation = await newConversation("background");
    await appendMessages(database.db, conversation.id, [
      { role: "user", content: "a" },
      { role: "assistant", content: "b" },
    ]);
    const last = await getLastMessage(database.db, conversation.id);
    const summary = await appendMessage(database.db, conversation.id, {
      role: "summary",
      content: "S1",
      previousMessageId: last!.id,
    });
    expect(summary.previousMessageId).toBe(last!.id);
    await appendMessage(database.db, conversation.id, { role: "user", content: "c" });
    const context = await getConversationContext(database.db, conversation.id);
    expect(context.map((m) => m.content)).toEqual(["S1", "c"]);
    expect(await getAllMessages(database.db, conversation.id)).toHaveLength(4);
  });

  it("after 3 compactions: only the latest summary and what follows it", async () => {
    const conversation = await newConversation("background");
    for (let round = 1; round <= 3; round++) {
      await appendMessages(database.db, conversation.id, [
        { role: "user", content: `u${round}` },
        { role: "assistant", content: `a${round}` },
      ]);
      await appendMessage(database.db, conversation.id, {
        role: "summary",
        content: `S${round} (folds in S${round - 1})`,
      });
    }
    await appendMessage(database.db, conversation.id, { role: "user", content: "latest" });
    const context = await getConversationContext(database.db, conversation.id);
    expect(context.map((m) => m.content)).toEqual(["S3 (folds in S2)", "latest"]);
    const all = await getAllMessages(database.db, conversation.id);
    expect(all.filter((m) => m.role === "summary")).toHaveLength(3);
    assertUnbrokenChain(all);
  });

  it("ends with a summary when the summary is the last message", async () => {
    const conversation = await newConversation("background");
    await appendMessage(database.db, conversation.id, { role: "user", content: "a" });
    await appendMessage(database.db, conversation.id, { role: "summary", content: "S" });
    expect((await getConversationContext(database.db, conversation.id)).map((m) => m.content)).toEqual(["S"]);
  });
});

describe("paging and reading on", () => {
  it("listMessages returns the newest page before a message, in chain order", async () => {
    const conversation = await newConversation();
    await appendMessages(
      database.db,
      conversation.id,
      Array.from({ length: 12 }, (_, i) => ({ role: "user" as const, content: `m${i}` })),
    );
    const newest = await listMessages(database.db, conversation.id, { limit: 5 });
    expect(newest.map((m) => m.content)).toEqual(["m7", "m8", "m9", "m10", "m11"]);
    const older = await listMessages(database.db, conversation.id, { limit: 5, before: newest[0]!.id });
    expect(older.map((m) => m.content)).toEqual(["m2", "m3", "m4", "m5", "m6"]);
    const oldest = await listMessages(database.db, conversation.id, { limit: 5, before: older[0]!.id });
    expect(oldest.map((m) => m.content)).toEqual(["m0", "m1"]);
  });

  it("getMessagesSince returns what arrived after a message", async () => {
    const conversation = await newConversation();
    const [first] = await appendMessages(database.db, conversation.id, [
      { role: "user", content: "x" },
      { role: "user", content: "y" },
      { role: "user", content: "z" },
    ]);
    expect((await getMessagesSince(database.db, conversation.id, first!.id)).map((m) => m.content)).toEqual(["y", "z"]);
  });
});

describe("live updates of a conversation", () => {
  it("announce each appended message at commit, with its conversation, agent, mode and role; a refused append announces nothing", async () => {
    const { lead } = await createTeamFixture(database.db);
    const conversation = await getBackgroundConversation(database.db, lead.id);
    const heard: Record<string, unknown>[] = [];
    const listening = await database.sql.listen("cadre_events", (payload) => {
      const event = JSON.parse(payload) as Record<string, unknown>;
      if (event.table === "messages" && event.conversationId === conversation.id) heard.push(event);
    });
    const settle = () => new Promise((resolve) => setTimeout(resolve, 150));
    try {
      let appendedId = "";
      await database.db.transaction(async (tx) => {
        appendedId = (await appendMessage(tx, conversation.id, { role: "user", content: "a task" })).id;
        await settle();
        expect(heard).toEqual([]); // not before the commit: a page would read nothing yet
      });
      await settle();
      expect(heard).toEqual([
        {
          table: "messages",
          op: "insert",
          id: appendedId,
          conversationId: conversation.id,
          agentId: lead.id,
          mode: "background",
          role: "user",
        },
      ]);

      // Lazily committed rows (a step's answer) are announced too; an append refused by the chain check is not.
      const answer = await appendMessage(
        database.db,
        conversation.id,
        { role: "assistant", content: "noted" },
        { lazyCommit: true },
      );
      await expect(
        appendMessage(database.db, conversation.id, {
          role: "assistant",
          content: "stale",
          previousMessageId: appendedId,
        }),
      ).rejects.toThrow(/moved on/);
      await settle();
      expect(heard.map((event) => event.id)).toEqual([appendedId, answer.id]);
    } finally {
      await listening.unlisten();
    }
  });
});

describe("a step's tool calls as stored", () => {
  const answer = (ids: string[]) => ({
    role: "assistant" as const,
    content: "",
    toolCalls: ids.map((toolCallId) => ({ toolCallId, toolName: "searchKnowledge", args: {} })),
  });

  it("keep the model's ids while the conversation has not used them, and get new ones when a result or a waiting approval has them", async () => {
    const { lead } = await createTeamFixture(database.db);
    const log = await getBackgroundConversation(database.db, lead.id);
    const first = await appendMessage(database.db, log.id, answer(["call_0", "call_1"]));
    expect(first.toolCalls!.map((call) => call.toolCallId)).toEqual(["call_0", "call_1"]);
    await appendMessage(database.db, log.id, { role: "tool", toolCallId: "call_0", content: "done" });
    // call_1 waits for the person: it has an approval and no result yet.
    await createApproval(database.db, {
      teamId: lead.teamId,
      agentId: lead.id,
      conversationId: log.id,
      taskId: null,
      toolCallId: "call_1",
      toolName: "searchKnowledge",
      input: {},
      reason: "",
    });

    const next = await appendMessage(database.db, log.id, answer(["call_0", "call_1", "call_2"]));
    const [zero, one, two] = next.toolCalls!.map((call) => call.toolCallId);
    expect(zero).toMatch(/^call_0~[0-9a-f]{6}$/);
    expect(one).toMatch(/^call_1~[0-9a-f]{6}$/);
    expect(two).toBe("call_2");
    // Each keeps its place and the rest of what the model sent.
    expect(next.toolCalls!.map((call) => call.toolName)).toEqual([
      "searchKnowledge",
      "searchKnowledge",
      "searchKnowledge",
    ]);
    // The new ids take results of their own.
    await appendMessage(database.db, log.id, { role: "tool", toolCallId: zero!, content: "again" });
    const results = (await getAllMessages(database.db, log.id)).filter((message) => message.role === "tool");
    expect(results.map((message) => message.toolCallId)).toEqual(["call_0", zero]);
  });
});

describe("an answer with its call's usage row", () => {
  it("writes both in one statement, the usage row even when the answer is refused", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const log = await getBackgroundConversation(database.db, lead.id);
    const usage = {
      agentId: lead.id,
      conversationId: log.id,
      purpose: "work" as const,
      model: "mock",
      inputTokens: 12,
      outputTokens: 3,
    };
    await appendMessage(database.db, log.id, { role: "assistant", content: "first" }, { usage });
    await expect(
      appendMessage(database.db, log.id, { role: "assistant", content: "stale", previousMessageId: null }, { usage }),
    ).rejects.toThrow(/moved on/);
    const rows =
      await database.sql`select input_tokens, output_tokens, agent_id, team_id from usage where conversation_id = ${log.id}`;
    expect(rows.map((row) => [row.input_tokens, row.output_tokens, row.agent_id, row.team_id])).toEqual([
      [12, 3, lead.id, team.id],
      [12, 3, lead.id, team.id],
    ]);
  });

  it("never deadlocks with a deletion of its team: the append lands first or finds the conversation gone", async () => {
    for (let round = 0; round < 20; round++) {
      const { team, lead } = await createTeamFixture(database.db);
      const log = await getBackgroundConversation(database.db, lead.id);
      await appendMessage(database.db, log.id, { role: "user", content: "Task" });
      const usage = {
        agentId: lead.id,
        conversationId: log.id,
        purpose: "work" as const,
        model: "mock",
        inputTokens: 1,
        outputTokens: 1,
      };
      const [append, deletion] = await Promise.allSettled([
        appendMessage(database.db, log.id, { role: "assistant", content: "answer" }, { usage, lazyCommit: true }),
        deleteTeam(database.db, team.id),
      ]);
      expect(deletion.status).toBe("fulfilled");
      if (append.status === "rejected") expect(String(append.reason)).toMatch(/No conversation/);
    }
  });
});
