import "server-only";
import { and, eq, sql, type SQL } from "drizzle-orm";
import { CadreError, notFound } from "@/lib/errors";
import type { Db } from "../client";
import { storable } from "../storable";
import { conversations, messages, type Message, type MessageRole, type StoredToolCall } from "../schema";
import { commitsLazily, lazyCommitClause } from "./lazy-commit";
import { executePrepared, statementVariants } from "./prepared";
import { usageKeys, usageMeasures, writeUsage, type NewUsage } from "./usage";

export type NewMessage = {
  /**
   * The row's id, when the writer chose it: a work session names a tool's result before it is
   * written, so its next call can follow the result while the write is on its way.
   */
  id?: string;
  role: MessageRole;
  content: string;
  thinking?: string | null;
  toolCalls?: StoredToolCall[] | null;
  toolCallId?: string | null;
  /** A briefing names its inbox item. */
  inboxItemId?: string | null;
  /**
   * The task a work log's message belongs to (see the schema's messages.task_id); null: none.
   * Not given (undefined): the task the agent's running session is on (work_sessions.task_id), if any.
   */
  taskId?: string | null;
  /**
   * The message this one must follow. Omitted: the current tail of the conversation.
   * Given: the append fails with a conflict when the tail has moved on, so a writer
   * that computed something from a snapshot (a compaction summary) never lands after
   * messages it did not see.
   */
  previousMessageId?: string | null;
};

/**
 * Appends messages to a conversation's chain, in order, in one transaction.
 *
 * Each append locks the conversation row first, so concurrent appends to one
 * conversation queue up and each sees the tail the previous one left. The schema's
 * constraints (one successor per message, one first message per conversation,
 * predecessor in the same conversation) make a fork impossible even for a writer
 * that skips this.
 */
export async function appendMessages(
  db: Db,
  conversationId: string,
  newMessages: NewMessage[],
  options: AppendOptions = {},
): Promise<Message[]> {
  if (newMessages.length === 0) return [];
  if (newMessages.length === 1) return [await appendOne(db, conversationId, newMessages[0]!, options)];
  return db.transaction(async (tx) => {
    const appended: Message[] = [];
    // The first append's lock holds until commit, so the rest follow it unbroken.
    for (const [index, message] of newMessages.entries()) {
      appended.push(
        await appendOne(tx, conversationId, index === 0 ? message : { ...message, previousMessageId: undefined }, {
          ...options,
          lazyCommit: false,
        }),
      );
    }
    return appended;
  });
}

export type AppendOptions = {
  /** Commit without waiting for the disk (see lazy-commit.ts): for a row a later durable commit flushes too. */
  lazyCommit?: boolean;
  /**
   * The work session writing: the row lands only while that session still holds the agent
   * (`running`), else SessionTakenOver. A worker that was paused past the stale window and
   * wakes up after another took its agent over thus writes nothing into the new session's log.
   */
  heldBy?: string;
  /**
   * The usage row of the model call whose answer this is, written by the same statement (one
   * statement instead of two on every step of a work session). It is written even when the
   * answer is refused (the call was made); the agent's row is locked before the conversation's,
   * as a deletion locks them, so the two never wait for each other.
   */
  usage?: NewUsage;
};

/** The writing session no longer holds its agent: another worker took the agent over (see AppendOptions.heldBy). */
export class SessionTakenOver extends CadreError {
  constructor(sessionId: string) {
    super(
      "conflict:session_taken_over",
      `Work session ${sessionId} was taken over by another worker; it writes nothing more.`,
    );
  }
}

/**
 * Lock, read the tail, insert, move the tail: one statement, so one round trip
 * instead of five (begin, lock, insert, move, commit) on every step a session stores.
 * The lock (FOR UPDATE) returns the newest tail even when another append committed
 * while this one waited for it.
 */
type AppendValues = {
  id: string | null;
  conversationId: string;
  role: MessageRole;
  content: string;
  thinking: string | null;
  toolCalls: string | null;
  toolCallId: string | null;
  inboxItemId: string | null;
  taskId: string | null;
  taskNamed: boolean;
  expected: string | null;
  heldBy: string | null;
} & Partial<ReturnType<typeof usageKeys> & ReturnType<typeof usageMeasures>>;

type AppendVariant = `${"lazy" | "durable"}${"" | "-after"}${"" | "-held"}${"" | "-usage"}`;

const appendStatement = statementVariants<
  AppendVariant,
  MessageRow & { tail: string | null; held: boolean },
  AppendValues
>((variant) => {
  const value = (name: keyof AppendValues) => sql.placeholder(name);
  const after = variant.includes("-after")
    ? sql`c.last_message_id is not distinct from ${value("expected")}::uuid`
    : sql`true`;
  const held = variant.includes("-held")
    ? sql`exists (select 1 from work_sessions s where s.id = ${value("heldBy")}::uuid and s.status = 'running')`
    : sql`true`;
  const withUsage = variant.endsWith("-usage");
  // The usage row is written whatever the append finds: the call was made, and its cost counts
  // even when the conversation is gone (its agent removed meanwhile) or the answer is refused.
  // It has no foreign keys, so it takes no lock beside the conversation's.
  // It settles the row the call's start wrote (see recordUsageStart), or writes one.
  const used = withUsage
    ? sql`, used as (
      ${writeUsage("settle")}
      returning id
    )`
    : sql``;
  return sql`
    with conversation as (
      select id, agent_id, mode, last_message_id, ${held} as held from conversations
       where id = ${value("conversationId")}::uuid
         for update of conversations
    )${used}, appended as (
      insert into messages (id, conversation_id, role, content, thinking, tool_calls, tool_call_id, inbox_item_id, task_id, previous_message_id)
      select coalesce(${value("id")}::uuid, gen_random_uuid()), c.id, ${value("role")}, ${value("content")}, ${value("thinking")}, ${toolCallsOf(value("toolCalls"))}, ${value("toolCallId")}, ${value("inboxItemId")}::uuid,
             -- Not named: a work log's row belongs to the task its agent's running session is on.
             case when ${value("taskNamed")}::boolean then ${value("taskId")}::uuid when c.mode = 'background'
               then (select s.task_id from work_sessions s where s.agent_id = c.agent_id and s.status = 'running') end,
             c.last_message_id
        from conversation c, ${lazyCommitClause(variant.startsWith("lazy"))}
       where ${after} and c.held
      returning *
    ), moved as (
      update conversations c set last_message_id = a.id, updated_at = now()
        from appended a where c.id = a.conversation_id
    ), announced as (
      -- Open pages learn of it at commit (see 0003_live_events.sql); sent here, not by a trigger.
      select pg_notify('cadre_events', jsonb_build_object('table', 'messages', 'op', 'insert', 'id', a.id, 'conversationId', c.id,
                                                          'agentId', c.agent_id, 'mode', c.mode, 'role', a.role)::text)
        from appended a, conversation c
    )
    select c.last_message_id as tail, c.held, a.*, (select count(*) from announced) as announced${withUsage ? sql`, (select count(*) from used) as used` : sql``}
      from conversation c left join appended a on true`;
});

/**
 * A step's calls as stored: a call whose id the conversation already used gets a new one (its
 * id, a tilde and six random hex digits). Used: a result has it, or an approval (a call held
 * for the person has no result yet). Providers that number calls per answer (call_0, call_1, …)
 * reuse ids; results and approvals are unique per id and conversation, so the new call's
 * result could not be stored, and later prompts would pair it with the old one. Two probes of
 * unique indexes per call; the caller reads the stored ids back (see StepRecorder.storedId).
 * Ids repeated within one answer are made unique before the SDK sees them (model-call.ts).
 */
function toolCallsOf(calls: ReturnType<typeof sql.placeholder>): SQL {
  return sql`(select jsonb_agg(case when exists (select 1 from messages r where r.conversation_id = c.id and r.tool_call_id = call->>'toolCallId')
                                      or exists (select 1 from approvals p where p.conversation_id = c.id and p.tool_call_id = call->>'toolCallId')
                                    then jsonb_set(call, '{toolCallId}', to_jsonb(concat(call->>'toolCallId', '~', left(md5(random()::text), 6))))
                                    else call end order by n)
                from jsonb_array_elements(${calls}::jsonb) with ordinality as calls(call, n))`;
}

async function appendOne(
  db: Db,
  conversationId: string,
  message: NewMessage,
  options: AppendOptions,
): Promise<Message> {
  const expected = message.previousMessageId;
  const toolCalls =
    message.toolCalls && message.toolCalls.length > 0
      ? JSON.stringify(message.toolCalls, (_key, value: unknown) =>
          typeof value === "string" ? storable(value) : value,
        )
      : null;
  const variant: AppendVariant = `${commitsLazily(db, options.lazyCommit ?? false) ? "lazy" : "durable"}${expected === undefined ? "" : "-after"}${options.heldBy ? "-held" : ""}${options.usage ? "-usage" : ""}`;
  const rows = await appendStatement(variant)(db, {
    id: message.id ?? null,
    conversationId,
    role: message.role,
    content: storable(message.content),
    thinking: message.thinking == null ? null : storable(message.thinking),
    toolCalls,
    toolCallId: message.toolCallId ?? null,
    inboxItemId: message.inboxItemId ?? null,
    taskId: message.taskId ?? null,
    taskNamed: message.taskId !== undefined,
    expected: expected ?? null,
    heldBy: options.heldBy ?? null,
    ...(options.usage ? { ...usageKeys(options.usage), ...usageMeasures(options.usage) } : {}),
  });
  const [row] = rows;
  if (!row) throw notFound("conversation", conversationId);
  if (!row.held) throw new SessionTakenOver(options.heldBy!);
  if (!row.id) {
    throw new CadreError(
      "conflict:message_chain",
      `The conversation moved on: its last message is ${row.tail ?? "none"}, not ${expected ?? "none"}.`,
    );
  }
  return toMessage(row);
}

/**
 * Appends one message. With `lazyCommit` its commit does not wait for the disk (see
 * lazy-commit.ts), for a row that a durable commit right after flushes too: a step's
 * assistant row, which its tool's result follows.
 */
export async function appendMessage(
  db: Db,
  conversationId: string,
  message: NewMessage,
  options: AppendOptions = {},
): Promise<Message> {
  const [appended] = await appendMessages(db, conversationId, [message], options);
  return appended!;
}

export async function getLastMessage(db: Db, conversationId: string): Promise<Message | null> {
  const rows = await db
    .select({ message: messages })
    .from(conversations)
    .innerJoin(messages, eq(messages.id, conversations.lastMessageId))
    .where(eq(conversations.id, conversationId));
  return rows[0]?.message ?? null;
}

type MessageRow = {
  id: string;
  conversation_id: string;
  role: MessageRole;
  content: string;
  thinking: string | null;
  tool_calls: StoredToolCall[] | null;
  tool_call_id: string | null;
  inbox_item_id: string | null;
  task_id: string | null;
  previous_message_id: string | null;
  created_at: string | Date;
};

function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    role: row.role,
    content: row.content,
    thinking: row.thinking,
    toolCalls: row.tool_calls,
    toolCallId: row.tool_call_id,
    inboxItemId: row.inbox_item_id ?? null,
    taskId: row.task_id ?? null,
    previousMessageId: row.previous_message_id,
    createdAt: row.created_at instanceof Date ? row.created_at : new Date(row.created_at),
  };
}

const messageColumns = sql.raw(
  "m.id, m.conversation_id, m.role, m.content, m.thinking, m.tool_calls, m.tool_call_id, m.inbox_item_id, m.task_id, m.previous_message_id, m.created_at",
);

/**
 * The context a model sees: the latest summary and everything after it, in chain
 * order; the whole conversation when it was never compacted. It walks back from the
 * tail and stops at the first summary, so its cost follows the context's size, not
 * the conversation's.
 */
export function getConversationContext(db: Db, conversationId: string): Promise<Message[]> {
  return readContext(db, sql`c.id = ${conversationId}`);
}

/** getConversationContext of the agent's work log, found by the agent: read beside the log's own row at a session's start. */
export function getBackgroundContext(db: Db, agentId: string): Promise<Message[]> {
  return readContext(db, sql`c.agent_id = ${agentId} and c.mode = 'background'`);
}

async function readContext(db: Db, conversation: SQL): Promise<Message[]> {
  const rows = await executePrepared<MessageRow & { depth: number }>(
    db,
    sql`
    with recursive chain as (
      select ${messageColumns}, 0 as depth
        from conversations c join messages m on m.id = c.last_message_id
       where ${conversation}
      union all
      select ${messageColumns}, chain.depth + 1
        from chain join messages m on m.id = chain.previous_message_id
       where chain.role <> 'summary'
    )
    select * from chain order by depth desc`,
  );
  return rows.map(toMessage);
}

/**
 * The latest message of the context that starts with `like` (a SQL LIKE pattern), walking back
 * from the tail; null when there is none since the latest summary. Its cost follows how far back
 * it is, not the log's length.
 */
export async function latestInContext(db: Db, conversationId: string, like: string): Promise<string | null> {
  const [row] = await executePrepared<{ role: MessageRole; content: string }>(
    db,
    sql`
    with recursive chain as (
      select m.role, m.content, m.previous_message_id
        from conversations c join messages m on m.id = c.last_message_id
       where c.id = ${conversationId}
      union all
      select m.role, m.content, m.previous_message_id
        from chain join messages m on m.id = chain.previous_message_id
       where chain.role <> 'summary' and not (chain.role = 'user' and chain.content like ${like})
    )
    select role, content from chain where role = 'summary' or (role = 'user' and content like ${like}) limit 1`,
  );
  return row && row.role !== "summary" ? row.content : null;
}

/**
 * Whether the log's tail, a tool result, answers a call of the assistant message the trailing
 * results follow: false for a result that came after the log had moved on past its call (a call
 * held for the person, withdrawn when its task ended), which answers nothing the model awaits.
 */
export async function tailAnswersLastCall(db: Db, conversationId: string): Promise<boolean> {
  const [row] = await executePrepared<{ answers: boolean }>(
    db,
    sql`
    with recursive chain as (
      select m.role, m.tool_calls, m.previous_message_id, m.tool_call_id as tail_call
        from conversations c join messages m on m.id = c.last_message_id
       where c.id = ${conversationId}
      union all
      select m.role, m.tool_calls, m.previous_message_id, chain.tail_call
        from chain join messages m on m.id = chain.previous_message_id
       where chain.role = 'tool'
    )
    select coalesce(role = 'assistant' and tool_calls @> jsonb_build_array(jsonb_build_object('toolCallId', tail_call)), false) as answers
      from chain where role <> 'tool' limit 1`,
  );
  return row?.answers ?? false;
}

/**
 * A page of history, newest last: at most `limit` messages before message `before`
 * (or up to the tail). Walks the chain backwards from the cursor's predecessor, so a
 * page costs the same at any depth, and pages never overlap or leave a gap (the chain
 * is the order). A cursor that is no message of this conversation is a 404: an empty
 * page would read as "the beginning".
 */
export async function listMessages(
  db: Db,
  conversationId: string,
  options: { limit?: number; before?: string } = {},
): Promise<Message[]> {
  const limit = Math.max(1, Math.min(options.limit ?? 100, 500));
  const start = options.before
    ? sql`select ${messageColumns}, 1 as depth from messages b join messages m on m.id = b.previous_message_id
           where b.id = ${options.before} and b.conversation_id = ${conversationId}`
    : sql`select ${messageColumns}, 1 as depth from conversations c join messages m on m.id = c.last_message_id
           where c.id = ${conversationId}`;
  const rows = await db.execute<MessageRow & { depth: number }>(sql`
    with recursive chain as (
      ${start}
      union all
      select ${messageColumns}, chain.depth + 1
        from chain join messages m on m.id = chain.previous_message_id
       where chain.depth < ${limit}
    )
    select * from chain order by depth desc`);
  if (rows.length === 0 && options.before) {
    // Nothing before it: the first message, or no message of this conversation at all.
    const [cursor] = await db.execute<{ id: string }>(
      sql`select id from messages where id = ${options.before} and conversation_id = ${conversationId}`,
    );
    if (!cursor)
      throw new CadreError(
        "not_found:message",
        `No message ${options.before} in this conversation: page back with the id of the oldest message a page returned.`,
      );
  }
  return rows.map(toMessage);
}

/**
 * Every message after `afterMessageId` (from the first message when null), in chain order;
 * with `limit`, only the next that many: a page forwards, whose last id starts the next.
 */
export async function getMessagesSince(
  db: Db,
  conversationId: string,
  afterMessageId: string | null,
  options: { limit?: number } = {},
): Promise<Message[]> {
  const variant = `${afterMessageId ? "after" : "from-start"}${options.limit === undefined ? "" : "-page"}` as const;
  const rows = await messagesSinceStatement(variant)(db, {
    conversationId,
    afterMessageId,
    limit: options.limit ?? null,
  });
  return rows.map(toMessage);
}

const messagesSinceStatement = statementVariants<
  "after" | "from-start" | "after-page" | "from-start-page",
  MessageRow & { depth: number },
  { conversationId: string; afterMessageId: string | null; limit: number | null }
>((variant) => {
  const conversationId = sql`${sql.placeholder("conversationId")}::uuid`;
  const start = variant.startsWith("after")
    ? sql`select ${messageColumns}, 1 as depth from messages m
           where m.previous_message_id = ${sql.placeholder("afterMessageId")}::uuid and m.conversation_id = ${conversationId}`
    : sql`select ${messageColumns}, 1 as depth from messages m
           where m.conversation_id = ${conversationId} and m.previous_message_id is null`;
  return sql`
    with recursive chain as (
      ${start}
      union all
      select ${messageColumns}, chain.depth + 1
        from chain join messages m on m.previous_message_id = chain.id
       ${variant.endsWith("-page") ? sql`where chain.depth < ${sql.placeholder("limit")}::int` : sql``}
    )
    select * from chain order by depth`;
});

/** The whole conversation in chain order (admin views, knowledge extraction over a full log). */
export function getAllMessages(db: Db, conversationId: string): Promise<Message[]> {
  return getMessagesSince(db, conversationId, null);
}

/** The message before `messageId` in its chain; undefined when no such message is in this conversation. */
export async function getPreviousMessageId(
  db: Db,
  conversationId: string,
  messageId: string,
): Promise<{ previous: string | null } | undefined> {
  const [target] = await db
    .select({ previous: messages.previousMessageId })
    .from(messages)
    .where(and(eq(messages.id, messageId), eq(messages.conversationId, conversationId)));
  return target;
}

/** The assistant message of the conversation that holds the tool call (the newest, should a model reuse an id). */
export async function findMessageHoldingCall(
  db: Db,
  conversationId: string,
  toolCallId: string,
): Promise<string | null> {
  const [row] = await db.execute<{ id: string }>(
    sql`select id from messages where conversation_id = ${conversationId} and role = 'assistant'
         and tool_calls @> ${JSON.stringify([{ toolCallId }])}::jsonb order by created_at desc limit 1`,
  );
  return row?.id ?? null;
}

/** Whether the call has its result in the conversation. */
export async function hasToolResult(db: Db, conversationId: string, toolCallId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: messages.id })
    .from(messages)
    .where(and(eq(messages.conversationId, conversationId), eq(messages.toolCallId, toolCallId)))
    .limit(1);
  return row !== undefined;
}

/** The message that made the call, with all its calls. */
export async function getCallMessage(
  db: Db,
  conversationId: string,
  toolCallId: string,
): Promise<{ id: string; toolCalls: StoredToolCall[] | null } | null> {
  const [call] = await db
    .select({ id: messages.id, toolCalls: messages.toolCalls })
    .from(messages)
    .where(
      and(
        eq(messages.conversationId, conversationId),
        sql`${messages.toolCalls} @> ${JSON.stringify([{ toolCallId }])}::jsonb`,
      ),
    )
    .limit(1);
  return call ?? null;
}
