import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendMessage, createConversation, getOrCreateConversation } from "@/lib/db/queries";
import { conversations, knowledgeItems, messages } from "@/lib/db/schema";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

/** The Postgres error a statement fails with (postgres-js wraps it in drizzle's error). */
async function failureOf(run: () => Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await run();
  } catch (error) {
    const cause =
      (error as { cause?: { code?: string; message: string } }).cause ?? (error as { code?: string; message: string });
    return { code: cause.code, message: cause.message };
  }
  throw new Error("expected the statement to fail");
}

describe("migrations", () => {
  it("create exactly the product's tables, without threads or sequence numbers", async () => {
    const tables = await database.db.execute<{ table_name: string }>(
      sql`select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by 1`,
    );
    expect(tables.map((t) => t.table_name).filter((name) => !name.startsWith("__"))).toEqual([
      "agent_inputs",
      "agents",
      "approvals",
      "conversations",
      "inbox_items",
      "knowledge_items",
      "knowledge_sources",
      "knowledge_vector_changes",
      "mcp_servers",
      "messages",
      "model_prices",
      "model_profiles",
      "notification_channels",
      "notifications",
      "questions",
      "server_keys",
      "sessions",
      "tasks",
      "teams",
      "tool_policies",
      "usage",
      "webhook_deliveries",
      "webhook_secrets",
      "work_sessions",
      "workers",
    ]);
    const sequenceColumns = await database.db.execute(
      sql`select 1 from information_schema.columns where table_schema = 'public' and column_name = 'sequence_number'`,
    );
    expect(sequenceColumns).toHaveLength(0);
  });

  it("index the hot paths", async () => {
    const indexes = await database.db.execute<{ indexname: string }>(
      sql`select indexname from pg_indexes where schemaname = 'public'`,
    );
    const names = indexes.map((i) => i.indexname);
    expect(names).toEqual(
      expect.arrayContaining([
        "messages_previous_message_id_unique", // context walk and chain tail
        "messages_one_root_per_conversation_idx",
        "inbox_items_unread_idx", // unread count
        "tasks_agent_status_created_idx", // tasks by agent and status
        "knowledge_items_search_idx", // full-text search
        "knowledge_items_created_idx", // the knowledge page's newest items
        "knowledge_items_unembedded_idx", // what the embedding job embeds next
        "knowledge_items_agent_embedded_idx", // the vectors made since a search last read them
        "knowledge_vector_changes_agent_idx", // whether kept vectors are current
      ]),
    );
  });
});

describe("messages schema", () => {
  it("exposes toolCalls, toolCallId, previousMessageId and the new roles through drizzle", async () => {
    const { lead } = await createTeamFixture(database.db);
    const conversation = await getOrCreateConversation(database.db, lead.id, "background");
    const call = await appendMessage(database.db, conversation.id, {
      role: "assistant",
      content: "Checking.",
      toolCalls: [{ toolCallId: "call_1", toolName: "tavilySearch", args: { query: "NVDA" } }],
    });
    const result = await appendMessage(database.db, conversation.id, {
      role: "tool",
      toolCallId: "call_1",
      content: "{}",
    });
    const summary = await appendMessage(database.db, conversation.id, { role: "summary", content: "So far: nothing." });
    expect(call.toolCalls).toEqual([{ toolCallId: "call_1", toolName: "tavilySearch", args: { query: "NVDA" } }]);
    expect(result.previousMessageId).toBe(call.id);
    expect(summary.previousMessageId).toBe(result.id);
    expect(conversation.mode).toBe("background");
  });

  it("rejects a dangling previousMessageId", async () => {
    const { lead } = await createTeamFixture(database.db);
    const conversation = await createConversation(database.db, lead.id, "foreground");
    const failure = await failureOf(() =>
      database.db.insert(messages).values({
        conversationId: conversation.id,
        role: "user",
        content: "hi",
        previousMessageId: "00000000-0000-4000-8000-000000000000",
      }),
    );
    expect(failure.code).toBe("23503"); // foreign_key_violation
  });

  it("rejects a fork: a second message after the same predecessor", async () => {
    const { lead } = await createTeamFixture(database.db);
    const conversation = await createConversation(database.db, lead.id, "foreground");
    const first = await appendMessage(database.db, conversation.id, { role: "user", content: "one" });
    await appendMessage(database.db, conversation.id, { role: "assistant", content: "two" });
    const failure = await failureOf(() =>
      database.db
        .insert(messages)
        .values({ conversationId: conversation.id, role: "user", content: "fork", previousMessageId: first.id }),
    );
    expect(failure.code).toBe("23505"); // unique_violation
  });

  it("rejects a second first message in one conversation", async () => {
    const { lead } = await createTeamFixture(database.db);
    const conversation = await createConversation(database.db, lead.id, "foreground");
    await appendMessage(database.db, conversation.id, { role: "user", content: "one" });
    const failure = await failureOf(() =>
      database.db.insert(messages).values({ conversationId: conversation.id, role: "user", content: "another root" }),
    );
    expect(failure.code).toBe("23505");
  });

  it("rejects a predecessor from another conversation", async () => {
    const { lead } = await createTeamFixture(database.db);
    const a = await createConversation(database.db, lead.id, "foreground");
    const b = await createConversation(database.db, lead.id, "foreground");
    const inA = await appendMessage(database.db, a.id, { role: "user", content: "in a" });
    await appendMessage(database.db, b.id, { role: "user", content: "in b" });
    const failure = await failureOf(() =>
      database.db
        .insert(messages)
        .values({ conversationId: b.id, role: "user", content: "x", previousMessageId: inA.id }),
    );
    expect(failure.code).toBe("23503");
  });

  it("refuses to re-point a message (the chain is append-only)", async () => {
    const { lead } = await createTeamFixture(database.db);
    const conversation = await createConversation(database.db, lead.id, "foreground");
    const first = await appendMessage(database.db, conversation.id, { role: "user", content: "one" });
    const second = await appendMessage(database.db, conversation.id, { role: "user", content: "two" });
    const failure = await failureOf(() =>
      database.db.execute(sql`update messages set previous_message_id = null where id = ${second.id}`),
    );
    expect(failure.message).toMatch(/append-only/);
    // The chain is as it was: the second message still follows the first.
    const [row] = await database.db.execute<{ previous_message_id: string | null }>(
      sql`select previous_message_id from messages where id = ${second.id}`,
    );
    expect(row!.previous_message_id).toBe(first.id);
  });

  it("rejects a tool row without toolCallId and an unknown role", async () => {
    const { lead } = await createTeamFixture(database.db);
    const conversation = await createConversation(database.db, lead.id, "foreground");
    expect(
      (
        await failureOf(() =>
          database.db.insert(messages).values({ conversationId: conversation.id, role: "tool", content: "x" }),
        )
      ).code,
    ).toBe("23514");
    expect(
      (
        await failureOf(() =>
          database.db.execute(
            sql`insert into messages (conversation_id, role, content) values (${conversation.id}, 'system', 'x')`,
          ),
        )
      ).code,
    ).toBe("23514");
  });
});

describe("conversations and knowledge schema", () => {
  it("allows one background conversation per agent", async () => {
    const { lead } = await createTeamFixture(database.db);
    const failure = await failureOf(() =>
      database.db.insert(conversations).values({ agentId: lead.id, mode: "background" }),
    );
    expect(failure.code).toBe("23505"); // the team fixture already made it
  });

  it("links knowledge items to their source conversation", async () => {
    const { lead } = await createTeamFixture(database.db);
    const conversation = await getOrCreateConversation(database.db, lead.id, "background");
    const [item] = await database.db
      .insert(knowledgeItems)
      .values({
        agentId: lead.id,
        type: "fact",
        content: "NVDA reports on Wednesday",
        sourceConversationId: conversation.id,
      })
      .returning({ sourceConversationId: knowledgeItems.sourceConversationId });
    expect(item!.sourceConversationId).toBe(conversation.id);
    const failure = await failureOf(() =>
      database.db.insert(knowledgeItems).values({
        agentId: lead.id,
        type: "fact",
        content: "x",
        sourceConversationId: "00000000-0000-4000-8000-000000000000",
      }),
    );
    expect(failure.code).toBe("23503");
  });
});
