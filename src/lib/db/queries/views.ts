import "server-only";
// Read-only queries that shape rows for the pages (names joined in), not for the engine.
import { desc, eq, sql } from "drizzle-orm";
import type { Db } from "@/lib/db/client";
import {
  agents,
  approvals,
  conversations,
  inboxItems,
  questions,
  tasks,
  teams,
  type AgentRole,
  type ConversationMode,
  type Team,
} from "@/lib/db/schema";
import { openTaskStatuses } from "@/lib/db/task-statuses";
import { taskStatusIn } from "./tasks";
import { inboxAtMicros, inboxFilterWhere, inboxOrder, type InboxFilter, type InboxItemView } from "./inbox-items";

export type AgentListing = { id: string; name: string; role: AgentRole; teamId: string; teamName: string };

/** Every agent with its team's name, leads first within a team. */
export function listAgentDirectory(db: Db): Promise<AgentListing[]> {
  return db
    .select({ id: agents.id, name: agents.name, role: agents.role, teamId: agents.teamId, teamName: teams.name })
    .from(agents)
    .innerJoin(teams, eq(teams.id, agents.teamId))
    .orderBy(teams.name, sql`${agents.role} = 'lead' desc`, agents.createdAt);
}

export type TeamSummary = Team & { leadId: string | null; subordinates: number; openTasks: number; unread: number };

/** The teams page: each team with its lead, headcount, open tasks and unread briefings. */
export async function listTeamSummaries(db: Db): Promise<TeamSummary[]> {
  const rows = await db
    .select({
      team: teams,
      leadId: sql<string | null>`(select a.id from ${agents} a where a.team_id = "teams"."id" and a.role = 'lead')`,
      subordinates: sql<number>`(select count(*)::int from ${agents} a where a.team_id = "teams"."id" and a.role = 'subordinate')`,
      openTasks: sql<number>`(select count(*)::int from ${tasks} t join ${agents} a on a.id = t.agent_id
                              where a.team_id = "teams"."id" and ${taskStatusIn(sql`t.status`, openTaskStatuses)})`,
      unread: sql<number>`(select count(*)::int from ${inboxItems} i where i.team_id = "teams"."id" and i.read_at is null)`,
    })
    .from(teams)
    .orderBy(desc(teams.createdAt));
  return rows.map(({ team, ...rest }) => ({ ...team, ...rest }));
}

/** `approvalMode`: where a carried call was made (the chat or the work log); null without one. */
export type InboxListing = InboxItemView & {
  teamName: string;
  agentName: string;
  approvalMode: ConversationMode | null;
};

function inboxListingQuery(db: Db) {
  return db
    .select({
      item: inboxItems,
      question: questions,
      approval: approvals,
      teamName: teams.name,
      agentName: agents.name,
      approvalMode: conversations.mode,
    })
    .from(inboxItems)
    .innerJoin(teams, eq(teams.id, inboxItems.teamId))
    .innerJoin(agents, eq(agents.id, inboxItems.agentId))
    .leftJoin(questions, eq(questions.id, inboxItems.questionId))
    .leftJoin(approvals, eq(approvals.id, inboxItems.approvalId))
    .leftJoin(conversations, eq(conversations.id, approvals.conversationId));
}

/**
 * The inbox, newest first (filtered as `listInboxItems` is), with the names of the team and
 * agent each item came from, the question or approval it carries in its current state, and
 * its keyset position (`atMicros`).
 */
export async function listInboxView(
  db: Db,
  filter: InboxFilter = {},
): Promise<(InboxListing & { atMicros: string })[]> {
  const rows = await db
    .select({
      item: inboxItems,
      question: questions,
      approval: approvals,
      teamName: teams.name,
      agentName: agents.name,
      approvalMode: conversations.mode,
      atMicros: inboxAtMicros,
    })
    .from(inboxItems)
    .innerJoin(teams, eq(teams.id, inboxItems.teamId))
    .innerJoin(agents, eq(agents.id, inboxItems.agentId))
    .leftJoin(questions, eq(questions.id, inboxItems.questionId))
    .leftJoin(approvals, eq(approvals.id, inboxItems.approvalId))
    .leftJoin(conversations, eq(conversations.id, approvals.conversationId))
    .where(inboxFilterWhere(filter))
    .orderBy(...inboxOrder)
    .limit(filter.limit ?? 200);
  return rows.map(({ item, ...rest }) => ({ ...item, ...rest }));
}

export async function getInboxListing(db: Db, itemId: string): Promise<InboxListing | null> {
  const [row] = await inboxListingQuery(db).where(eq(inboxItems.id, itemId));
  if (!row) return null;
  const { item, ...rest } = row;
  return { ...item, ...rest };
}
