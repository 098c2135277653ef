import { eq, sql } from "drizzle-orm";
import type { Db } from "@/lib/db/client";
import { appendMessage } from "@/lib/db/queries/messages";
import { listTasksByAgent } from "@/lib/db/queries/tasks";
import { endSession, getLatestEndedSession, queuedWorkOf } from "@/lib/db/queries/work-sessions";
import { agents, type Agent } from "@/lib/db/schema";
import { raiseAlert } from "./alerts";
import type { EngineDeps } from "./engine-config";
import { STOPPED_BY_PERSON, STOPPED_MARKER } from "./formats";
import { cancelTrees, endTask } from "./tasks";
import { closeOpenToolCalls, logAwaitsReply } from "./work-log";

/** How a session ends when it did not simply run out of work (that is finishSessionIfIdle). */
export type SessionEnding =
  /** The person pressed Stop: what the session was working on is cancelled. */
  | { status: "stopped" }
  /** A model error, the step limit or a budget: what it was working on failed, and the person gets an alert. */
  | { status: "failed"; reason: string; marker: string }
  /** The worker is shutting down: another worker continues from the stored log. */
  | { status: "interrupted"; reason: string };

/** `focus`: the task the session was on when it ended (see work-loop.ts), or null. */
export type EndingSession = { sessionId: string; agent: Agent; conversationId: string; steps: number; focus: string | null };

/**
 * Ends a work session in one transaction, the one place that does: the log gets its
 * marker (and every open tool call a result), the tasks it was working on end (each
 * lead told, each failure alerted: see endTask), the session row is closed, and work
 * that arrived meanwhile — a task, queued input — gets a new session at once. A crash
 * leaves all of it or none: the next session never finds a marker without its tasks
 * settled.
 */
export async function endWorkSession(deps: EngineDeps, session: EndingSession, ending: SessionEnding): Promise<void> {
  const { agent, conversationId } = session;
  await deps.db.transaction(async (tx) => {
    // The lock a session is claimed and finished under: a wake-up cannot slip between the check below and the end.
    const [locked] = await tx.select({ wakeRequestedAt: agents.wakeRequestedAt }).from(agents).where(eq(agents.id, agent.id)).for("update");
    // The agent was removed under the session: its log, tasks and session row went with it.
    if (!locked) return;
    if (ending.status !== "interrupted") {
      const marker = ending.status === "stopped" ? STOPPED_MARKER : ending.marker;
      await closeOpenToolCalls(tx, conversationId, marker);
      await appendMessage(tx, conversationId, { role: "assistant", content: marker });
      await endOpenWork(deps, tx, session, ending);
    }
    const error = ending.status === "stopped" ? STOPPED_BY_PERSON : ending.reason;
    await endSession(tx, session.sessionId, ending.status, { steps: session.steps, error });
    // Every end looks for work that is waiting, as a normal end does (finishSessionIfIdle).
    if (ending.status === "interrupted" || locked.wakeRequestedAt || (await hasWaitingWork(tx, agent.id))) {
      await deps.jobs.wakeAgent(tx, agent.id);
    }
  });
}

async function endOpenWork(deps: EngineDeps, tx: Db, session: EndingSession, ending: Exclude<SessionEnding, { status: "interrupted" }>): Promise<void> {
  const { agent } = session;
  if (ending.status === "stopped") {
    const open = await listTasksByAgent(tx, agent.id, ["in_progress", "waiting_input"]);
    await cancelTrees(
      tx,
      deps.jobs,
      open.map((task) => task.id),
      STOPPED_BY_PERSON,
      { quietFor: agent.id },
    );
    return;
  }
  // What failed is the turn, so the task it served fails: the agent's other tasks (waiting
  // for subordinates or an answer) are not what broke, and their input starts a new session.
  const failed = session.focus ? await endTask(tx, deps.jobs, session.focus, { status: "failed", reason: ending.reason }) : null;
  if (!failed) {
    // Nothing of the person's failed (a webhook, a report), but the team stopped working: they hear so once.
    await raiseAlert(tx, deps.jobs, {
      teamId: agent.teamId,
      agentId: agent.id,
      key: `session-failed:${session.sessionId}`,
      title: `${agent.name} stopped working`,
      summary: ending.reason,
      content: `**${agent.name}**'s work session stopped.\n\n${ending.reason}\n\nThe agent's work log shows what happened up to that point.`,
    });
  }
}

/** Work given to the agent and not taken up yet (queuedWorkOf), when its team is active. */
async function hasWaitingWork(db: Db, agentId: string): Promise<boolean> {
  const [row] = await db.execute<{ waiting: boolean }>(sql`
    select exists (
      select 1 from agents a join teams t on t.id = a.team_id
       where a.id = ${agentId} and t.status = 'active' and ${queuedWorkOf(sql`a.id`)}
    ) as waiting`);
  return row?.waiting === true;
}

/**
 * A Stop that no session ended: the agent had no session running, or its worker died
 * before the stop reached it. A log left waiting for a reply gets the "(stopped by the person)"
 * marker (and its open tool calls a result), so nothing takes that turn up again.
 */
export async function markStopped(tx: Db, conversationId: string): Promise<void> {
  if (!(await logAwaitsReply(tx, conversationId))) return;
  await closeOpenToolCalls(tx, conversationId, STOPPED_MARKER);
  await appendMessage(tx, conversationId, { role: "assistant", content: STOPPED_MARKER });
}

/**
 * At the start of a session: when the previous one was asked to stop but ended without
 * writing it (its worker died first), the Stop is honoured now, before any work is taken.
 */
export async function honourUnfinishedStop(db: Db, agentId: string, conversationId: string, sessionId: string): Promise<void> {
  const previous = await getLatestEndedSession(db, agentId, sessionId);
  if (previous?.stopRequestedAt && previous.status !== "stopped") await markStopped(db, conversationId);
}
