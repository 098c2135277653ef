import "server-only";
import { asc, desc, eq, sql } from "drizzle-orm";
import { notFound } from "@/lib/errors";
import type { Db } from "../client";
import { retryingTransaction } from "../transactions";
import { agents, conversations, tasks, teams, type Agent, type Task, type Team, type TeamStatus } from "../schema";
import { requireAgent } from "./agents";
import { requireTask } from "./tasks";

export type NewTeam = { name: string; mission: string; leadName?: string; leadInstructions?: string };

/** A team is born with its lead and the lead's two conversations: all or nothing. */
export async function createTeamWithLead(db: Db, input: NewTeam): Promise<{ team: Team; lead: Agent }> {
  return db.transaction(async (tx) => {
    const [team] = await tx.insert(teams).values({ name: input.name, mission: input.mission }).returning();
    const [lead] = await tx
      .insert(agents)
      .values({
        teamId: team!.id,
        // Agent names are at most 120 characters, like team names: keep the default within it.
        name: input.leadName ?? `${input.name.slice(0, 115)} Lead`,
        role: "lead",
        instructions: input.leadInstructions ?? "",
      })
      .returning();
    await tx.insert(conversations).values([
      { agentId: lead!.id, mode: "foreground" },
      { agentId: lead!.id, mode: "background" },
    ]);
    return { team: team!, lead: lead! };
  });
}

export function listTeams(db: Db): Promise<Team[]> {
  return db.select().from(teams).orderBy(desc(teams.createdAt));
}

/** The lead of the longest-standing team, active teams first: who hears of a problem that is no one team's (a worker that keeps crashing). */
export async function findLongestStandingLead(db: Db): Promise<{ teamId: string; leadId: string } | null> {
  const [row] = await db
    .select({ teamId: teams.id, leadId: agents.id })
    .from(teams)
    .innerJoin(agents, sql`${agents.teamId} = ${teams.id} and ${agents.role} = 'lead'`)
    .orderBy(sql`${teams.status} <> 'active'`, asc(teams.createdAt), asc(teams.id))
    .limit(1);
  return row ?? null;
}

export async function getTeam(db: Db, teamId: string): Promise<Team | null> {
  const [team] = await db.select().from(teams).where(eq(teams.id, teamId));
  return team ?? null;
}

export async function requireTeam(db: Db, teamId: string): Promise<Team> {
  const team = await getTeam(db, teamId);
  if (!team) throw notFound("team", teamId);
  return team;
}

export type TeamChanges = Partial<{
  name: string;
  mission: string;
  dailyTokenBudget: number | null;
  dailyCostBudgetUsd: number | null;
}>;

export async function updateTeam(
  db: Db,
  teamId: string,
  changes: TeamChanges & { status?: TeamStatus },
): Promise<Team> {
  const [team] = await db
    .update(teams)
    .set({ ...changes, updatedAt: sql`now()` })
    .where(eq(teams.id, teamId))
    .returning();
  if (!team) throw notFound("team", teamId);
  return team;
}

/**
 * The team's status once a write to its row that is under way has committed (a resume, or any
 * web write under the team: they hold the row until they commit, and FOR SHARE waits for them);
 * null when the team is gone. One statement, so the lock is let go at once.
 */
export async function settledTeamStatus(db: Db, teamId: string): Promise<TeamStatus | null> {
  const [row] = await db.select({ status: teams.status }).from(teams).where(eq(teams.id, teamId)).for("share");
  return row?.status ?? null;
}

/**
 * The deletion cascades through every row of the team while workers may be writing them, from
 * the other end (a worker holds its agent's row, then an inbox item's key wants the team's):
 * a deadlock's victim runs again, and a second deletion then finds the team gone (404).
 */
export async function deleteTeam(db: Db, teamId: string): Promise<void> {
  const deleted = await retryingTransaction(db, (tx) =>
    tx.delete(teams).where(eq(teams.id, teamId)).returning({ id: teams.id }),
  );
  if (deleted.length === 0) throw notFound("team", teamId);
}

/** What deleting a team takes with it, counted for the confirmation that says so. */
export type TeamContents = {
  agents: number;
  tasks: number;
  messages: number;
  knowledgeItems: number;
  inboxItems: number;
};

export async function countTeamContents(db: Db, teamId: string): Promise<TeamContents> {
  const [row] = await db.execute<{
    agents: number;
    tasks: number;
    messages: number;
    knowledge_items: number;
    inbox_items: number;
  }>(sql`
    select (select count(*) from agents where team_id = ${teamId})::int as agents,
           (select count(*) from tasks t join agents a on a.id = t.agent_id where a.team_id = ${teamId})::int as tasks,
           (select count(*) from messages m join conversations c on c.id = m.conversation_id join agents a on a.id = c.agent_id
             where a.team_id = ${teamId})::int as messages,
           (select count(*) from knowledge_items k join agents a on a.id = k.agent_id where a.team_id = ${teamId})::int as knowledge_items,
           (select count(*) from inbox_items where team_id = ${teamId})::int as inbox_items`);
  return {
    agents: row!.agents,
    tasks: row!.tasks,
    messages: row!.messages,
    knowledgeItems: row!.knowledge_items,
    inboxItems: row!.inbox_items,
  };
}

/** The team's agents, lead first. */
export function listTeamAgents(db: Db, teamId: string): Promise<Agent[]> {
  return db
    .select()
    .from(agents)
    .where(eq(agents.teamId, teamId))
    .orderBy(sql`${agents.role} = 'lead' desc`, asc(agents.createdAt))
    .prepare("list_team_agents")
    .execute();
}

// Writes racing a deletion. Deleting a team (or a subordinate) cascades over everything under
// it; a request writing under it at that moment must end as if it came a moment earlier (its
// rows are deleted with the rest) or a moment later (404), never as a foreign-key violation or a
// deadlock, which would be 500s. So every write the web makes under a team runs in a transaction
// that first holds the team's row: FOR NO KEY UPDATE, which a team DELETE (FOR UPDATE) waits for
// and which makes the web's writes under one team take turns (removing a subordinate, stopping,
// cancelling and assigning lock agent and task rows in different orders; taking turns means
// they never wait on each other crosswise). The foreign-key checks of the engine's own inserts
// (FOR KEY SHARE) do not conflict with it. After the lock, the row written under is read again:
// a removal that committed while this write waited shows as a 404.

/** Holds the team's row for a write under it (see above); 404 when the team is gone. Call it first in the transaction. */
async function lockTeam(db: Db, teamId: string): Promise<Team> {
  const [team] = await db.select().from(teams).where(eq(teams.id, teamId)).for("no key update");
  if (!team) throw notFound("team", teamId);
  return team;
}

/** Runs `write` in a transaction that holds the team first; 404 `not_found:team` when it is gone. */
export function writeUnderTeam<T>(db: Db, teamId: string, write: (tx: Db, team: Team) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => write(tx, await lockTeam(tx, teamId)));
}

/** Runs `write` in a transaction that holds the agent's team first; 404 `not_found:agent` when the agent is gone. */
export function writeUnderAgent<T>(db: Db, agentId: string, write: (tx: Db, agent: Agent) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    const [held] = await tx
      .select({ id: teams.id })
      .from(teams)
      .innerJoin(agents, eq(agents.teamId, teams.id))
      .where(eq(agents.id, agentId))
      .for("no key update", { of: teams });
    if (!held) throw notFound("agent", agentId);
    return write(tx, await requireAgent(tx, agentId));
  });
}

/** Runs `write` in a transaction that holds the team of the task's agent first; 404 `not_found:task` when the task is gone. */
export function writeUnderTask<T>(db: Db, taskId: string, write: (tx: Db, task: Task) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    const [held] = await tx
      .select({ id: teams.id })
      .from(teams)
      .innerJoin(agents, eq(agents.teamId, teams.id))
      .innerJoin(tasks, eq(tasks.agentId, agents.id))
      .where(eq(tasks.id, taskId))
      .for("no key update", { of: teams });
    if (!held) throw notFound("task", taskId);
    return write(tx, await requireTask(tx, taskId));
  });
}
