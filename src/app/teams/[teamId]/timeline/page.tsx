import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { ConversationSearchForm } from "@/components/conversation-search";
import { TeamStories } from "@/components/team-stories";
import { TeamTimeline } from "@/components/team-timeline";
import { findTeam } from "@/app/found";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { listTeamAgents } from "@/lib/db/queries/teams";
import { getStory, getTeamStories } from "@/lib/views/stories";
import { getTeamTimeline, timelineKinds, type TimelineKind } from "@/lib/views/timeline";

export const dynamic = "force-dynamic";
type Props = {
  params: Promise<{ teamId: string }>;
  searchParams: Promise<{
    agent?: string | string[];
    kind?: string | string[];
    view?: string | string[];
    story?: string | string[];
  }>;
};

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  await requirePageSession();
  const { teamId } = await params;
  const team = await findTeam(teamId);
  return { title: team ? `${team.name} — timeline` : "Timeline" };
}

const KIND_NAMES: Record<TimelineKind, string> = {
  work: "Work (calls, notes, summaries)",
  task: "Tasks",
  report: "Reports",
  question: "Questions",
  approval: "Approvals",
  briefing: "Briefings",
  alert: "Alerts",
};

export default async function TimelinePage({ params, searchParams }: Props) {
  await requirePageSession();
  const { teamId } = await params;
  const team = await findTeam(teamId);
  if (!team) notFound();
  const agents = await listTeamAgents(db(), team.id);
  const query = await searchParams;
  // An unknown filter value shows everything rather than an error: it is only a filter.
  const agentId = agents.find((agent) => agent.id === query.agent)?.id;
  const kind = timelineKinds.find((known) => known === query.kind);
  // Stories by default; "Every step" is the engine's record, entry by entry.
  const steps = query.view === "steps";
  const [first, stories, open] = await Promise.all([
    steps ? getTeamTimeline(db(), team.id, { agentId, kind }) : null,
    steps ? null : getTeamStories(db(), team.id, { agentId, kind }),
    !steps && typeof query.story === "string" ? getStory(db(), team.id, query.story) : null,
  ]);
  const viewHref = (view: "stories" | "steps") => {
    const params = new URLSearchParams();
    if (agentId) params.set("agent", agentId);
    if (kind) params.set("kind", kind);
    if (view === "steps") params.set("view", "steps");
    return `/teams/${team.id}/timeline${params.size ? `?${params}` : ""}`;
  };

  return (
    <div className="page">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/teams">Teams</Link> <span aria-hidden="true">/</span>{" "}
        <Link href={`/teams/${team.id}`}>{team.name}</Link> <span aria-hidden="true">/</span> <span>Timeline</span>
      </nav>
      <header className="page-header">
        <div>
          <h1>Timeline</h1>
          <p className="lede">
            {steps ? (
              <>
                Every step {team.name} took, newest first: each agent&apos;s work, the tasks it gives and gets, reports,
                questions, approvals, briefings and alerts.
              </>
            ) : (
              <>
                What {team.name} did, one story per request, newest first: the plan, each agent&apos;s work, the reports
                and what reached you.
              </>
            )}
          </p>
        </div>
      </header>
      <ConversationSearchForm teamId={team.id} />
      {!steps && typeof query.story === "string" && !open && (
        <p className="notice" role="status">
          That story is not in this team&apos;s timeline: its tasks may have been removed with their agent. Here are the
          team&apos;s stories.
        </p>
      )}
      <nav className="timeline-views segmented" aria-label="Timeline view">
        <Link href={viewHref("stories")} className="segmented-option" aria-current={steps ? undefined : "page"}>
          Stories
        </Link>
        <Link href={viewHref("steps")} className="segmented-option" aria-current={steps ? "page" : undefined}>
          Every step
        </Link>
      </nav>
      <form method="get" className="timeline-filter" aria-label="Filter the timeline">
        {steps && <input type="hidden" name="view" value="steps" />}
        <label className="field">
          Agent
          <select name="agent" defaultValue={agentId ?? ""}>
            <option value="">Every agent</option>
            {agents.map((agent) => (
              <option key={agent.id} value={agent.id}>
                {agent.name} ({agent.role})
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          Kind
          <select name="kind" defaultValue={kind ?? ""}>
            <option value="">Everything</option>
            {timelineKinds.map((known) => (
              <option key={known} value={known}>
                {KIND_NAMES[known]}
              </option>
            ))}
          </select>
        </label>
        <div className="timeline-filter-actions">
          <button type="submit" className="button">
            Show
          </button>
          {(agentId || kind) && (
            <Link
              href={steps ? `/teams/${team.id}/timeline?view=steps` : `/teams/${team.id}/timeline`}
              className="button button-quiet"
            >
              Clear
            </Link>
          )}
        </div>
      </form>
      {first && (
        <TeamTimeline
          // A new filter starts the list afresh.
          key={`${agentId ?? ""}:${kind ?? ""}`}
          teamId={team.id}
          initial={first}
          filter={{ agentId, kind }}
          agentIds={agents.map((agent) => agent.id)}
        />
      )}
      {stories && (
        <TeamStories
          key={`${agentId ?? ""}:${kind ?? ""}:${open?.id ?? ""}`}
          teamId={team.id}
          initial={stories}
          filter={{ agentId, kind }}
          agentIds={agents.map((agent) => agent.id)}
          open={open}
        />
      )}
    </div>
  );
}
