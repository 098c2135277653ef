import "server-only";
import { sql, type InferInsertModel, type InferSelectModel } from "drizzle-orm";
import {
  type AnyPgColumn,
  bigint,
  boolean,
  check,
  customType,
  foreignKey,
  index,
  integer,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  real,
  text,
  timestamp,
  unique,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";

// The product's vocabularies. Each is also a CHECK constraint so the database refuses a typo.
export const teamStatuses = ["active", "paused"] as const;
export const agentRoles = ["lead", "subordinate"] as const;
export const conversationModes = ["foreground", "background"] as const;
export const messageRoles = ["user", "assistant", "tool", "summary"] as const;
export const taskSources = ["user", "lead", "system", "schedule", "webhook"] as const;
export const taskStatuses = ["pending", "in_progress", "waiting_input", "completed", "failed", "cancelled"] as const;
export const inboxItemTypes = ["briefing", "question", "approval", "alert"] as const;
export const knowledgeItemTypes = ["fact", "technique", "pattern", "lesson"] as const;
export const usagePurposes = [
  "chat",
  "work",
  "compaction",
  "extraction",
  "briefing",
  "title",
  "draft",
  "embedding",
  "model_check",
] as const;
export const workSessionStatuses = ["running", "completed", "failed", "stopped", "interrupted"] as const;
export const questionStatuses = ["open", "answered", "withdrawn"] as const;
export const approvalStatuses = ["pending", "approved", "denied", "withdrawn"] as const;
export const toolPolicies = ["auto", "ask", "deny"] as const;
export const notificationKinds = ["briefing", "question", "approval", "alert"] as const;
export const notificationChannelTypes = ["webhook", "email"] as const;
export const notificationStatuses = ["pending", "sent", "failed"] as const;
/** Where the person decided or answered: on Cadre's pages, through a link in an email or a webhook message, or a Slack button. */
export const decisionChannels = ["app", "email", "webhook", "slack"] as const;
export const mcpTransports = ["http", "stdio"] as const;

export type TeamStatus = (typeof teamStatuses)[number];
export type AgentRole = (typeof agentRoles)[number];
export type ConversationMode = (typeof conversationModes)[number];
export type MessageRole = (typeof messageRoles)[number];
export type TaskSource = (typeof taskSources)[number];
export type TaskStatus = (typeof taskStatuses)[number];
export type InboxItemType = (typeof inboxItemTypes)[number];
export type KnowledgeItemType = (typeof knowledgeItemTypes)[number];
export type UsagePurpose = (typeof usagePurposes)[number];
export type WorkSessionStatus = (typeof workSessionStatuses)[number];
export type QuestionStatus = (typeof questionStatuses)[number];
export type ApprovalStatus = (typeof approvalStatuses)[number];
export type ToolPolicy = (typeof toolPolicies)[number];
export type NotificationKind = (typeof notificationKinds)[number];
export type NotificationChannelType = (typeof notificationChannelTypes)[number];
export type NotificationStatus = (typeof notificationStatuses)[number];
export type DecisionChannel = (typeof decisionChannels)[number];
export type McpTransport = (typeof mcpTransports)[number];
/** What a server offered when it was last listed: the team page and the policies show it. */
export type McpToolInfo = { name: string; description: string; readOnly: boolean };
/** Which tools an agent may use: names of built-in tools and `SERVER__TOOL` or `SERVER__*` of MCP servers. */
export type ToolScope = { allow: string[] };

/** Seed 004's stored shape of one tool call on an assistant message. */
export type StoredToolCall = { toolCallId: string; toolName: string; args: unknown };

const oneOf = (column: string, values: readonly string[]) =>
  sql.raw(`${column} in (${values.map((value) => `'${value}'`).join(", ")})`);

const createdAt = () => timestamp("created_at", { withTimezone: true, mode: "date" }).defaultNow().notNull();
const updatedAt = () => timestamp("updated_at", { withTimezone: true, mode: "date" }).defaultNow().notNull();

const tsvector = customType<{ data: string }>({ dataType: () => "tsvector" });
const bytea = customType<{ data: Buffer }>({ dataType: () => "bytea" });

export const teams = pgTable(
  "teams",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    mission: text("mission").notNull(),
    status: text("status").$type<TeamStatus>().notNull().default("active"),
    /** Tokens (input + output) the team may spend per UTC day; null: TEAM_DAILY_TOKEN_BUDGET. */
    dailyTokenBudget: integer("daily_token_budget"),
    /** US dollars the team may spend per UTC day, priced by model_prices; null: no cost cap. */
    dailyCostBudgetUsd: numeric("daily_cost_budget_usd", { precision: 12, scale: 4, mode: "number" }),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    check("teams_status_check", oneOf("status", teamStatuses)),
    check("teams_daily_token_budget_check", sql`daily_token_budget is null or daily_token_budget > 0`),
    check("teams_daily_cost_budget_check", sql`daily_cost_budget_usd is null or daily_cost_budget_usd > 0`),
    index("teams_created_at_idx").on(t.createdAt),
  ],
);

export const agents = pgTable(
  "agents",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    role: text("role").$type<AgentRole>().notNull(),
    parentAgentId: uuid("parent_agent_id"),
    instructions: text("instructions").notNull().default(""),
    model: text("model"),
    schedule: text("schedule"),
    /** The IANA time zone the lead's schedule is read in ("Europe/Berlin"); null: UTC. */
    scheduleTimeZone: text("schedule_time_zone"),
    /** Which tools the agent may use; null: every tool its role offers and every MCP server of its team. */
    toolScope: jsonb("tool_scope").$type<ToolScope>(),
    /**
     * Set whenever something gives the agent work (a task, a message in its background
     * conversation). A session clears it when it looks for work and checks it again,
     * under the same row lock, before it ends: a wake-up is never lost between the two.
     */
    wakeRequestedAt: timestamp("wake_requested_at", { withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    check("agents_role_check", oneOf("role", agentRoles)),
    // A lead has no parent; a subordinate always has one.
    check("agents_parent_check", sql`(role = 'lead') = (parent_agent_id is null)`),
    unique("agents_team_id_id_unique").on(t.teamId, t.id),
    // The parent is an agent of the same team: the composite key makes a cross-team parent impossible.
    foreignKey({
      name: "agents_parent_same_team_fk",
      columns: [t.teamId, t.parentAgentId],
      foreignColumns: [t.teamId, t.id],
    }).onDelete("cascade"),
    uniqueIndex("agents_one_lead_per_team_idx").on(t.teamId).where(sql`role = 'lead'`),
    index("agents_parent_agent_id_idx").on(t.parentAgentId),
  ],
);

export const conversations = pgTable(
  "conversations",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    agentId: uuid("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    mode: text("mode").$type<ConversationMode>().notNull().default("foreground"),
    /**
     * The tail of the message chain. Appends lock this row, read the tail, insert and
     * move it, so writers queue up behind each other instead of racing.
     */
    lastMessageId: uuid("last_message_id").references((): AnyPgColumn => messages.id, { onDelete: "set null" }),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    check("conversations_mode_check", oneOf("mode", conversationModes)),
    // One background conversation per agent, kept for its whole life.
    uniqueIndex("conversations_one_background_per_agent_idx").on(t.agentId).where(sql`mode = 'background'`),
    index("conversations_agent_mode_created_idx").on(t.agentId, t.mode, t.createdAt),
  ],
);

export const messages = pgTable(
  "messages",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    conversationId: uuid("conversation_id")
      .notNull()
      .references(() => conversations.id, { onDelete: "cascade" }),
    role: text("role").$type<MessageRole>().notNull(),
    content: text("content").notNull(),
    thinking: text("thinking"),
    toolCalls: jsonb("tool_calls").$type<StoredToolCall[]>(),
    toolCallId: text("tool_call_id"),
    /** A briefing in the chat names the inbox item it belongs to (no FK: messages are append-only, and both go with their team). */
    inboxItemId: uuid("inbox_item_id"),
    /**
     * The task a work log's message belongs to: the task in focus when it was written, or the
     * task input was about. It gathers a request's work into one story (the timeline). No FK:
     * messages are append-only, and a task goes only with its agent, whose log goes too.
     */
    taskId: uuid("task_id"),
    previousMessageId: uuid("previous_message_id"),
    // clock_timestamp, not now(): now() is the transaction's start and would tie for rows written together.
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).default(sql`clock_timestamp()`).notNull(),
  },
  (t) => [
    check("messages_role_check", oneOf("role", messageRoles)),
    check("messages_tool_call_id_check", sql`(role = 'tool') = (tool_call_id is not null)`),
    check("messages_tool_calls_check", sql`tool_calls is null or role = 'assistant'`),
    unique("messages_conversation_id_id_unique").on(t.conversationId, t.id),
    // The chain cannot fork: a message has at most one successor ...
    unique("messages_previous_message_id_unique").on(t.previousMessageId),
    // ... a conversation has exactly one first message ...
    uniqueIndex("messages_one_root_per_conversation_idx").on(t.conversationId).where(sql`previous_message_id is null`),
    // ... and the predecessor exists and belongs to the same conversation.
    foreignKey({
      name: "messages_previous_same_conversation_fk",
      columns: [t.conversationId, t.previousMessageId],
      foreignColumns: [t.conversationId, t.id],
    }).onDelete("cascade"),
    // One result per tool call: a redelivered step cannot record (or cause) an effect twice.
    uniqueIndex("messages_one_result_per_tool_call_idx")
      .on(t.conversationId, t.toolCallId)
      .where(sql`tool_call_id is not null`),
    // The team timeline pages each conversation backwards by time (keyset on created_at, id).
    index("messages_conversation_created_idx").on(t.conversationId, t.createdAt, t.id),
    // A story's steps: the messages of its tasks.
    index("messages_task_created_idx").on(t.taskId, t.createdAt, t.id).where(sql`task_id is not null`),
    // A timeline filtered to tasks, reports or questions reads only input rows, a small part of a work log.
    index("messages_conversation_input_created_idx").on(t.conversationId, t.createdAt, t.id).where(sql`role = 'user'`),
    // Full-text search over what the person and the agents said (not tool output, which is
    // large and repeats the web; not a tool-calling step's empty text): an expression index,
    // so a search and the index agree on `to_tsvector('english', content)`, no stored column
    // widens every row, and a work step's rows never touch it. See searchTeamMessages.
    index("messages_content_search_idx")
      .using("gin", sql`to_tsvector('english', ${t.content})`)
      .where(sql`role in ('user', 'assistant') and content <> ''`),
  ],
);

export const tasks = pgTable(
  "tasks",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    agentId: uuid("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    source: text("source").$type<TaskSource>().notNull(),
    title: text("title").notNull(),
    description: text("description").notNull().default(""),
    status: text("status").$type<TaskStatus>().notNull().default("pending"),
    result: text("result"),
    parentTaskId: uuid("parent_task_id").references((): AnyPgColumn => tasks.id, { onDelete: "set null" }),
    /**
     * The task at the top of its delegation tree (itself for a task nobody delegated): the
     * story it belongs to. Set by a trigger at insert (migration 0016), so every writer agrees.
     */
    rootTaskId: uuid("root_task_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    startedAt: timestamp("started_at", { withTimezone: true, mode: "date" }),
    completedAt: timestamp("completed_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [
    check("tasks_source_check", oneOf("source", taskSources)),
    check("tasks_status_check", oneOf("status", taskStatuses)),
    index("tasks_agent_status_created_idx").on(t.agentId, t.status, t.createdAt),
    index("tasks_parent_task_id_idx").on(t.parentTaskId),
    index("tasks_agent_created_idx").on(t.agentId, t.createdAt, t.id),
    // The timeline's "task ended" entries, newest first per agent.
    index("tasks_agent_completed_idx").on(t.agentId, t.completedAt).where(sql`completed_at is not null`),
    // Stories, newest first per agent: the tasks nobody delegated.
    index("tasks_agent_root_created_idx").on(t.agentId, t.createdAt, t.id).where(sql`parent_task_id is null`),
    index("tasks_root_task_idx").on(t.rootTaskId),
  ],
);

export const inboxItems = pgTable(
  "inbox_items",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    agentId: uuid("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    type: text("type").$type<InboxItemType>().notNull(),
    title: text("title").notNull(),
    summary: text("summary").notNull(),
    content: text("content").notNull(),
    /** The task an alert or question is about. */
    taskId: uuid("task_id").references((): AnyPgColumn => tasks.id, { onDelete: "set null" }),
    /** What makes an alert one of a kind ("task-failed:<id>"): raising it again finds it there and adds nothing. */
    dedupeKey: text("dedupe_key"),
    /** A `question` item: the question the person answers (its state is the question's). */
    questionId: uuid("question_id").references((): AnyPgColumn => questions.id, { onDelete: "cascade" }),
    /** An `approval` item: the tool call the person decides on (its state is the approval's). */
    approvalId: uuid("approval_id").references((): AnyPgColumn => approvals.id, { onDelete: "cascade" }),
    readAt: timestamp("read_at", { withTimezone: true, mode: "date" }),
    /** Archived by the person: out of the inbox's default view, still findable under Archived. */
    archivedAt: timestamp("archived_at", { withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [
    check("inbox_items_type_check", oneOf("type", inboxItemTypes)),
    uniqueIndex("inbox_items_dedupe_key_idx").on(t.dedupeKey).where(sql`dedupe_key is not null`),
    index("inbox_items_created_at_idx").on(t.createdAt),
    index("inbox_items_unread_idx").on(t.createdAt).where(sql`read_at is null`),
    index("inbox_items_agent_id_idx").on(t.agentId),
    index("inbox_items_team_type_created_idx").on(t.teamId, t.type, t.createdAt),
    index("inbox_items_team_created_idx").on(t.teamId, t.createdAt, t.id),
    // The inbox's default view pages what is not archived, newest first (keyset on created_at, id).
    index("inbox_items_active_created_idx").on(t.createdAt, t.id).where(sql`archived_at is null`),
    uniqueIndex("inbox_items_question_id_idx").on(t.questionId).where(sql`question_id is not null`),
    uniqueIndex("inbox_items_approval_id_idx").on(t.approvalId).where(sql`approval_id is not null`),
    // A story's questions, approvals, briefings and alerts.
    index("inbox_items_task_idx").on(t.taskId).where(sql`task_id is not null`),
  ],
);

export const knowledgeItems = pgTable(
  "knowledge_items",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    agentId: uuid("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    type: text("type").$type<KnowledgeItemType>().notNull(),
    content: text("content").notNull(),
    confidence: real("confidence").notNull().default(0.7),
    sourceConversationId: uuid("source_conversation_id").references(() => conversations.id, { onDelete: "set null" }),
    /** The page the fact came from (a search result or a page the agent read), when there is one. */
    sourceUrl: text("source_url"),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }),
    searchVector: tsvector("search_vector").notNull().generatedAlwaysAs(sql`to_tsvector('english', content)`),
    /**
     * The content's vector for recall by meaning (float32, little-endian; see llm/embeddings.ts),
     * with the model and length it was made with: a vector of another model or length is not
     * compared, and is made again in the background (knowledge-embedding.ts). Null until the item
     * is embedded, and again once its content changes: until then it is found by words only.
     */
    embedding: bytea("embedding"),
    embeddingModel: text("embedding_model"),
    embeddingDimensions: integer("embedding_dimensions"),
    embeddedAt: timestamp("embedded_at", { withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [
    check("knowledge_items_type_check", oneOf("type", knowledgeItemTypes)),
    check("knowledge_items_confidence_check", sql`confidence >= 0 and confidence <= 1`),
    // A vector is whole or absent: its model, its length (4 bytes a dimension) and when it was made.
    check(
      "knowledge_items_embedding_check",
      sql`(embedding is null and embedding_model is null and embedding_dimensions is null and embedded_at is null) or (embedding_model is not null and embedded_at is not null and embedding_dimensions > 0 and octet_length(embedding) = 4 * embedding_dimensions)`,
    ),
    index("knowledge_items_search_idx").using("gin", t.searchVector),
    // What the embedding job looks for first: items saved without a vector, oldest first.
    index("knowledge_items_unembedded_idx").on(t.createdAt, t.id).where(sql`embedding is null`),
    index("knowledge_items_agent_created_idx").on(t.agentId, t.createdAt),
    // An agent's vectors made since a moment: what a process that keeps them in memory reads
    // after a save (knowledge-vectors.ts), a few rows instead of all the agent's.
    index("knowledge_items_agent_embedded_idx").on(t.agentId, t.embeddedAt).where(sql`embedding is not null`),
    // The knowledge page's list of every team's newest items: 200 rows read, not the whole table
    // (whose rows carry their vectors, 1 KB and more each).
    index("knowledge_items_created_idx").on(t.createdAt),
    index("knowledge_items_source_conversation_idx").on(t.sourceConversationId),
  ],
);

/**
 * How many vectors an agent's knowledge gained and lost, per model and length: one row per
 * statement that changed any (triggers on knowledge_items, drizzle/0021_knowledge_vector_changes.sql),
 * summed by readers, so a save takes no lock another could wait on. A process that keeps an
 * agent's vectors in memory (domain/knowledge-vectors.ts) compares the sums it loaded them at
 * with the current ones: equal, nothing changed; only more added, it reads the new vectors;
 * any removed (a delete, an edit, another model, another type or owner), it reads them all again.
 * Readers sum a key's rows into one when they pile up (compactVectorChanges): the sums stay.
 */
export const knowledgeVectorChanges = pgTable(
  "knowledge_vector_changes",
  {
    agentId: uuid("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    embeddingModel: text("embedding_model").notNull(),
    embeddingDimensions: integer("embedding_dimensions").notNull(),
    added: bigint("added", { mode: "number" }).notNull().default(0),
    removed: bigint("removed", { mode: "number" }).notNull().default(0),
    /**
     * The top-level transaction that wrote the row (also from a savepoint): a search in that
     * transaction sees vectors nobody else sees yet, and must not keep them for others.
     */
    writtenBy: bigint("written_by", { mode: "number" }).notNull().default(sql`pg_current_xact_id()::text::bigint`),
  },
  (t) => [index("knowledge_vector_changes_agent_idx").on(t.agentId, t.embeddingModel, t.embeddingDimensions)],
);

/**
 * Who reported a knowledge item, where and from which page: one row per report. A fact that
 * agents of a team report again (a near-duplicate) gains a source instead of a second item.
 */
export const knowledgeSources = pgTable(
  "knowledge_sources",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    knowledgeItemId: uuid("knowledge_item_id")
      .notNull()
      .references(() => knowledgeItems.id, { onDelete: "cascade" }),
    agentId: uuid("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    conversationId: uuid("conversation_id").references(() => conversations.id, { onDelete: "set null" }),
    /** The message the fact was reported in (the tool call, or the message extraction read it from). */
    messageId: uuid("message_id").references(() => messages.id, { onDelete: "set null" }),
    url: text("url"),
    // clock_timestamp: sources added in one transaction keep the order they were reported in.
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).default(sql`clock_timestamp()`).notNull(),
  },
  (t) => [
    index("knowledge_sources_item_idx").on(t.knowledgeItemId, t.createdAt),
    index("knowledge_sources_agent_idx").on(t.agentId),
    // A conversation's or message's deletion (with its agent or team) finds the sources pointing at it by index.
    index("knowledge_sources_conversation_idx").on(t.conversationId).where(sql`conversation_id is not null`),
    index("knowledge_sources_message_idx").on(t.messageId).where(sql`message_id is not null`),
  ],
);

export const usage = pgTable(
  "usage",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    /**
     * Null for a call made for no agent yet (drafting a new team's lead instructions). The row
     * is what the call cost, a ledger entry: none of its ids is a foreign key, so it outlives a
     * removed agent or a deleted team (a team's spend today, its budgets and the usage page's
     * totals keep counting it), it is written even when the agent went while its call ran, and
     * writing it takes no lock on the rows it names.
     */
    agentId: uuid("agent_id"),
    /** The agent's team when the call was made. */
    teamId: uuid("team_id"),
    conversationId: uuid("conversation_id"),
    purpose: text("purpose").$type<UsagePurpose>().notNull(),
    model: text("model").notNull(),
    inputTokens: integer("input_tokens").notNull().default(0),
    outputTokens: integer("output_tokens").notNull().default(0),
    cachedTokens: integer("cached_tokens").notNull().default(0),
    durationMs: integer("duration_ms").notNull().default(0),
    /** The work session the call was made in (work, compaction, extraction, briefing); null for chat and drafting. */
    workSessionId: uuid("work_session_id"),
    /** The task the call worked on (a work session's task in focus), for a story's cost. */
    taskId: uuid("task_id"),
    /** Why the model stopped ("stop", "tool-calls", "length", …), as the AI SDK reports it; "aborted" or "timeout" for a call cut off. */
    finishReason: text("finish_reason"),
    /**
     * The tokens are Cadre's estimate, not the provider's count: the row is written when the call
     * starts (input estimated from the request, no output) and settled with the provider's usage
     * when it answers. A call stopped or timed out before that keeps the estimate (plus the output
     * streamed so far); so does the call of a process that died mid-call. The provider may bill
     * such calls all the same, so they count like any other.
     */
    estimated: boolean("estimated").notNull().default(false),
    /**
     * The model's price when the call was made (US dollars per million tokens, as in
     * model_prices), so a price edited later does not reprice it. Null when the model had no
     * price then, and in rows written before rows kept their price: such rows are priced with
     * today's table (usage/prices.ts, PriceTable.costOf).
     */
    inputUsdPerMtok: numeric("input_usd_per_mtok", { precision: 12, scale: 4, mode: "number" }),
    cachedInputUsdPerMtok: numeric("cached_input_usd_per_mtok", { precision: 12, scale: 4, mode: "number" }),
    outputUsdPerMtok: numeric("output_usd_per_mtok", { precision: 12, scale: 4, mode: "number" }),
    createdAt: createdAt(),
  },
  (t) => [
    check("usage_purpose_check", oneOf("purpose", usagePurposes)),
    // A price is whole or absent: input and output rates together, a cached rate only with them.
    check(
      "usage_price_check",
      sql`(input_usd_per_mtok is null) = (output_usd_per_mtok is null) and (cached_input_usd_per_mtok is null or input_usd_per_mtok is not null)`,
    ),
    index("usage_agent_created_idx").on(t.agentId, t.createdAt),
    index("usage_team_created_idx").on(t.teamId, t.createdAt),
    index("usage_work_session_idx").on(t.workSessionId).where(sql`work_session_id is not null`),
    index("usage_task_idx").on(t.taskId).where(sql`task_id is not null`),
    index("usage_created_idx").on(t.createdAt),
  ],
);

export const workSessions = pgTable(
  "work_sessions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    agentId: uuid("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    status: text("status").$type<WorkSessionStatus>().notNull().default("running"),
    worker: text("worker").notNull(),
    steps: integer("steps").notNull().default(0),
    error: text("error"),
    startedAt: timestamp("started_at", { withTimezone: true, mode: "date" }).defaultNow().notNull(),
    /** Refreshed by the worker running the session; a stale one means that worker died. */
    heartbeatAt: timestamp("heartbeat_at", { withTimezone: true, mode: "date" }).defaultNow().notNull(),
    stopRequestedAt: timestamp("stop_requested_at", { withTimezone: true, mode: "date" }),
    endedAt: timestamp("ended_at", { withTimezone: true, mode: "date" }),
    /** The task the session works on now (its task in focus), or last worked on; null before it took one. No FK: see messages.task_id. */
    taskId: uuid("task_id"),
    /**
     * Set with stop_requested_at when the stop came from cancelling this task (cancelTrees: its
     * agent was left with nothing open), so the log says the task was cancelled rather than that
     * the person pressed Stop; null for the person's Stop. No FK: see messages.task_id.
     */
    cancelledTaskId: uuid("cancelled_task_id"),
  },
  (t) => [
    check("work_sessions_status_check", oneOf("status", workSessionStatuses)),
    // At most one running session per agent, whatever the number of workers.
    uniqueIndex("work_sessions_one_running_per_agent_idx").on(t.agentId).where(sql`status = 'running'`),
    index("work_sessions_agent_started_idx").on(t.agentId, t.startedAt),
    index("work_sessions_running_heartbeat_idx").on(t.heartbeatAt).where(sql`status = 'running'`),
  ],
);

/**
 * An agent's queue of input (seed 001: one inbound queue per agent). Everyone but the
 * agent's own session writes here — a report, a question, an answer, a webhook, a
 * cancellation notice — and wakes the agent; the session moves queued input into its
 * work log only between model calls. So the log shows exactly what each answer
 * answered, and input that lands during a call always gets a next step.
 */
export const agentInputs = pgTable(
  "agent_inputs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    agentId: uuid("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    content: text("content").notNull(),
    /** The recipient's task this input is about (a report on work delegated from it), so the session focuses on it. */
    taskId: uuid("task_id").references((): AnyPgColumn => tasks.id, { onDelete: "set null" }),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).default(sql`clock_timestamp()`).notNull(),
  },
  (t) => [index("agent_inputs_agent_created_idx").on(t.agentId, t.createdAt)],
);

/**
 * A question an agent asked (requestInput): its id is what the answer names, so the
 * answer resumes only the task that asked.
 */
export const questions = pgTable(
  "questions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    /** Who asks. */
    agentId: uuid("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    /** The asker's task that waits for the answer. */
    taskId: uuid("task_id").references((): AnyPgColumn => tasks.id, { onDelete: "set null" }),
    /** Who is asked: the asker's lead; null when the person is asked (askPerson). */
    recipientAgentId: uuid("recipient_agent_id").references(() => agents.id, { onDelete: "cascade" }),
    question: text("question").notNull(),
    status: text("status").$type<QuestionStatus>().notNull().default("open"),
    answer: text("answer"),
    createdAt: createdAt(),
    answeredAt: timestamp("answered_at", { withTimezone: true, mode: "date" }),
    /** Where the person answered (null: not answered, or answered before this was recorded). */
    answeredVia: text("answered_via").$type<DecisionChannel>(),
  },
  (t) => [
    check("questions_status_check", oneOf("status", questionStatuses)),
    check("questions_answered_via_check", oneOf("answered_via", decisionChannels)),
    index("questions_recipient_status_idx").on(t.recipientAgentId, t.status),
    index("questions_task_id_idx").on(t.taskId),
  ],
);

/**
 * A tool call that waits for the person's decision (policy `ask`). The call is stored in
 * its conversation like any other; this row holds what the person decides and how far
 * carrying it out got, so a decision reaches exactly the call it was made for (one row
 * per call: the unique key) and a crash at any point leaves a state to go on from.
 *
 * pending → approved | denied (the person) | withdrawn (its task ended, or the chat moved
 * on); then the session that owns the conversation resolves it: the tool runs with the
 * approved input (`executionStartedAt` first, for tools whose effect lies outside Cadre),
 * or the model gets "Denied by the person: REASON"; `resolvedAt` when its result is stored.
 */
export const approvals = pgTable(
  "approvals",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    agentId: uuid("agent_id")
      .notNull()
      .references(() => agents.id, { onDelete: "cascade" }),
    conversationId: uuid("conversation_id")
      .notNull()
      .references(() => conversations.id, { onDelete: "cascade" }),
    /** The task the call served (a work turn's focus); null in the chat. */
    taskId: uuid("task_id").references((): AnyPgColumn => tasks.id, { onDelete: "set null" }),
    toolCallId: text("tool_call_id").notNull(),
    toolName: text("tool_name").notNull(),
    /** The input as the model sent it. */
    input: jsonb("input").$type<unknown>().notNull(),
    /** What the model said alongside the call: its stated reason. */
    reason: text("reason").notNull().default(""),
    status: text("status").$type<ApprovalStatus>().notNull().default("pending"),
    /** The input the person approved (edited or as sent). */
    approvedInput: jsonb("approved_input").$type<unknown>(),
    /** Why the person denied it, or why it was withdrawn. */
    decisionNote: text("decision_note"),
    decidedAt: timestamp("decided_at", { withTimezone: true, mode: "date" }),
    /** Where the person decided (null: pending, withdrawn, or decided before this was recorded). */
    decidedVia: text("decided_via").$type<DecisionChannel>(),
    /** Who decided, when the channel names them (a Slack user); null in the app, which has one person. */
    decidedBy: text("decided_by"),
    executionStartedAt: timestamp("execution_started_at", { withTimezone: true, mode: "date" }),
    resolvedAt: timestamp("resolved_at", { withTimezone: true, mode: "date" }),
    // clock_timestamp, not now(): the calls of one step are stored in one transaction, in their order.
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).default(sql`clock_timestamp()`).notNull(),
  },
  (t) => [
    check("approvals_status_check", oneOf("status", approvalStatuses)),
    check("approvals_decided_via_check", oneOf("decided_via", decisionChannels)),
    uniqueIndex("approvals_conversation_tool_call_idx").on(t.conversationId, t.toolCallId),
    index("approvals_agent_unresolved_idx").on(t.agentId, t.createdAt).where(sql`resolved_at is null`),
    index("approvals_task_id_idx").on(t.taskId),
  ],
);

/**
 * What happens when an agent calls a tool: `auto` runs it, `ask` waits for the person's
 * approval, `deny` does not offer it. A row with no agent is the team's policy; a row
 * with an agent overrides it for that agent. No row: the tool's default (tool-policies.ts).
 */
export const toolPolicyRules = pgTable(
  "tool_policies",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    agentId: uuid("agent_id").references(() => agents.id, { onDelete: "cascade" }),
    toolName: text("tool_name").notNull(),
    policy: text("policy").$type<ToolPolicy>().notNull(),
    updatedAt: updatedAt(),
  },
  (t) => [
    check("tool_policies_policy_check", oneOf("policy", toolPolicies)),
    uniqueIndex("tool_policies_team_tool_idx").on(t.teamId, t.toolName).where(sql`agent_id is null`),
    uniqueIndex("tool_policies_agent_tool_idx").on(t.agentId, t.toolName).where(sql`agent_id is not null`),
  ],
);

/**
 * Where a team's notifications go outside the browser: a signed outbound webhook
 * (Slack-compatible) or an email address. `kinds` picks which inbox items it gets.
 */
export const notificationChannels = pgTable(
  "notification_channels",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    type: text("type").$type<NotificationChannelType>().notNull(),
    name: text("name").notNull(),
    /** webhook: where deliveries are POSTed. */
    url: text("url"),
    /** webhook: the HMAC-SHA256 key deliveries are signed with; shown once. */
    secret: text("secret"),
    /** email: the recipient. */
    recipient: text("recipient"),
    kinds: jsonb("kinds").$type<NotificationKind[]>().notNull(),
    enabled: boolean("enabled").notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    check("notification_channels_type_check", oneOf("type", notificationChannelTypes)),
    check(
      "notification_channels_target_check",
      sql`(type = 'webhook' and url is not null) or (type = 'email' and recipient is not null)`,
    ),
    index("notification_channels_team_idx").on(t.teamId),
  ],
);

/**
 * One delivery of one inbox item (or a test) to one channel: the delivery log. Its id is
 * the idempotency key a receiver sees on every attempt. The payload is kept as sent, so
 * a retry sends the same thing even after the item changed or went.
 */
export const notifications = pgTable(
  "notifications",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    channelId: uuid("channel_id")
      .notNull()
      .references(() => notificationChannels.id, { onDelete: "cascade" }),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    inboxItemId: uuid("inbox_item_id").references(() => inboxItems.id, { onDelete: "set null" }),
    /** An inbox item's type, or "test" for Send test. */
    kind: text("kind").notNull(),
    payload: jsonb("payload")
      .$type<{
        type: string;
        title: string;
        summary: string;
        link: string;
        /** An approval or a question: the item its action links (Approve / Deny, Answer) act on, and until when they work. */
        action?: { kind: "approval" | "question"; id: string; expiresAt: string };
      }>()
      .notNull(),
    status: text("status").$type<NotificationStatus>().notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    createdAt: createdAt(),
    lastAttemptAt: timestamp("last_attempt_at", { withTimezone: true, mode: "date" }),
    sentAt: timestamp("sent_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [
    check("notifications_status_check", oneOf("status", notificationStatuses)),
    index("notifications_team_created_idx").on(t.teamId, t.createdAt),
    index("notifications_channel_created_idx").on(t.channelId, t.createdAt),
  ],
);

/**
 * A team's MCP server, whose tools its agents use as `NAME__TOOL`. Header values and
 * environment values are secrets: stored here (the process that connects needs them),
 * never sent back to a page after saving.
 */
export const mcpServers = pgTable(
  "mcp_servers",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    /** The namespace of its tools: letters, digits, `-` and `_`, unique in the team. */
    name: text("name").notNull(),
    transport: text("transport").$type<McpTransport>().notNull(),
    /** http: the streamable HTTP endpoint. */
    url: text("url"),
    headers: jsonb("headers").$type<Record<string, string>>().notNull().default({}),
    /** stdio: the command, its arguments and environment. */
    command: text("command"),
    args: jsonb("args").$type<string[]>().notNull().default([]),
    env: jsonb("env").$type<Record<string, string>>().notNull().default({}),
    enabled: boolean("enabled").notNull().default(true),
    /** How long one tool call may take. */
    callTimeoutMs: integer("call_timeout_ms").notNull().default(30_000),
    /** The tools it listed at its last successful connection. */
    tools: jsonb("tools").$type<McpToolInfo[]>().notNull().default([]),
    lastConnectedAt: timestamp("last_connected_at", { withTimezone: true, mode: "date" }),
    lastError: text("last_error"),
    lastErrorAt: timestamp("last_error_at", { withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    check("mcp_servers_transport_check", oneOf("transport", mcpTransports)),
    check(
      "mcp_servers_target_check",
      sql`(transport = 'http' and url is not null) or (transport = 'stdio' and command is not null)`,
    ),
    check("mcp_servers_name_check", sql`name ~ '^[A-Za-z0-9_-]{1,40}$'`),
    uniqueIndex("mcp_servers_team_name_idx").on(t.teamId, t.name),
  ],
);

/** Worker processes and their own heartbeat: whether background work has anyone to run it. */
/**
 * What a model costs, in US dollars per million tokens. Rows override the built-in defaults
 * (src/lib/usage/prices.ts) and add models they do not know; a model with neither shows tokens only.
 */
export const modelPrices = pgTable(
  "model_prices",
  {
    model: text("model").primaryKey(),
    inputUsdPerMtok: numeric("input_usd_per_mtok", { precision: 12, scale: 4, mode: "number" }).notNull(),
    cachedInputUsdPerMtok: numeric("cached_input_usd_per_mtok", { precision: 12, scale: 4, mode: "number" }),
    outputUsdPerMtok: numeric("output_usd_per_mtok", { precision: 12, scale: 4, mode: "number" }).notNull(),
    updatedAt: updatedAt(),
  },
  () => [
    check(
      "model_prices_nonnegative_check",
      sql`input_usd_per_mtok >= 0 and output_usd_per_mtok >= 0 and (cached_input_usd_per_mtok is null or cached_input_usd_per_mtok >= 0)`,
    ),
  ],
);

/**
 * What a model on a server was seen to do when it was checked (Check connection, a model's
 * "Check", `npm run check-model`): a few small requests, one per behaviour. Each answer is
 * true, false, or null when that request could not tell (it failed for another reason). The
 * engine reads it (getModelProfile, db/queries/model-profiles.ts) to shape its requests; the person reads it as a card.
 * One row per model name and server: a changed model or server has no profile until checked.
 */
export const modelProfiles = pgTable(
  "model_profiles",
  {
    model: text("model").notNull(),
    /** The server's base URL as Cadre calls it (OPENAI_BASE_URL, or OpenAI's own), without a trailing slash. */
    baseUrl: text("base_url").notNull(),
    /** It called the one tool it was told to call (tool_choice naming a tool). */
    callsNamedTool: boolean("calls_named_tool"),
    /** It called a tool when told it must call one (tool_choice "required"). */
    callsToolWhenRequired: boolean("calls_tool_when_required"),
    /** It answered in words when told not to call tools (tool_choice "none") though tools were offered. */
    respectsNoTools: boolean("respects_no_tools"),
    /** It made two tool calls in one answer when asked for two lookups at once. */
    parallelToolCalls: boolean("parallel_tool_calls"),
    /** It accepted two user messages in a row (many chat templates refuse roles that do not alternate). */
    acceptsConsecutiveRoles: boolean("accepts_consecutive_roles"),
    /** Its answers carry token counts (`usage`). */
    reportsUsage: boolean("reports_usage"),
    /** Its token counts say how many input tokens came from its prompt cache. */
    reportsCachedTokens: boolean("reports_cached_tokens"),
    /** The context window its server states in GET /models; null when it states none. */
    contextTokens: integer("context_tokens"),
    /** Why the check could not finish (the server unreachable, the model unknown), in words; null when it did. */
    problem: text("problem"),
    checkedAt: timestamp("checked_at", { withTimezone: true, mode: "date" }).defaultNow().notNull(),
  },
  (t) => [
    primaryKey({ name: "model_profiles_pkey", columns: [t.model, t.baseUrl] }),
    check("model_profiles_context_tokens_check", sql`context_tokens is null or context_tokens > 0`),
  ],
);

export const workers = pgTable(
  "workers",
  {
    /** host:pid, as in work_sessions.worker. */
    id: text("id").primaryKey(),
    startedAt: timestamp("started_at", { withTimezone: true, mode: "date" }).defaultNow().notNull(),
    heartbeatAt: timestamp("heartbeat_at", { withTimezone: true, mode: "date" }).defaultNow().notNull(),
    stoppedAt: timestamp("stopped_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("workers_heartbeat_idx").on(t.heartbeatAt)],
);

/**
 * Signed-in browsers, when APP_PASSWORD is set. The cookie holds a random token; the row
 * holds only its HMAC keyed with the password, so a database dump signs nobody in and a
 * new password signs everybody out.
 */
export const sessions = pgTable(
  "sessions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    tokenHash: text("token_hash").notNull(),
    createdAt: createdAt(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [uniqueIndex("sessions_token_hash_idx").on(t.tokenHash), index("sessions_expires_at_idx").on(t.expiresAt)],
);

/**
 * A team's webhook secret, kept apart from `teams` so no team listing can carry it. It is
 * stored as is: verifying an HMAC needs the secret itself (see
 * docs/decisions/2026-11-23-inbound-webhooks.md).
 */
export const webhookSecrets = pgTable("webhook_secrets", {
  teamId: uuid("team_id")
    .primaryKey()
    .references(() => teams.id, { onDelete: "cascade" }),
  secret: text("secret").notNull(),
  createdAt: createdAt(),
});

/**
 * Keys Cadre makes for itself, by name: `action-links` signs the Approve / Deny / Answer links in
 * notifications (auth/action-links.ts). Made once, at first use, by whichever process needs it,
 * so the web server and the workers sign and check with the same key.
 */
export const serverKeys = pgTable("server_keys", {
  name: text("name").primaryKey(),
  key: text("key").notNull(),
  createdAt: createdAt(),
});

/** Signatures of accepted webhook deliveries, kept past the timestamp tolerance so a replay is refused. */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    teamId: uuid("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    signature: text("signature").notNull(),
    receivedAt: timestamp("received_at", { withTimezone: true, mode: "date" }).defaultNow().notNull(),
  },
  (t) => [
    primaryKey({ name: "webhook_deliveries_pkey", columns: [t.teamId, t.signature] }),
    index("webhook_deliveries_received_at_idx").on(t.receivedAt),
  ],
);

export type Team = InferSelectModel<typeof teams>;
export type Agent = InferSelectModel<typeof agents>;
export type NewAgent = InferInsertModel<typeof agents>;
export type Conversation = InferSelectModel<typeof conversations>;
export type Message = InferSelectModel<typeof messages>;
export type Task = InferSelectModel<typeof tasks>;
export type InboxItem = InferSelectModel<typeof inboxItems>;
export type KnowledgeItem = Omit<
  InferSelectModel<typeof knowledgeItems>,
  "searchVector" | "embedding" | "embeddingModel" | "embeddingDimensions" | "embeddedAt"
>;
export type Usage = InferSelectModel<typeof usage>;
export type WorkSession = InferSelectModel<typeof workSessions>;
export type Session = InferSelectModel<typeof sessions>;
export type WebhookSecret = InferSelectModel<typeof webhookSecrets>;
export type AgentInput = InferSelectModel<typeof agentInputs>;
export type Question = InferSelectModel<typeof questions>;
export type Worker = InferSelectModel<typeof workers>;
export type Approval = InferSelectModel<typeof approvals>;
export type ToolPolicyRule = InferSelectModel<typeof toolPolicyRules>;
export type NotificationChannel = InferSelectModel<typeof notificationChannels>;
export type Notification = InferSelectModel<typeof notifications>;
export type McpServer = InferSelectModel<typeof mcpServers>;
export type ModelPrice = InferSelectModel<typeof modelPrices>;
export type ModelProfile = InferSelectModel<typeof modelProfiles>;
