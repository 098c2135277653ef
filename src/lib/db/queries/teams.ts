import { asc, desc, eq, sql } from "drizzle-orm";
import { notFound } from "@/lib/errors";
import type { Db } from "../client";
import { agents, conversations, teams, type Agent, type Team, type TeamStatus } from "../schema";

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

export async function getTeam(db: Db, teamId: string): Promise<Team | null> {
  const [team] = await db.select().from(teams).where(eq(teams.id, teamId));
  return team ?? null;
}

export async function requireTeam(db: Db, teamId: string): Promise<Team> {
  const team = await getTeam(db, teamId);
  if (!team) throw notFound("team", teamId);
  return team;
}

export async function updateTeam(
  db: Db,
  teamId: string,
  changes: Partial<{ name: string; mission: string; status: TeamStatus }>,
): Promise<Team> {
  const [team] = await db
    .update(teams)
    .set({ ...changes, updatedAt: sql`now()` })
    .where(eq(teams.id, teamId))
    .returning();
  if (!team) throw notFound("team", teamId);
  return team;
}

export async function deleteTeam(db: Db, teamId: string): Promise<void> {
  const deleted = await db.delete(teams).where(eq(teams.id, teamId)).returning({ id: teams.id });
  if (deleted.length === 0) throw notFound("team", teamId);
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
