import type { Metadata } from "next";
import Link from "next/link";
import { TeamActivitySummary } from "@/components/agent-activity";
import { CreateTeamForm } from "@/components/create-team-form";
import { OfflineNotice } from "@/components/offline-notice";
import { LiveRefresh } from "@/components/live-events";
import { EmptyState, StatusBadge } from "@/components/ui";
import { requirePageSession } from "@/lib/auth/auth";
import { offlineSetup } from "@/lib/telemetry/connection-check";
import { db } from "@/lib/db/client";
import { listTeamSummaries } from "@/lib/db/queries/views";
import { plural } from "@/lib/util/plural";
import { getTeamActivity } from "@/lib/views/team-activity";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Teams" };

export default async function TeamsPage() {
  await requirePageSession();
  const teams = await listTeamSummaries(db());
  const activity = await getTeamActivity(
    db(),
    teams.map((team) => team.id),
  );
  const agentIds = [...activity.values()].flat().map((agent) => agent.agentId);
  const offline = offlineSetup();
  return (
    <div className="page">
      <LiveRefresh tables={["teams", "agents", "tasks", "inbox_items"]} />
      {/* What each agent is doing: its sessions and the steps in its work log. */}
      <LiveRefresh tables={["work_sessions", "messages"]} agentIds={agentIds} mode="background" />
      <header className="page-header">
        <div>
          <h1>Teams</h1>
          <p className="lede">Each team has a lead you chat with and subordinates who work in the background.</p>
        </div>
      </header>
      {offline && <OfflineNotice searchConfigured={offline.searchConfigured} setupOpen={teams.length === 0} />}
      <div className="split">
        <section aria-labelledby="team-list-heading" className="split-main">
          <h2 id="team-list-heading" className="visually-hidden">
            Your teams
          </h2>
          {teams.length === 0 ? (
            <EmptyState title="No teams yet">
              <p>Create your first team: give it a name and a mission, and Cadre drafts instructions for its lead.</p>
            </EmptyState>
          ) : (
            <ul className="card-list">
              {teams.map((team) => (
                <li key={team.id} className="card team-card">
                  <div className="card-head">
                    <Link href={`/teams/${team.id}`} className="card-title">
                      {team.name}
                    </Link>
                    {team.status === "paused" && <StatusBadge status="paused" />}
                  </div>
                  <p className="card-text clamp">{team.mission}</p>
                  <TeamActivitySummary agents={activity.get(team.id) ?? []} />
                  <div className="card-foot">
                    <span className="meta">
                      {plural(team.subordinates, "subordinate")} · {plural(team.openTasks, "open task")}
                      {team.unread > 0 && ` · ${team.unread} unread`}
                    </span>
                    <span className="card-actions">
                      <Link href={`/teams/${team.id}`} className="button button-quiet">
                        Manage
                      </Link>
                      <Link href={`/teams/${team.id}/chat`} className="button">
                        Chat
                      </Link>
                    </span>
                  </div>
                </li>
              ))}
            </ul>
          )}
        </section>
        <aside className="split-side">
          <CreateTeamForm />
        </aside>
      </div>
    </div>
  );
}
