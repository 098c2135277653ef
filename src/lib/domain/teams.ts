import "server-only";
import type { Agent, Team, TeamStatus } from "@/lib/db/schema";
import { createTeamWithLead, updateTeam, type TeamChanges } from "@/lib/db/queries/teams";
import { getTeamLead, requireAgent, updateAgent, type AgentChanges } from "@/lib/db/queries/agents";
import { CadreError } from "@/lib/errors";
import { deleteTeam, getTeam, writeUnderAgent } from "@/lib/db/queries/teams";
import { env } from "@/lib/env";
import { retryingTransaction } from "@/lib/db/transactions";
import type { EngineDeps } from "@/lib/core/engine-config";
import { wakeAgentsWithWork } from "./tasks";

/** Standing instructions for a new lead when the person does not write their own. */
function defaultLeadInstructions(mission: string): string {
  return [
    `Advance the team's mission: ${mission}`,
    "Break the mission into concrete research tasks and hand them to your subordinates; do small lookups yourself.",
    "Keep the team's knowledge base current: record facts with their sources, remove what turns out wrong.",
    "Brief the person when something changes that they should know about: lead with what matters, cite sources, say what you will do next.",
  ].join("\n");
}

/** A team with its lead, scheduled for proactive runs. */
export async function createTeam(
  engine: EngineDeps,
  input: { name: string; mission: string; leadName?: string; instructions?: string },
): Promise<{ team: Team; lead: Agent }> {
  const created = await createTeamWithLead(engine.db, {
    name: input.name,
    mission: input.mission,
    leadName: input.leadName,
    leadInstructions: input.instructions?.trim() || defaultLeadInstructions(input.mission),
  });
  await syncLeadSchedule(engine, created.lead, "active");
  return created;
}

/**
 * Best effort, after the team's own write has committed: the schedule lives in
 * pg-boss, outside our transaction. A failure is logged, not thrown; each worker
 * reconciles every lead's schedule when it starts, and a check-in for a paused team
 * is skipped anyway.
 */
async function syncLeadSchedule(
  engine: EngineDeps,
  lead: Pick<Agent, "id" | "schedule" | "scheduleTimeZone">,
  status: TeamStatus,
): Promise<void> {
  try {
    if (status === "active")
      await engine.jobs.scheduleLead(lead.id, lead.schedule ?? env().LEAD_SCHEDULE, lead.scheduleTimeZone);
    else await engine.jobs.unscheduleLead(lead.id);
  } catch (error) {
    engine.log(`[teams] could not update the schedule of lead ${lead.id}`, error);
  }
}

/**
 * The person's edit of a team's name, mission or budgets, in the caller's transaction. A
 * budget changed: the work a budget stop left waiting (see waitForBudget in session-end.ts)
 * starts now — a session that finds the team still over budget ends at once, without waking
 * itself again.
 */
export async function editTeam(engine: EngineDeps, teamId: string, changes: TeamChanges): Promise<Team> {
  const team = await updateTeam(engine.db, teamId, changes);
  const budgetChanged = changes.dailyTokenBudget !== undefined || changes.dailyCostBudgetUsd !== undefined;
  if (budgetChanged && team.status === "active") await wakeAgentsWithWork(engine.db, engine.jobs, teamId);
  return team;
}

/** Pausing a team stops its proactive runs; its agents leave new tasks pending until it resumes. */
export async function setTeamStatus(engine: EngineDeps, teamId: string, status: TeamStatus): Promise<Team> {
  // A resume wakes agents whose rows the engine's own writes may hold in another order: a
  // deadlock's victim runs again rather than failing the person's Pause or Resume (seen once
  // in the model check: "deadlock detected" on the wake-up).
  const team = await retryingTransaction(engine.db, async (tx) => {
    const updated = await updateTeam(tx, teamId, { status });
    // Work that waited while the team was paused starts now, for every agent that has some.
    if (status === "active") await wakeAgentsWithWork(tx, engine.jobs, teamId);
    return updated;
  });
  const lead = await getTeamLead(engine.db, teamId);
  if (lead) await syncLeadSchedule(engine, lead, status);
  return team;
}

/**
 * The person's edit of an agent (name, instructions, model, schedule and its time zone). A
 * lead's new schedule takes effect now, not at the next worker start; a paused team's lead
 * stays unscheduled and gets the new schedule when the team resumes.
 */
export async function editAgent(engine: EngineDeps, agentId: string, changes: AgentChanges): Promise<Agent> {
  const agent = await writeUnderAgent(engine.db, agentId, async (tx) => {
    const scheduled =
      (changes.schedule !== undefined && changes.schedule !== null) ||
      (changes.scheduleTimeZone !== undefined && changes.scheduleTimeZone !== null);
    if (scheduled && (await requireAgent(tx, agentId)).role !== "lead") {
      // Only a lead runs on a schedule: stored on a subordinate it would do nothing, silently.
      throw new CadreError(
        "bad_request:validation",
        "Only a team's lead has a schedule; give this agent tasks instead, or schedule its lead.",
      );
    }
    return updateAgent(tx, agentId, changes);
  });
  const scheduleChanged = changes.schedule !== undefined || changes.scheduleTimeZone !== undefined;
  if (scheduleChanged && agent.role === "lead" && (await getTeam(engine.db, agent.teamId))?.status === "active") {
    await syncLeadSchedule(engine, agent, "active");
  }
  return agent;
}

/**
 * Deletes a team with everything under it (agents, tasks, conversations, knowledge, inbox
 * items: by cascade, in one statement), then drops its lead's schedule — best effort, as a
 * check-in for a team that is gone is skipped anyway.
 */
export async function removeTeam(engine: EngineDeps, teamId: string): Promise<void> {
  const lead = await getTeamLead(engine.db, teamId);
  await deleteTeam(engine.db, teamId);
  if (lead) await syncLeadSchedule(engine, lead, "paused");
}
