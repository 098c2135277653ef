import type { Metadata } from "next";
import Link from "next/link";
import { AgentActivityLine } from "@/components/agent-activity";
import { activityState } from "@/lib/views/activity";
import { notFound } from "next/navigation";
import {
  AssignTaskForm,
  CancelTaskButton,
  RetryTaskButton,
  StopSessionButton,
  TaskTree,
} from "@/components/agent-controls";
import { CachedInputStat } from "@/components/cached-input-stat";
import { LiveRefresh } from "@/components/live-events";
import { Markdown } from "@/components/markdown";
import { ErrorText, PlainMarkdown } from "@/components/plain-words";
import { EmptyState, LocalTime, StatusBadge } from "@/components/ui";
import { WorkLog } from "@/components/work-log";
import { toWire } from "@/lib/client/api-client";
import { findAgent } from "@/app/found";
import { requirePageSession } from "@/lib/auth/auth";
import { getTeamActivity } from "@/lib/views/team-activity";
import { db } from "@/lib/db/client";
import { listAgentApprovals } from "@/lib/db/queries/approvals";
import { getConversationByMode } from "@/lib/db/queries/conversations";
import { listTasksForAgentPage, listTasksWithSubtasks } from "@/lib/db/queries/tasks";
import { isOpenTask } from "@/lib/db/task-statuses";
import { getTeam } from "@/lib/db/queries/teams";
import { getAgentUsageByModel, getUsageTotals } from "@/lib/db/queries/usage";
import { formatUsd } from "@/lib/usage/format";
import { loadPriceTable, spendOf } from "@/lib/usage/spend";
import { listSessions } from "@/lib/db/queries/work-sessions";
import { isUuid } from "@/lib/util/ids";
import { describeAgentText, taskGiver, type Named } from "@/lib/views/plain-words";
import { CadreError } from "@/lib/errors";
import { getWorkLogPage } from "@/lib/views/work-log-page";

export const dynamic = "force-dynamic";
type Props = {
  params: Promise<{ agentId: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
};

/** Ended tasks shown beside the open ones: the page stays fast however long the agent has worked. */
const ENDED_TASKS_LIMIT = 50;

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  await requirePageSession();
  const { agentId } = await params;
  const agent = await findAgent(agentId);
  return { title: agent?.name ?? "Agent" };
}

const number = (value: number) => value.toLocaleString("en-US");

/** The log's page around the linked message, highlighted; the newest page when it is not in the log. */
async function workLogAround(agentId: string, around: string | undefined) {
  if (around) {
    try {
      return { page: await getWorkLogPage(db(), agentId, { around }), highlight: around };
    } catch (error) {
      if (!(error instanceof CadreError && error.code === "not_found:message")) throw error;
    }
  }
  return { page: await getWorkLogPage(db(), agentId), highlight: undefined };
}

export default async function AgentPage({ params, searchParams }: Props) {
  await requirePageSession();
  const { agentId } = await params;
  // ?message=<id>: a link to one message of the work log (a knowledge source) opens the log there.
  const linked = (await searchParams).message;
  const around = typeof linked === "string" && isUuid(linked) ? linked : undefined;
  const agent = await findAgent(agentId);
  if (!agent) notFound();
  const [team, { tasks, endedCount }, sessions, usage, background, approvals, usageByModel, prices, log, teamActivity] =
    await Promise.all([
      getTeam(db(), agent.teamId),
      listTasksForAgentPage(db(), agent.id, ENDED_TASKS_LIMIT),
      listSessions(db(), agent.id, 10),
      getUsageTotals(db(), agent.id),
      getConversationByMode(db(), agent.id, "background"),
      listAgentApprovals(db(), agent.id),
      getAgentUsageByModel(db(), agent.id),
      loadPriceTable(db()),
      workLogAround(agent.id, around),
      getTeamActivity(db(), [agent.teamId]).then((teams) => teams.get(agent.teamId) ?? []),
    ]);
  const activity = teamActivity.find((each) => each.agentId === agent.id);
  const subordinateIds = teamActivity.filter((each) => each.parentAgentId === agent.id).map((each) => each.agentId);
  const spend = spendOf(usageByModel, prices);
  const delegating = await listTasksWithSubtasks(
    db(),
    tasks.map((task) => task.id),
  );
  const running = sessions.find((session) => session.status === "running");
  // Ids an agent wrote or was given read as names: its teammates and its tasks.
  const names: Record<string, Named> = Object.fromEntries([
    ...teamActivity.map((each): [string, Named] => [
      each.agentId,
      { name: each.name, href: `/agents/${each.agentId}` },
    ]),
    ...tasks.map((task): [string, Named] => [
      task.id,
      { name: `“${task.title}”`, href: `/agents/${agent.id}#task-${task.id}` },
    ]),
  ]);

  return (
    <div className="page">
      <LiveRefresh
        tables={["tasks", "work_sessions", "messages", "agents", "approvals"]}
        agentIds={[agent.id]}
        mode="background"
      />
      {subordinateIds.length > 0 && <LiveRefresh tables={["work_sessions"]} agentIds={subordinateIds} />}
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/teams">Teams</Link> <span aria-hidden="true">/</span>{" "}
        {team && <Link href={`/teams/${team.id}`}>{team.name}</Link>} <span aria-hidden="true">/</span>{" "}
        <span>{agent.name}</span>
      </nav>
      <header className="page-header">
        <div>
          <h1>
            {agent.name} <span className="pill">{agent.role}</span>
          </h1>
          {activity && activityState(activity) !== "idle" ? (
            <AgentActivityLine activity={activity} />
          ) : (
            <p className="lede">Idle: no work session is running.</p>
          )}
        </div>
        <div className="header-actions">
          {running && !running.stopRequestedAt && <StopSessionButton agentId={agent.id} />}
          <Link href={`/teams/${agent.teamId}/timeline?agent=${agent.id}`} className="button">
            Timeline
          </Link>
          <Link href={`/agents/${agent.id}/chat`} className="button" aria-label={`Chat with ${agent.name}`}>
            Chat
          </Link>
        </div>
      </header>

      <section aria-labelledby="usage-heading" className="section">
        <h2 id="usage-heading">Usage</h2>
        <dl className="stats">
          <div>
            <dt>Model calls</dt>
            <dd>{number(usage.calls)}</dd>
          </div>
          <div>
            <dt>Input tokens</dt>
            <dd>{number(usage.inputTokens)}</dd>
          </div>
          <div>
            <dt>Output tokens</dt>
            <dd>{number(usage.outputTokens)}</dd>
          </div>
          <CachedInputStat figures={spend} />
          <div>
            <dt>Cost</dt>
            <dd>
              {usage.calls > 0 && spend.unpricedModels.length === usageByModel.length ? "—" : formatUsd(spend.costUsd)}
            </dd>
          </div>
          <div>
            <dt>Model time</dt>
            <dd>{(usage.durationMs / 1000).toFixed(1)} s</dd>
          </div>
        </dl>
        {spend.unpricedModels.length > 0 && (
          <p className="hint">
            No price for {spend.unpricedModels.join(", ")}: {spend.unpricedModels.length === 1 ? "its" : "their"} calls
            count as tokens only. <Link href="/usage#prices">Set a price</Link>
          </p>
        )}
        {spend.estimatedCalls > 0 && (
          <p className="hint">
            {number(spend.estimatedCalls)} of these calls {spend.estimatedCalls === 1 ? "was" : "were"} not counted by
            the provider (cut off, or a server that sends no usage figures):
            {spend.estimatedCalls === 1 ? " its" : " their"} tokens are estimated from what was sent and received.
          </p>
        )}
      </section>

      <section aria-labelledby="tasks-heading" className="section">
        <h2 id="tasks-heading">Tasks</h2>
        {endedCount > ENDED_TASKS_LIMIT && (
          <p className="hint">
            All open tasks and the latest {ENDED_TASKS_LIMIT} of {number(endedCount)} ended ones.
          </p>
        )}
        {tasks.length === 0 ? (
          <EmptyState title="No tasks">
            <p>
              {agent.role === "lead"
                ? "Ask the lead for research in the chat and it creates one."
                : "The lead delegates tasks to this agent."}
            </p>
          </EmptyState>
        ) : (
          <ul className="task-list">
            {tasks.map((task) => (
              <li key={task.id} id={`task-${task.id}`} className="task" data-status={task.status}>
                <div className="task-head">
                  <StatusBadge status={task.status} />
                  <span className="task-title">{task.title}</span>
                  <span className="meta">
                    from {taskGiver(task.source)} · <LocalTime value={task.createdAt.toISOString()} relative />
                  </span>
                  {isOpenTask(task.status) && <CancelTaskButton taskId={task.id} title={task.title} />}
                  {(task.status === "failed" || task.status === "cancelled") && (
                    <RetryTaskButton taskId={task.id} title={task.title} />
                  )}
                </div>
                {task.description && task.description !== task.title && (
                  <details className="task-detail">
                    <summary>Description</summary>
                    <PlainMarkdown text={task.description} names={names} />
                  </details>
                )}
                {task.result && (
                  <div className="task-result">
                    <div className="tool-label">Result</div>
                    {task.status === "failed" || task.status === "cancelled" ? (
                      <ErrorText error={task.result} retried={false} />
                    ) : (
                      <Markdown text={describeAgentText(task.result, names)} />
                    )}
                  </div>
                )}
                {delegating.has(task.id) && <TaskTree taskId={task.id} title={task.title} />}
              </li>
            ))}
          </ul>
        )}
        <AssignTaskForm agentId={agent.id} agentName={agent.name} />
      </section>

      <section aria-labelledby="sessions-heading" className="section">
        <h2 id="sessions-heading">Recent sessions</h2>
        {sessions.length === 0 ? (
          <p className="hint">No work sessions yet.</p>
        ) : (
          <ul className="session-list">
            {sessions.map((session) => (
              <li key={session.id}>
                <StatusBadge status={session.status} /> <LocalTime value={session.startedAt.toISOString()} /> ·{" "}
                {session.steps} step
                {session.steps === 1 ? "" : "s"} ·{" "}
                <Link href={`/sessions/${session.id}`} className="meta-link">
                  Trace
                </Link>
                {session.error && (
                  <ErrorText
                    error={session.error}
                    retried={session.status === "interrupted"}
                    className="session-error"
                  />
                )}
              </li>
            ))}
          </ul>
        )}
      </section>

      <section aria-labelledby="log-heading" className="section" id="work-log">
        <h2 id="log-heading">Work log</h2>
        <WorkLog
          agentId={agent.id}
          page={log.page}
          agentName={agent.name}
          names={names}
          highlight={log.highlight}
          approvals={approvals.filter((approval) => approval.conversationId === background?.id).map(toWire)}
        />
      </section>
    </div>
  );
}
