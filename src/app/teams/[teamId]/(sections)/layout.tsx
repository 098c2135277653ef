import type { ReactNode } from "react";
import Link from "next/link";
import { LiveRefresh } from "@/components/live-events";
import { TeamStatusButton } from "@/components/team-admin";
import { TeamTabs } from "@/components/team-tabs";
import { StatusBadge } from "@/components/ui";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { getTeamLead } from "@/lib/db/queries/agents";
import { teamOr404, type TeamParams } from "./team-section";

/**
 * What every section of a team shares: the way back, the team's name and state, the actions a
 * person takes from anywhere (pause, chat, timeline) and the section links. The pages still
 * check the session and the team themselves: a layout renders beside its page, not before it.
 */
export default async function TeamSectionsLayout({ params, children }: TeamParams & { children: ReactNode }) {
  await requirePageSession();
  const team = await teamOr404(params);
  const lead = await getTeamLead(db(), team.id);
  return (
    <div className="page">
      {/* The name, the state and the lead change from another tab or the API. */}
      <LiveRefresh tables={["teams", "agents"]} teamIds={[team.id]} />
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/teams">Teams</Link> <span aria-hidden="true">/</span> <span>{team.name}</span>
      </nav>
      <header className="page-header team-header">
        <div>
          <h1>
            {team.name} {team.status === "paused" && <StatusBadge status="paused" />}
          </h1>
        </div>
        <div className="header-actions">
          <TeamStatusButton teamId={team.id} status={team.status} />
          <Link href={`/teams/${team.id}/timeline`} className="button">
            Timeline
          </Link>
          {lead && (
            <Link href={`/agents/${lead.id}/chat`} className="button button-primary">
              Chat with the lead
            </Link>
          )}
        </div>
      </header>
      {/* Notices about the whole team sit here, above the sections. */}
      <div className="team-notices">
        {team.status === "paused" && (
          <p className="notice">This team is paused: no scheduled runs, and new tasks wait until you resume it.</p>
        )}
      </div>
      <TeamTabs teamId={team.id} />
      {children}
    </div>
  );
}
