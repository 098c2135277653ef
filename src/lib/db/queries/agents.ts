import "server-only";
import { and, eq, sql } from "drizzle-orm";
import { CadreError, notFound } from "@/lib/errors";
import type { Db } from "../client";
import { agents, conversations, teams, type Agent, type ToolScope } from "../schema";
import { handOverSharedKnowledge } from "./knowledge-items";

export async function getAgent(db: Db, agentId: string): Promise<Agent | null> {
  const [agent] = await db.select().from(agents).where(eq(agents.id, agentId));
  return agent ?? null;
}

/**
 * What is left of an agent and its team once every deletion under way has ended: FOR KEY SHARE
 * waits for a transaction deleting either row (a DELETE holds it FOR UPDATE until it commits),
 * then reads what that left. A session whose write failed against a deletion's cascade (a
 * deadlock between the two) gets its error before the deletion commits, and a plain read would
 * still see the agent. Waits at most `waitMs`, then fails like any lock timeout.
 */
export async function agentAfterDeletions(
  db: Db,
  agentId: string,
  teamId: string | null,
  waitMs: number,
): Promise<"present" | "agent-deleted" | "team-deleted"> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('lock_timeout', ${`${waitMs}ms`}, true)`);
    const agent = await tx.execute(
      sql`select 1 from agents a join teams t on t.id = a.team_id where a.id = ${agentId} for key share`,
    );
    if (agent.length > 0) return "present";
    const team = teamId === null ? [] : await tx.execute(sql`select 1 from teams where id = ${teamId} for key share`);
    return teamId !== null && team.length === 0 ? "team-deleted" : "agent-deleted";
  });
}

export async function requireAgent(db: Db, agentId: string): Promise<Agent> {
  const agent = await getAgent(db, agentId);
  if (!agent) throw notFound("agent", agentId);
  return agent;
}

export async function getTeamLead(db: Db, teamId: string): Promise<Agent | null> {
  const [lead] = await db
    .select()
    .from(agents)
    .where(and(eq(agents.teamId, teamId), eq(agents.role, "lead")));
  return lead ?? null;
}

export type NewSubordinate = { name: string; instructions: string; parentAgentId?: string; model?: string | null };

/**
 * Adds a subordinate to a team, under the lead unless another parent of the same
 * team is named, with its background conversation ready for work.
 */
export async function createSubordinate(db: Db, teamId: string, input: NewSubordinate): Promise<Agent> {
  return db.transaction(async (tx) => {
    let parentAgentId = input.parentAgentId;
    if (parentAgentId) {
      const parent = await getAgent(tx, parentAgentId);
      if (!parent || parent.teamId !== teamId) {
        throw new CadreError("bad_request:parent_agent", `Agent ${parentAgentId} is not a member of this team.`);
      }
    } else {
      const lead = await getTeamLead(tx, teamId);
      if (!lead) throw notFound("team", teamId);
      parentAgentId = lead.id;
    }
    const [agent] = await tx
      .insert(agents)
      .values({
        teamId,
        name: input.name,
        role: "subordinate",
        parentAgentId,
        instructions: input.instructions,
        model: input.model ?? null,
      })
      .returning();
    await tx.insert(conversations).values({ agentId: agent!.id, mode: "background" });
    return agent!;
  });
}

export type AgentChanges = Partial<{
  name: string;
  instructions: string;
  model: string | null;
  schedule: string | null;
  scheduleTimeZone: string | null;
  toolScope: ToolScope | null;
}>;

export async function updateAgent(db: Db, agentId: string, changes: AgentChanges): Promise<Agent> {
  const [agent] = await db
    .update(agents)
    .set({ ...changes, updatedAt: sql`now()` })
    .where(eq(agents.id, agentId))
    .returning();
  if (!agent) throw notFound("agent", agentId);
  return agent;
}

/** Removes a subordinate (and, by cascade, its own subordinates). A lead goes only with its team. */
export async function deleteAgent(db: Db, agentId: string): Promise<void> {
  const agent = await requireAgent(db, agentId);
  if (agent.role === "lead") {
    throw new CadreError("conflict:agent_is_lead", "A team's lead cannot be removed; delete the team instead.");
  }
  // A fact another agent reported too stays, with that agent as its first reporter.
  await handOverSharedKnowledge(db, agentId);
  await db.delete(agents).where(eq(agents.id, agentId));
}

/** Marks that the agent has a reason to run (JobQueue.wakeAgent sends its job with it). */
export async function markWakeRequested(db: Db, agentId: string): Promise<void> {
  await db.execute(sql`update agents set wake_requested_at = clock_timestamp() where id = ${agentId}`);
}

/** Locks the agent's row for the transaction; null when there is no such agent. */
export async function lockAgent(tx: Db, agentId: string): Promise<{ id: string } | null> {
  const [agent] = await tx.select({ id: agents.id }).from(agents).where(eq(agents.id, agentId)).for("update");
  return agent ?? null;
}

/** The agent and every agent under it (its subordinates, theirs, …). */
export async function listAgentTree(db: Db, agentId: string): Promise<string[]> {
  const rows = await db.execute<{ id: string }>(sql`
    with recursive tree as (
      select id from agents where id = ${agentId}
      union all
      select a.id from agents a join tree on a.parent_agent_id = tree.id
    )
    select id from tree`);
  return rows.map((row) => row.id);
}

/** The agent's wake flag, its row locked for the transaction (the lock a session is claimed and finished under); null when it is gone. */
export async function lockAgentWake(tx: Db, agentId: string): Promise<{ wakeRequestedAt: Date | null } | null> {
  const [locked] = await tx
    .select({ wakeRequestedAt: agents.wakeRequestedAt })
    .from(agents)
    .where(eq(agents.id, agentId))
    .for("update");
  return locked ?? null;
}

/** Every lead with its team's status (the schedules follow it). */
export function listLeadsWithTeamStatus(db: Db) {
  return db
    .select({
      agentId: agents.id,
      schedule: agents.schedule,
      scheduleTimeZone: agents.scheduleTimeZone,
      status: teams.status,
    })
    .from(agents)
    .innerJoin(teams, eq(teams.id, agents.teamId))
    .where(eq(agents.role, "lead"));
}

/** The model overrides agents have (distinct, sorted): with the configured model, the models in use. */
export async function listAgentModelOverrides(db: Db): Promise<string[]> {
  const rows = await db
    .selectDistinct({ model: agents.model })
    .from(agents)
    .where(sql`${agents.model} is not null`)
    .orderBy(agents.model);
  return rows.flatMap((row) => (row.model ? [row.model] : []));
}
