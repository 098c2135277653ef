// Read-only queries that shape rows for the pages (names joined in), not for the engine.
import { desc, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "@/lib/db/client";
import { agents, conversations, inboxItems, tasks, teams, type AgentRole, type ConversationMode, type InboxItem, type Team } from "@/lib/db/schema";

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
                              where a.team_id = "teams"."id" and t.status in ('pending', 'in_progress', 'waiting_input'))`,
      unread: sql<number>`(select count(*)::int from ${inboxItems} i where i.team_id = "teams"."id" and i.read_at is null)`,
    })
    .from(teams)
    .orderBy(desc(teams.createdAt));
  return rows.map(({ team, ...rest }) => ({ ...team, ...rest }));
}

export type InboxListing = InboxItem & { teamName: string; agentName: string };

/** The inbox, newest first, with the names of the team and agent each item came from. */
export function listInboxView(db: Db, limit = 200): Promise<InboxListing[]> {
  return db
    .select({ item: inboxItems, teamName: teams.name, agentName: agents.name })
    .from(inboxItems)
    .innerJoin(teams, eq(teams.id, inboxItems.teamId))
    .innerJoin(agents, eq(agents.id, inboxItems.agentId))
    .orderBy(desc(inboxItems.createdAt))
    .limit(limit)
    .then((rows) => rows.map(({ item, ...names }) => ({ ...item, ...names })));
}

export async function getInboxListing(db: Db, itemId: string): Promise<InboxListing | null> {
  const [row] = await db
    .select({ item: inboxItems, teamName: teams.name, agentName: agents.name })
    .from(inboxItems)
    .innerJoin(teams, eq(teams.id, inboxItems.teamId))
    .innerJoin(agents, eq(agents.id, inboxItems.agentId))
    .where(eq(inboxItems.id, itemId));
  return row ? { ...row.item, teamName: row.teamName, agentName: row.agentName } : null;
}

export type ConversationOwner = { id: string; agentId: string; teamId: string; mode: ConversationMode };

/** Who each conversation belongs to, for links to a knowledge item's source. */
export async function listConversationOwners(db: Db, conversationIds: string[]): Promise<ConversationOwner[]> {
  if (conversationIds.length === 0) return [];
  return db
    .select({ id: conversations.id, agentId: conversations.agentId, teamId: agents.teamId, mode: conversations.mode })
    .from(conversations)
    .innerJoin(agents, eq(agents.id, conversations.agentId))
    .where(inArray(conversations.id, conversationIds));
}
