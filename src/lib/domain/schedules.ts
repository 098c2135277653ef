import "server-only";
import { getTeamLead, getAgent, listLeadsWithTeamStatus } from "@/lib/db/queries/agents";
import { listTasksByAgent } from "@/lib/db/queries/tasks";
import { openTaskStatuses } from "@/lib/db/task-statuses";
import { getTeam } from "@/lib/db/queries/teams";
import { getRunningSession } from "@/lib/db/queries/work-sessions";
import type { EngineDeps } from "@/lib/core/engine-config";
import { teamOverBudget } from "./budgets";
import { scheduledRunTask } from "@/lib/core/prompts";
import { assignTask } from "./tasks";

/** Every active team's lead has a schedule; paused teams' leads have none. */
export async function syncLeadSchedules(deps: EngineDeps, defaultCron: string): Promise<void> {
  const leads = await listLeadsWithTeamStatus(deps.db);
  for (const lead of leads) {
    if (lead.status === "active")
      await deps.jobs.scheduleLead(lead.agentId, lead.schedule ?? defaultCron, lead.scheduleTimeZone);
    else await deps.jobs.unscheduleLead(lead.agentId);
  }
}

/**
 * A lead's proactive run: a task to advance the mission, unless the lead is already
 * working (a busy agent is provably alive and has its hands full: seed 000's rule) or
 * its team has spent today's budget.
 */
export async function runScheduledLeadCheckIn(deps: EngineDeps, agentId: string): Promise<"started" | "skipped"> {
  const { db } = deps;
  const lead = await getAgent(db, agentId);
  if (lead?.role !== "lead") return "skipped";
  const team = await getTeam(db, lead.teamId);
  if (team?.status !== "active" || (await getTeamLead(db, team.id))?.id !== lead.id) return "skipped";
  if (await getRunningSession(db, lead.id)) return "skipped";
  if ((await listTasksByAgent(db, lead.id, openTaskStatuses)).length > 0) return "skipped";
  // Over its daily budget the check-in could only wait for tomorrow, when the next one comes anyway.
  if (await teamOverBudget(deps, team)) return "skipped";
  await assignTask(db, deps.jobs, { agentId: lead.id, source: "schedule", ...scheduledRunTask(team) });
  return "started";
}
