import type { Metadata } from "next";
import { cookies } from "next/headers";
import Link from "next/link";
import { redirect } from "next/navigation";
import { TeamActivitySummary } from "@/components/agent-activity";
import { LiveRefresh } from "@/components/live-events";
import { MarkSeenButton } from "@/components/mark-seen";
import { OfflineNotice } from "@/components/offline-notice";
import { EmptyState, LocalTime, StatusBadge } from "@/components/ui";
import { activityState } from "@/lib/views/activity";
import { requirePageSession } from "@/lib/auth/auth";
import { offlineSetup } from "@/lib/telemetry/connection-check";
import { db } from "@/lib/db/client";
import { listTeams } from "@/lib/db/queries/teams";
import { DEFAULT_WINDOW_MS, LAST_VISIT_COOKIE, parseLastVisit } from "@/lib/views/last-visit";
import { plural } from "@/lib/util/plural";
import { getSinceLastVisit, type TeamNews } from "@/lib/views/since-last-visit";
import { getTeamActivity } from "@/lib/views/team-activity";
import { inboxTitle, taskResultText } from "@/lib/views/plain-words";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Home" };

function more(total: number, shown: number): string {
  return total > shown ? ` (newest ${shown} of ${total})` : "";
}

function TeamNewsCard({ news }: { news: TeamNews }) {
  const headingId = `news-${news.teamId}`;
  const counts = [
    news.completed > 0 && `${news.completed} finished`,
    news.failed > 0 && `${news.failed} failed`,
    news.briefings > 0 && plural(news.briefings, "briefing"),
    news.knowledge > 0 && plural(news.knowledge, "new knowledge item"),
  ].filter(Boolean);
  return (
    <article className="card news-card" aria-labelledby={headingId}>
      <div className="card-head">
        <h3 id={headingId} className="card-title">
          <Link href={`/teams/${news.teamId}`}>{news.teamName}</Link>
        </h3>
        <Link href={`/teams/${news.teamId}/timeline`} className="meta-link" aria-label={`Timeline of ${news.teamName}`}>
          Timeline
        </Link>
      </div>
      <p className="meta">{counts.join(" · ")}</p>
      {news.tasks.length > 0 && (
        <>
          <h4 className="news-kind">Work finished and failed{more(news.completed + news.failed, news.tasks.length)}</h4>
          <ul className="news-list">
            {news.tasks.map((task) => (
              <li key={task.id}>
                <StatusBadge status={task.status} />{" "}
                <Link href={`/agents/${task.agentId}#task-${task.id}`}>{task.title}</Link>{" "}
                <span className="meta">
                  by {task.agentName} · <LocalTime value={task.endedAt} relative />
                </span>
                {task.result && <p className="news-excerpt">{taskResultText(task.status, task.result)}</p>}
              </li>
            ))}
          </ul>
        </>
      )}
      {news.briefingItems.length > 0 && (
        <>
          <h4 className="news-kind">Briefings{more(news.briefings, news.briefingItems.length)}</h4>
          <ul className="news-list">
            {news.briefingItems.map((item) => (
              <li key={item.id}>
                <Link href={`/inbox/${item.id}`}>{inboxTitle(item.title)}</Link>{" "}
                <span className="meta">
                  from {item.agentName} · <LocalTime value={item.createdAt} relative />
                </span>
                {item.summary && <p className="news-excerpt">{item.summary}</p>}
              </li>
            ))}
          </ul>
        </>
      )}
      {news.knowledgeItems.length > 0 && (
        <>
          <h4 className="news-kind">
            Learned{more(news.knowledge, news.knowledgeItems.length)} ·{" "}
            <Link href="/knowledge" className="meta-link">
              all knowledge
            </Link>
          </h4>
          <ul className="news-list">
            {news.knowledgeItems.map((item) => (
              <li key={item.id}>
                <span className={`pill pill-${item.type}`}>{item.type}</span>{" "}
                <span className="news-excerpt-inline">{item.content}</span>{" "}
                <span className="meta">
                  by {item.agentName} · <LocalTime value={item.createdAt} relative />
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
    </article>
  );
}

/**
 * The home page: what is happening now in every team, and what finished, failed, was briefed
 * and learned since the person last marked the page as seen. With no team yet, the teams page
 * (where the first team is created) is the better start.
 */
export default async function HomePage() {
  await requirePageSession();
  const teams = await listTeams(db());
  if (teams.length === 0) redirect("/teams");
  const now = new Date();
  const marked = parseLastVisit((await cookies()).get(LAST_VISIT_COOKIE)?.value, now);
  const since = marked ?? new Date(now.getTime() - DEFAULT_WINDOW_MS);
  const [news, activity] = await Promise.all([
    getSinceLastVisit(db(), since),
    getTeamActivity(
      db(),
      teams.map((team) => team.id),
    ),
  ]);
  const offline = offlineSetup();
  const busyTeams = teams.filter((team) =>
    (activity.get(team.id) ?? []).some((agent) => activityState(agent) !== "idle"),
  );
  const agentIds = [...activity.values()].flat().map((agent) => agent.agentId);
  const sinceWords = marked ? (
    <>
      since you marked this page as seen, <LocalTime value={since.toISOString()} relative />
    </>
  ) : (
    "in the last day"
  );

  return (
    <div className="page">
      <LiveRefresh tables={["tasks", "inbox_items", "knowledge_items", "teams"]} />
      <LiveRefresh tables={["work_sessions", "messages"]} agentIds={agentIds} mode="background" />
      <header className="page-header">
        <div>
          <h1>Since you were last here</h1>
          <p className="lede">Work finished and failed, briefings and new knowledge, per team, {sinceWords}.</p>
        </div>
        <div className="header-actions">
          <MarkSeenButton renderedAt={now.getTime()} />
        </div>
      </header>
      {offline && <OfflineNotice searchConfigured={offline.searchConfigured} />}

      <section aria-labelledby="now-heading" className="section">
        <h2 id="now-heading">Working now</h2>
        {busyTeams.length === 0 ? (
          <p className="hint">No one is working right now.</p>
        ) : (
          <ul className="card-list">
            {busyTeams.map((team) => (
              <li key={team.id} className="card">
                <Link href={`/teams/${team.id}`} className="card-title">
                  {team.name}
                </Link>
                <TeamActivitySummary agents={activity.get(team.id) ?? []} />
              </li>
            ))}
          </ul>
        )}
      </section>

      <section aria-labelledby="news-heading" className="section">
        <h2 id="news-heading">What is new</h2>
        {news.length === 0 ? (
          <EmptyState title={marked ? "Nothing new since you last looked" : "Nothing new in the last day"}>
            <p>
              Nothing finished, failed, was briefed or learned
              {marked && (
                <>
                  {" "}
                  since <LocalTime value={since.toISOString()} />
                </>
              )}
              . <Link href="/teams">Go to your teams</Link>
            </p>
          </EmptyState>
        ) : (
          <ul className="card-list">
            {news.map((team) => (
              <li key={team.teamId}>
                <TeamNewsCard news={team} />
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  );
}
