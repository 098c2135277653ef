import type { Metadata } from "next";
import { LiveRefresh } from "@/components/live-events";
import { AddSubordinateForm, AgentEditor, type LeadScheduleView } from "@/components/team-admin";
import { previewSchedule } from "@/lib/domain/schedule-preview";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { getLastScheduledTask } from "@/lib/db/queries/tasks";
import { listTeamAgents } from "@/lib/db/queries/teams";
import { env } from "@/lib/env";
import { getTeamActivity } from "@/lib/views/team-activity";
import { sectionMetadata, teamOr404, type TeamParams } from "../team-section";

export const dynamic = "force-dynamic";

export async function generateMetadata({ params }: TeamParams): Promise<Metadata> {
  return sectionMetadata(params, "Agents");
}

/** The lead and its subordinates: what each does now, its instructions and model, and a form to add one. */
export default async function TeamAgentsPage({ params }: TeamParams) {
  await requirePageSession();
  const team = await teamOr404(params);
  const [agents, activityByTeam] = await Promise.all([listTeamAgents(db(), team.id), getTeamActivity(db(), [team.id])]);
  const activity = new Map((activityByTeam.get(team.id) ?? []).map((each) => [each.agentId, each]));
  const lead = agents.find((agent) => agent.role === "lead");
  const subordinates = agents.filter((agent) => agent.role === "subordinate");
  const lastRun = lead ? await getLastScheduledTask(db(), lead.id) : null;
  const leadSchedule: LeadScheduleView | undefined = lead && {
    preview: previewSchedule(lead.schedule ?? env().LEAD_SCHEDULE, lead.scheduleTimeZone),
    defaultCron: env().LEAD_SCHEDULE,
    lastRunAt: lastRun?.createdAt.toISOString() ?? null,
    teamStatus: team.status,
  };
  const teamContext = { name: team.name, mission: team.mission };

  return (
    <>
      <LiveRefresh
        tables={["work_sessions", "agents", "tasks", "messages"]}
        agentIds={agents.map((agent) => agent.id)}
        mode="background"
      />
      <section aria-labelledby="lead-heading" className="section">
        <h2 id="lead-heading">Lead</h2>
        {lead ? (
          <AgentEditor agent={lead} activity={activity.get(lead.id)} team={teamContext} schedule={leadSchedule} />
        ) : (
          <p className="notice">This team has no lead.</p>
        )}
      </section>

      <section aria-labelledby="subordinates-heading" className="section">
        <h2 id="subordinates-heading">Subordinates</h2>
        {subordinates.length === 0 ? (
          <p className="hint">No subordinates yet. The lead delegates research to them; add one below.</p>
        ) : (
          <ul className="card-list">
            {subordinates.map((agent) => (
              <li key={agent.id}>
                <AgentEditor agent={agent} activity={activity.get(agent.id)} team={teamContext} removable />
              </li>
            ))}
          </ul>
        )}
        {lead && <AddSubordinateForm teamId={team.id} leadId={lead.id} />}
      </section>
    </>
  );
}
