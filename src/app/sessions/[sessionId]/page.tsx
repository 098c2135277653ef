import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { CachedInputStat } from "@/components/cached-input-stat";
import { LiveRefresh } from "@/components/live-events";
import { ErrorText, ProblemText } from "@/components/plain-words";
import { formatDuration, SessionWaterfall } from "@/components/session-waterfall";
import { LocalTime, StatusBadge } from "@/components/ui";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { CadreError } from "@/lib/errors";
import { isUuid } from "@/lib/util/ids";
import { plural } from "@/lib/util/plural";
import { describeMarker, describeProblem } from "@/lib/views/plain-words";
import { getSessionTrace, type SessionTrace } from "@/lib/views/session-trace";

export const dynamic = "force-dynamic";
type Props = { params: Promise<{ sessionId: string }> };

async function findTrace(sessionId: string): Promise<SessionTrace | null> {
  if (!isUuid(sessionId)) return null;
  try {
    return await getSessionTrace(db(), sessionId);
  } catch (error) {
    if (error instanceof CadreError && error.kind === "not_found") return null;
    throw error;
  }
}

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  await requirePageSession();
  const { sessionId } = await params;
  const trace = await findTrace(sessionId);
  return { title: trace ? `${trace.agent.name} — session` : "Session" };
}

const number = (value: number) => value.toLocaleString("en-US");

export default async function SessionPage({ params }: Props) {
  await requirePageSession();
  const { sessionId } = await params;
  const trace = await findTrace(sessionId);
  if (!trace) notFound();
  const { session, agent, totals } = trace;
  const running = session.status === "running";

  return (
    <div className="page">
      {running && <LiveRefresh tables={["messages", "work_sessions"]} agentIds={[agent.id]} mode="background" />}
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/teams">Teams</Link> <span aria-hidden="true">/</span>{" "}
        <Link href={`/teams/${agent.teamId}`}>{agent.teamName}</Link> <span aria-hidden="true">/</span>{" "}
        <Link href={`/agents/${agent.id}`}>{agent.name}</Link> <span aria-hidden="true">/</span> <span>Session</span>
      </nav>
      <header className="page-header">
        <div>
          <h1>
            Work session of {agent.name} <StatusBadge status={session.status} />
          </h1>
          <p className="lede">
            Started <LocalTime value={session.startedAt} />
            {session.endedAt ? (
              <>, ran {formatDuration(trace.duration)}</>
            ) : (
              <>, running for {formatDuration(trace.duration)}</>
            )}{" "}
            · {plural(session.steps, "step")} · worker {session.worker}
          </p>
        </div>
        <div className="header-actions">
          <Link href={`/teams/${agent.teamId}/timeline?agent=${agent.id}`} className="button">
            Timeline
          </Link>
        </div>
      </header>
      {(trace.marker || session.error) && (
        <div
          className={
            session.status === "failed" || session.status === "interrupted" ? "notice notice-danger" : "notice"
          }
          role="status"
        >
          {/* The marker the session left says how it ended; the session's error, when it adds to it, says why. */}
          {trace.marker && <ProblemText problem={describeMarker(trace.marker)} />}
          {session.error &&
            (!trace.marker ||
              describeMarker(trace.marker).summary !== describeProblem(session.error, { retried: false }).summary) && (
              <ErrorText error={session.error} retried={session.status === "interrupted"} />
            )}
        </div>
      )}

      <section aria-labelledby="outcome-heading" className="section">
        <h2 id="outcome-heading">Outcome</h2>
        <dl className="stats">
          <div>
            <dt>Model calls</dt>
            <dd>{number(totals.modelCalls)}</dd>
          </div>
          <div>
            <dt>Input tokens</dt>
            <dd>{number(totals.inputTokens)}</dd>
          </div>
          <div>
            <dt>Output tokens</dt>
            <dd>{number(totals.outputTokens)}</dd>
          </div>
          <CachedInputStat figures={totals} />
          <div>
            <dt>Model time</dt>
            <dd>{formatDuration(totals.modelMs)}</dd>
          </div>
          <div>
            <dt>Tool calls</dt>
            <dd>
              {number(totals.toolCalls)}
              {totals.failedToolCalls > 0 && (
                <span className="wf-failed-count"> ({totals.failedToolCalls} failed)</span>
              )}
            </dd>
          </div>
        </dl>
      </section>

      <section aria-labelledby="trace-heading" className="section">
        <h2 id="trace-heading">Trace</h2>
        {trace.truncated && (
          <p className="hint">
            This session wrote more than a trace shows: only its first 2,000 log rows are laid out.
          </p>
        )}
        <SessionWaterfall trace={trace} />
      </section>
    </div>
  );
}
