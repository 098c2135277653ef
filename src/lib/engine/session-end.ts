import "server-only";
import { lockAgentWake } from "@/lib/db/queries/agents";
import type { Db } from "@/lib/db/client";
import { appendMessage } from "@/lib/db/queries/messages";
import { getBackgroundConversation } from "@/lib/db/queries/conversations";
import { getTask, listTasksByAgent } from "@/lib/db/queries/tasks";
import {
  endSession,
  keepWakeRequested,
  hasWaitingWork,
  hasWorkToResume,
  getCancelledTaskOfSession,
  getRunningSession,
  recordReapedAsStopped,
} from "@/lib/db/queries/work-sessions";
import type { Agent, WorkSession } from "@/lib/db/schema";
import { activeTaskStatuses, openTaskStatuses } from "@/lib/db/task-statuses";
import { alertModelWithoutTools, alertSessionFailed, alertTeamOverBudget } from "@/lib/domain/alerts";
import { teamBudgets, type TeamBudgetFields } from "@/lib/domain/budgets";
import type { EngineDeps } from "@/lib/core/engine-config";
import { CANCELLED_BY_PERSON, STOPPED_BY_PERSON, STOPPED_MARKER, taskCancelledMarker } from "@/lib/core/formats";
import { cancelTrees, failTask } from "@/lib/domain/task-lifecycle";
import { closeOpenToolCalls, logAwaitsReply } from "./work-log";

/** How a session ends when it did not simply run out of work (that is finishSessionIfIdle). */
export type SessionEnding =
  /**
   * Asked to stop (see stopOf): by the person's Stop — what the session was working on is
   * cancelled — or because its last open task was cancelled, which left nothing to cancel.
   */
  | { status: "stopped" }
  /**
   * A model error, the step limit or a budget: what it was working on failed, and the person gets
   * an alert. `modelWithoutTools`: the model cannot call tools at all, so all of the agent's open
   * work fails with the one reason, and the person gets one alert for the team and model.
   */
  | { status: "failed"; reason: string; marker: string; modelWithoutTools?: string }
  /** The worker is shutting down: another worker continues from the stored log. */
  | { status: "interrupted"; reason: string }
  /**
   * The team's daily budget ran out: nothing fails, what the session was on waits as it is
   * (see waitForBudget). `marker`: the log's, when a turn was cut; null when the session found
   * the team over budget before taking any work.
   */
  | { status: "over-budget"; reason: string; marker: string | null; team: TeamBudgetFields };

/** `focus`: the task the session was on when it ended (see work-loop.ts), or null. */
export type EndingSession = {
  sessionId: string;
  agent: Agent;
  conversationId: string;
  steps: number;
  focus: string | null;
};

/**
 * Ends a work session in one transaction, the one place that does: the log gets its
 * marker (and every open tool call a result), the tasks it was working on end (each
 * lead told, each failure alerted: see task-lifecycle.ts), the session row is closed, and work
 * that arrived meanwhile — a task, queued input — gets a new session at once. A crash
 * leaves all of it or none: the next session never finds a marker without its tasks
 * settled. A budget stop is the exception: it ends nothing (waitForBudget).
 */
export async function endWorkSession(deps: EngineDeps, session: EndingSession, ending: SessionEnding): Promise<void> {
  const { agent, conversationId } = session;
  await deps.db.transaction(async (tx) => {
    // The lock a session is claimed and finished under: a wake-up cannot slip between the check below and the end.
    const locked = await lockAgentWake(tx, agent.id);
    // The agent was removed under the session: its log, tasks and session row went with it.
    if (!locked) return;
    if (ending.status === "over-budget")
      return waitForBudget(deps, tx, session, ending, locked.wakeRequestedAt !== null);
    const stop = ending.status === "stopped" ? await stopOf(tx, session.sessionId) : null;
    if (ending.status !== "interrupted") {
      const marker = ending.status === "stopped" ? stop!.marker : ending.marker;
      await closeOpenToolCalls(tx, conversationId, marker);
      await appendMessage(tx, conversationId, { role: "assistant", content: marker });
      // A cancel already ended its task; anything open now was given after it, and goes on.
      if (!stop || stop.byPerson) await endOpenWork(deps, tx, session, ending);
    }
    const error = ending.status === "stopped" ? stop!.error : ending.reason;
    await endSession(tx, session.sessionId, ending.status, { steps: session.steps, error });
    // Every end looks for work that is waiting, as a normal end does (finishSessionIfIdle).
    if (ending.status === "interrupted" || locked.wakeRequestedAt || (await hasWaitingWork(tx, agent.id))) {
      await deps.jobs.wakeAgent(tx, agent.id);
    }
  });
}

/**
 * A budget stop fails nothing (the budget is no fault of the task's): the task in focus stays
 * in progress — the next session resumes it, as after a crash — and pending tasks and queued
 * input stay queued. Waking the agent again now would only find the budget spent, and a wake
 * at every end would spin; so the agent keeps its wake flag without a nudge: the durable "work
 * waits here" that the worker's backlog drain acts on once the team is under its budget again
 * (the next UTC day: the drain skips teams over budget), and that a budget change acts on at
 * once (PATCH /api/teams/:id wakes the team's agents with work). Someone who asked for the
 * agent while this session ran (work given, the budget raised) gets a session to look again;
 * if the team is still over budget, that one ends at once the same way, with no nudge of its
 * own. The person hears it once per team, UTC day and budget: an alert, not one per task.
 */
async function waitForBudget(
  deps: EngineDeps,
  tx: Db,
  session: EndingSession,
  ending: Extract<SessionEnding, { status: "over-budget" }>,
  askedMeanwhile: boolean,
): Promise<void> {
  const { agent, conversationId } = session;
  if (ending.marker) {
    await closeOpenToolCalls(tx, conversationId, ending.marker);
    await appendMessage(tx, conversationId, { role: "assistant", content: ending.marker });
  }
  await endSession(tx, session.sessionId, "stopped", { steps: session.steps, error: ending.reason });
  const waiting = await hasWorkToResume(tx, agent.id);
  if (askedMeanwhile) await deps.jobs.wakeAgent(tx, agent.id);
  else if (waiting) await keepWakeRequested(tx, agent.id);
  if (!waiting && !ending.marker) return;
  await alertTeamOverBudget(tx, deps.jobs, agent, ending.team, teamBudgets(ending.team, deps.config), ending.reason);
}

async function endOpenWork(
  deps: EngineDeps,
  tx: Db,
  session: EndingSession,
  ending: Extract<SessionEnding, { status: "stopped" | "failed" }>,
): Promise<void> {
  const { agent } = session;
  if (ending.status === "stopped") {
    const open = await listTasksByAgent(tx, agent.id, activeTaskStatuses);
    await cancelTrees(
      tx,
      deps.jobs,
      open.map((task) => task.id),
      STOPPED_BY_PERSON,
      { quietFor: agent.id },
    );
    return;
  }
  if (ending.modelWithoutTools) {
    // Not the turn but the model failed: no task of the agent's can be done with it, so each ends
    // now with the reason, rather than one session after another asking the server to refuse again.
    await alertModelWithoutTools(tx, deps.jobs, agent, ending.modelWithoutTools, ending.reason);
    const open = await listTasksByAgent(tx, agent.id, openTaskStatuses);
    for (const task of open) await failTask(tx, deps.jobs, task.id, ending.reason, { alerted: true });
    return;
  }
  // What failed is the turn, so the task it served fails: the agent's other tasks (waiting
  // for subordinates or an answer) are not what broke, and their input starts a new session.
  const failed = session.focus ? await failTask(tx, deps.jobs, session.focus, ending.reason) : null;
  if (!failed) {
    // Nothing of the person's failed (a webhook, a report), but the team stopped working: they hear so once.
    await alertSessionFailed(tx, deps.jobs, agent, session.sessionId, ending.reason);
  }
}

/**
 * What a requested stop says (requestSessionStop): the person's Stop, or the cancelling of
 * the agent's last open task, named with its title and reason so the log does not read as a
 * Stop the person never pressed.
 */
async function stopOf(db: Db, sessionId: string): Promise<{ marker: string; error: string; byPerson: boolean }> {
  return stopOfTask(db, await getCancelledTaskOfSession(db, sessionId));
}

async function stopOfTask(
  db: Db,
  cancelledTaskId: string | null,
): Promise<{ marker: string; error: string; byPerson: boolean }> {
  const task = cancelledTaskId ? await getTask(db, cancelledTaskId) : null;
  if (!task) return { marker: STOPPED_MARKER, error: STOPPED_BY_PERSON, byPerson: true };
  const marker = taskCancelledMarker(task.title, task.result ?? CANCELLED_BY_PERSON);
  return { marker, error: marker, byPerson: false };
}

/**
 * A Stop that no session ended: the agent had no session running, or its worker died
 * before the stop reached it. A log left waiting for a reply gets the "(stopped by the person)"
 * marker (and its open tool calls a result), so nothing takes that turn up again.
 */
export async function markStopped(tx: Db, conversationId: string, marker = STOPPED_MARKER): Promise<void> {
  if (!(await logAwaitsReply(tx, conversationId))) return;
  await closeOpenToolCalls(tx, conversationId, marker);
  await appendMessage(tx, conversationId, { role: "assistant", content: marker });
}

/**
 * At the start of a session, given the agent's latest ended session (getLatestEndedSession):
 * when the previous one was asked to stop but ended without
 * writing it (its worker died first), the Stop is honoured now, before any work is taken.
 */
export async function honourUnfinishedStop(
  db: Db,
  conversationId: string,
  previous: WorkSession | null,
): Promise<void> {
  if (previous?.stopRequestedAt && previous.status !== "stopped")
    await markStopped(db, conversationId, (await stopOfTask(db, previous.cancelledTaskId)).marker);
}

/**
 * A session whose worker died after the person's Stop was recorded and before the session
 * ended it: the reaper found it. It ends as a Stop ends, not as a crash: "stopped", and the
 * Stop's marker in the log (its open calls closed with it), under the agent's lock — unless a
 * new session of the agent's runs already (it honoured the Stop at its start, see
 * honourUnfinishedStop). The Stop itself cancelled the work when it was pressed.
 */
export async function endReapedStop(db: Db, reaped: { agentId: string; sessionId: string }): Promise<void> {
  await db.transaction(async (tx) => {
    if (!(await lockAgentWake(tx, reaped.agentId)) || (await getRunningSession(tx, reaped.agentId))) return;
    const stop = await stopOf(tx, reaped.sessionId);
    if (!(await recordReapedAsStopped(tx, reaped.sessionId, stop.error))) return;
    const conversation = await getBackgroundConversation(tx, reaped.agentId);
    await closeOpenToolCalls(tx, conversation.id, stop.marker);
    await appendMessage(tx, conversation.id, { role: "assistant", content: stop.marker });
  });
}
