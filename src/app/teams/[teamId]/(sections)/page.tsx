import type { Metadata } from "next";
import Link from "next/link";
import { AgentActivityLine } from "@/components/agent-activity";
import { ApprovalCard } from "@/components/approval-card";
import { LiveRefresh } from "@/components/live-events";
import { OfflineNotice } from "@/components/offline-notice";
import { Markdown } from "@/components/markdown";
import { QuestionCard } from "@/components/question-card";
import { TeamSpendingSection } from "@/components/team-usage";
import { LocalTime } from "@/components/ui";
import { toWire } from "@/lib/client/api-client";
import { requirePageSession } from "@/lib/auth/auth";
import { offlineSetup } from "@/lib/telemetry/connection-check";
import { db } from "@/lib/db/client";
import { getLatestTeamBriefing, listTeamItemsWaitingForPerson } from "@/lib/db/queries/inbox-items";
import { listTeamAgents } from "@/lib/db/queries/teams";
import { getTeamActivity } from "@/lib/views/team-activity";
import { sectionMetadata, teamOr404, type TeamParams } from "./team-section";

export const dynamic = "force-dynamic";

export async function generateMetadata({ params }: TeamParams): Promise<Metadata> {
  return sectionMetadata(params, null);
}

/** How many waiting items the Overview shows; the rest are in the inbox, filtered to the team. */
const WAITING_SHOWN = 10;

/** The team at a glance: what its agents do now, what waits for the person, the latest briefing, today's spending. */
export default async function TeamOverviewPage({ params }: TeamParams) {
  await requirePageSession();
  const team = await teamOr404(params);
  const [agents, activityByTeam, waiting, briefing] = await Promise.all([
    listTeamAgents(db(), team.id),
    getTeamActivity(db(), [team.id]),
    listTeamItemsWaitingForPerson(db(), team.id, WAITING_SHOWN + 1),
    getLatestTeamBriefing(db(), team.id),
  ]);
  const activity = activityByTeam.get(team.id) ?? [];
  const names = new Map(agents.map((agent) => [agent.id, agent.name]));
  const agentIds = agents.map((agent) => agent.id);
  const offline = offlineSetup();

  return (
    <>
      <LiveRefresh tables={["work_sessions", "agents", "tasks", "messages"]} agentIds={agentIds} mode="background" />
      {/* Questions end when their task does (tasks), approvals change state (approvals), briefings arrive (inbox_items). */}
      <LiveRefresh tables={["inbox_items", "approvals"]} teamIds={[team.id]} />
      <Markdown text={team.mission} className="lede" />
      {/* On the built-in offline model the Overview says so plainly, and how to connect a model (the sidebar's badge says it everywhere). */}
      {offline && <OfflineNotice searchConfigured={offline.searchConfigured} />}

      <div className="overview-grid">
        <section aria-labelledby="now-heading" className="section">
          <h2 id="now-heading">Now</h2>
          {activity.length === 0 ? (
            <p className="hint">This team has no agents.</p>
          ) : (
            <ul className="activity-list overview-activity" aria-label="What the team is doing">
              {activity.map((each) => (
                <li key={each.agentId}>
                  <AgentActivityLine activity={each} showName />
                </li>
              ))}
            </ul>
          )}
        </section>

        <section aria-labelledby="briefing-heading" className="section">
          <h2 id="briefing-heading">Latest briefing</h2>
          {briefing ? (
            <article className="card overview-briefing" aria-labelledby="latest-briefing-title">
              <Link href={`/inbox/${briefing.id}`} className="card-title" id="latest-briefing-title">
                {briefing.title}
              </Link>
              <p className="meta">
                From {names.get(briefing.agentId) ?? "the lead"}, <LocalTime value={briefing.createdAt} relative />
              </p>
              <div className="overview-briefing-summary">
                <Markdown text={briefing.summary} />
              </div>
              <Link href={`/inbox/${briefing.id}`} className="meta-link">
                Read the briefing
              </Link>
            </article>
          ) : (
            <p className="hint">
              No briefing yet. When the lead has something you should know, its briefing shows here and lands in your
              inbox.
            </p>
          )}
        </section>
      </div>

      <section aria-labelledby="waiting-heading" className="section">
        <h2 id="waiting-heading">Waiting for you</h2>
        {waiting.length === 0 ? (
          <p className="hint">Nothing waits for you: no open questions and no calls to approve.</p>
        ) : (
          <ul className="card-list overview-waiting">
            {waiting.slice(0, WAITING_SHOWN).map((item) => (
              <li key={item.id}>
                {item.question && (
                  <QuestionCard question={toWire(item.question)} agentName={names.get(item.agentId) ?? "An agent"} />
                )}
                {item.approval && (
                  <ApprovalCard approval={toWire(item.approval)} agentName={names.get(item.agentId) ?? "An agent"} />
                )}
              </li>
            ))}
          </ul>
        )}
        {waiting.length > WAITING_SHOWN && (
          <p className="meta-link">
            <Link href={`/inbox?team=${team.id}`}>More in the inbox</Link>
          </p>
        )}
      </section>

      <TeamSpendingSection team={team} />
    </>
  );
}
