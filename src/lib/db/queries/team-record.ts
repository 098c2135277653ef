import "server-only";
import { and, asc, eq, getTableColumns, gte, inArray, isNotNull, lt, or, sql } from "drizzle-orm";
import type { Db } from "../client";
import { knowledgeColumns, withKnowledgeSources } from "./knowledge-items";
import {
  agents,
  approvals,
  conversations,
  inboxItems,
  knowledgeItems,
  mcpServers,
  notificationChannels,
  questions,
  tasks,
  toolPolicyRules,
  usage,
  workSessions,
  type Usage,
} from "../schema";
import { maskUrl } from "@/lib/util/redact";
import { REMOVED_AGENTS } from "./usage";

/**
 * What a team's record (the JSON export) and its digest read: everything the team owns,
 * by team, in a stable order. Secrets are never selected: webhook secrets, notification
 * channel secrets, MCP header and environment values (their names are).
 */

const teamAgentIds = (teamId: string) => sql`(select id from agents where team_id = ${teamId})`;

export function listTeamAgentsForRecord(db: Db, teamId: string) {
  const { wakeRequestedAt: _wake, ...columns } = getTableColumns(agents);
  return db
    .select(columns)
    .from(agents)
    .where(eq(agents.teamId, teamId))
    .orderBy(asc(agents.createdAt), asc(agents.id));
}

export function listTeamTasks(db: Db, teamId: string) {
  return db
    .select()
    .from(tasks)
    .where(inArray(tasks.agentId, teamAgentIds(teamId)))
    .orderBy(asc(tasks.createdAt), asc(tasks.id));
}

export function listTeamConversations(db: Db, teamId: string) {
  return db
    .select()
    .from(conversations)
    .where(inArray(conversations.agentId, teamAgentIds(teamId)))
    .orderBy(asc(conversations.agentId), asc(conversations.mode), asc(conversations.createdAt), asc(conversations.id));
}

export function listTeamWorkSessions(db: Db, teamId: string) {
  const { id, agentId, status, steps, error, startedAt, endedAt } = getTableColumns(workSessions);
  return db
    .select({ id, agentId, status, steps, error, startedAt, endedAt })
    .from(workSessions)
    .where(inArray(workSessions.agentId, teamAgentIds(teamId)))
    .orderBy(asc(workSessions.startedAt), asc(workSessions.id));
}

export function listTeamInboxItems(db: Db, teamId: string) {
  return db
    .select()
    .from(inboxItems)
    .where(eq(inboxItems.teamId, teamId))
    .orderBy(asc(inboxItems.createdAt), asc(inboxItems.id));
}

export function listTeamQuestions(db: Db, teamId: string) {
  return db
    .select()
    .from(questions)
    .where(inArray(questions.agentId, teamAgentIds(teamId)))
    .orderBy(asc(questions.createdAt), asc(questions.id));
}

export function listTeamApprovals(db: Db, teamId: string) {
  return db
    .select()
    .from(approvals)
    .where(eq(approvals.teamId, teamId))
    .orderBy(asc(approvals.createdAt), asc(approvals.id));
}

/** The team's knowledge, each item with its sources (every report of it: agent, conversation, message, URL); not its vectors, which are made again from the words. */
export async function listTeamKnowledge(db: Db, teamId: string) {
  const items = await db
    .select(knowledgeColumns)
    .from(knowledgeItems)
    .where(inArray(knowledgeItems.agentId, teamAgentIds(teamId)))
    .orderBy(asc(knowledgeItems.createdAt), asc(knowledgeItems.id));
  return withKnowledgeSources(db, items);
}

export function listTeamToolPolicies(db: Db, teamId: string) {
  return db
    .select()
    .from(toolPolicyRules)
    .where(eq(toolPolicyRules.teamId, teamId))
    .orderBy(asc(toolPolicyRules.toolName), asc(toolPolicyRules.id));
}

/** Notification channels without their signing secret; the URL masked (a Slack webhook's path is its credential). */
export async function listTeamNotificationChannels(db: Db, teamId: string) {
  const { secret: _secret, ...columns } = getTableColumns(notificationChannels);
  const channels = await db
    .select(columns)
    .from(notificationChannels)
    .where(eq(notificationChannels.teamId, teamId))
    .orderBy(asc(notificationChannels.createdAt));
  return channels.map((channel) => ({ ...channel, url: channel.url === null ? null : maskUrl(channel.url) }));
}

/**
 * MCP servers with the names of their headers and environment variables, never the values;
 * the URL masked and the command's arguments counted, not copied (a token is often passed as one).
 */
export async function listTeamMcpServersForRecord(db: Db, teamId: string) {
  const { headers: _headers, env: _env, args: _args, ...columns } = getTableColumns(mcpServers);
  const servers = await db
    .select({
      ...columns,
      headerNames: sql<
        string[]
      >`(select coalesce(jsonb_agg(k order by k), '[]'::jsonb) from jsonb_object_keys(${mcpServers.headers}) k)`,
      envNames: sql<
        string[]
      >`(select coalesce(jsonb_agg(k order by k), '[]'::jsonb) from jsonb_object_keys(${mcpServers.env}) k)`,
      argCount: sql<number>`jsonb_array_length(${mcpServers.args})`,
    })
    .from(mcpServers)
    .where(eq(mcpServers.teamId, teamId))
    .orderBy(asc(mcpServers.name));
  return servers.map((server) => ({ ...server, url: server.url === null ? null : maskUrl(server.url) }));
}

/**
 * A page of the team's usage rows, oldest first, after the row `afterId` (keyset on
 * created_at, id; the cursor row's own timestamp is compared in the database, whose
 * microseconds a JS Date would lose).
 */
export function listTeamUsagePage(db: Db, teamId: string, afterId: string | null, limit: number): Promise<Usage[]> {
  const after = afterId
    ? sql`(${usage.createdAt}, ${usage.id}) > (select u.created_at, u.id from usage u where u.id = ${afterId})`
    : undefined;
  return db
    .select()
    .from(usage)
    .where(and(eq(usage.teamId, teamId), after))
    .orderBy(asc(usage.createdAt), asc(usage.id))
    .limit(limit);
}

/** A time window [from, to). */
export type Window = { from: Date; to: Date };

/** Tasks that ended (completed, failed, cancelled) in the window, with their agent's name. */
export function listTasksEndedIn(db: Db, teamId: string, window: Window) {
  return db
    .select({ task: tasks, agentName: agents.name })
    .from(tasks)
    .innerJoin(agents, eq(agents.id, tasks.agentId))
    .where(
      and(
        eq(agents.teamId, teamId),
        isNotNull(tasks.completedAt),
        gte(tasks.completedAt, window.from),
        lt(tasks.completedAt, window.to),
      ),
    )
    .orderBy(asc(tasks.completedAt), asc(tasks.id));
}

export function listInboxItemsIn(db: Db, teamId: string, window: Window) {
  return db
    .select({ item: inboxItems, agentName: agents.name })
    .from(inboxItems)
    .innerJoin(agents, eq(agents.id, inboxItems.agentId))
    .where(
      and(eq(inboxItems.teamId, teamId), gte(inboxItems.createdAt, window.from), lt(inboxItems.createdAt, window.to)),
    )
    .orderBy(asc(inboxItems.createdAt), asc(inboxItems.id));
}

/** Questions asked or answered in the window, with who asked and who was asked (null: the person). */
export function listQuestionsIn(db: Db, teamId: string, window: Window) {
  const recipient = sql<string | null>`(select name from agents r where r.id = ${questions.recipientAgentId})`;
  return db
    .select({ question: questions, askerName: agents.name, recipientName: recipient })
    .from(questions)
    .innerJoin(agents, eq(agents.id, questions.agentId))
    .where(
      and(
        eq(agents.teamId, teamId),
        or(
          and(gte(questions.createdAt, window.from), lt(questions.createdAt, window.to)),
          and(gte(questions.answeredAt, window.from), lt(questions.answeredAt, window.to)),
        ),
      ),
    )
    .orderBy(asc(questions.createdAt), asc(questions.id));
}

/** Knowledge first reported in the window, with its sources (a later report of an older item is not news). */
export async function listKnowledgeIn(db: Db, teamId: string, window: Window) {
  const items = await db
    .select({
      id: knowledgeItems.id,
      type: knowledgeItems.type,
      content: knowledgeItems.content,
      confidence: knowledgeItems.confidence,
      sourceUrl: knowledgeItems.sourceUrl,
      createdAt: knowledgeItems.createdAt,
      agentName: agents.name,
    })
    .from(knowledgeItems)
    .innerJoin(agents, eq(agents.id, knowledgeItems.agentId))
    .where(
      and(
        eq(agents.teamId, teamId),
        gte(knowledgeItems.createdAt, window.from),
        lt(knowledgeItems.createdAt, window.to),
      ),
    )
    .orderBy(asc(knowledgeItems.createdAt), asc(knowledgeItems.id));
  return withKnowledgeSources(db, items);
}

export type DailyUsage = { day: string; agentName: string; calls: number; inputTokens: number; outputTokens: number };

/** Model calls and tokens per UTC day and agent in the window; removed agents' calls in one row. */
export async function sumUsagePerDay(db: Db, teamId: string, window: Window): Promise<DailyUsage[]> {
  const day = sql<string>`to_char(${usage.createdAt} at time zone 'UTC', 'YYYY-MM-DD')`;
  const rows = await db
    .select({
      day,
      agentName: sql<string>`coalesce(${agents.name}, ${REMOVED_AGENTS})`,
      calls: sql<number>`count(*)::int`,
      inputTokens: sql<number>`coalesce(sum(${usage.inputTokens}), 0)::bigint`,
      outputTokens: sql<number>`coalesce(sum(${usage.outputTokens}), 0)::bigint`,
    })
    .from(usage)
    .leftJoin(agents, eq(agents.id, usage.agentId))
    .where(and(eq(usage.teamId, teamId), gte(usage.createdAt, window.from), lt(usage.createdAt, window.to)))
    .groupBy(day, agents.name)
    .orderBy(day, agents.name);
  // bigint arrives as a string from postgres-js.
  return rows.map((row) => ({ ...row, inputTokens: Number(row.inputTokens), outputTokens: Number(row.outputTokens) }));
}
