import "server-only";
import { and, desc, eq, isNull, sql, type SQL } from "drizzle-orm";
import { SESSION_STOP_CHANNEL } from "@/lib/jobs/queues";
import { decisionWaitingFor } from "./approvals";
import { statement } from "./prepared";
import { taskStatusIn } from "./tasks";
import { workerHoldsLock } from "./workers";
import type { Db } from "../client";
import { notFound } from "@/lib/errors";
import {
  agents,
  conversations,
  teams,
  workSessions,
  type Agent,
  type Conversation,
  type Message,
  type Team,
  type WorkSession,
  type WorkSessionStatus,
} from "../schema";
import { getBackgroundConversation } from "./conversations";
import { getBackgroundContext, getConversationContext } from "./messages";

/** A session whose worker has not refreshed its heartbeat for this long is taken to be dead. */
const DEFAULT_STALE_SESSION_SECONDS = 15;

/**
 * Starts a work session for the agent unless one is running. Runs under a lock on
 * the agent row, the same lock `finishSessionIfIdle` takes, so a wake-up can never
 * fall between "a session is running" and "that session has ended".
 *
 * A running session whose heartbeat went stale belonged to a dead worker: it is
 * marked interrupted and this call takes over. Clears the wake flag: the new
 * session is about to look at all the agent's work.
 */
export async function claimSession(
  db: Db,
  agentId: string,
  worker: string,
  staleAfterSeconds = DEFAULT_STALE_SESSION_SECONDS,
): Promise<WorkSession | null> {
  // One round trip: the function (migration 0014) is the transaction this was, statement for statement.
  const [row] = await claimStatement(db, { agentId, worker, staleAfterSeconds });
  return row ? toWorkSession(row) : null;
}

type WorkSessionRow = {
  id: string;
  agent_id: string;
  status: WorkSessionStatus;
  worker: string;
  steps: number;
  error: string | null;
  started_at: Date;
  heartbeat_at: Date;
  stop_requested_at: Date | null;
  ended_at: Date | null;
  task_id: string | null;
  cancelled_task_id: string | null;
};

const claimStatement = statement<WorkSessionRow, { agentId: string; worker: string; staleAfterSeconds: number }>(
  () =>
    sql`select * from cadre_claim_session(${sql.placeholder("agentId")}::uuid, ${sql.placeholder("worker")}, ${sql.placeholder("staleAfterSeconds")}::float8)`,
);

function toWorkSession(row: WorkSessionRow): WorkSession {
  return {
    id: row.id,
    agentId: row.agent_id,
    status: row.status,
    worker: row.worker,
    steps: row.steps,
    error: row.error,
    startedAt: row.started_at,
    heartbeatAt: row.heartbeat_at,
    stopRequestedAt: row.stop_requested_at,
    endedAt: row.ended_at,
    taskId: row.task_id,
    cancelledTaskId: row.cancelled_task_id,
  };
}

/** The task a session works on now (see SessionState.storyTask in work-loop.ts). */
export async function setSessionTask(db: Db, sessionId: string, taskId: string | null): Promise<void> {
  await db.update(workSessions).set({ taskId }).where(eq(workSessions.id, sessionId));
}

export type Heartbeat = { alive: boolean; stopRequested: boolean };

/** Refreshes the lease; `alive: false` means another worker has taken the session over. */
export async function heartbeatSession(db: Db, sessionId: string, steps?: number): Promise<Heartbeat> {
  const [row] = await db
    .update(workSessions)
    .set(steps === undefined ? { heartbeatAt: sql`now()` } : { heartbeatAt: sql`now()`, steps })
    .where(and(eq(workSessions.id, sessionId), eq(workSessions.status, "running")))
    .returning({ stopRequestedAt: workSessions.stopRequestedAt });
  return { alive: row !== undefined, stopRequested: row?.stopRequestedAt != null };
}

/**
 * Ends the session if nothing asked for the agent since it last looked; otherwise
 * clears the flag and returns false so the session looks again.
 */
export async function finishSessionIfIdle(db: Db, sessionId: string, agentId: string, steps: number): Promise<boolean> {
  return db.transaction(async (tx) => {
    const [agent] = await tx
      .select({ wakeRequestedAt: agents.wakeRequestedAt })
      .from(agents)
      .where(eq(agents.id, agentId))
      .for("update");
    if (agent?.wakeRequestedAt) {
      await tx.update(agents).set({ wakeRequestedAt: null }).where(eq(agents.id, agentId));
      return false;
    }
    // A Stop that committed while this waited for the agent's lock (it holds it while it cancels)
    // is not overruled by a quiet end: the session goes round once more, sees it and ends stopped.
    const ended = await tx
      .update(workSessions)
      .set({ status: "completed", steps, endedAt: sql`now()` })
      .where(
        and(eq(workSessions.id, sessionId), eq(workSessions.status, "running"), isNull(workSessions.stopRequestedAt)),
      )
      .returning({ id: workSessions.id });
    if (ended.length > 0) return true;
    return !(await isSessionStopRequested(tx, sessionId));
  });
}

export async function endSession(
  db: Db,
  sessionId: string,
  status: Exclude<WorkSessionStatus, "running">,
  details: { steps: number; error?: string | null },
): Promise<void> {
  await db
    .update(workSessions)
    .set({ status, steps: details.steps, error: details.error ?? null, endedAt: sql`now()` })
    .where(and(eq(workSessions.id, sessionId), eq(workSessions.status, "running")));
}

export async function getWorkSession(db: Db, sessionId: string): Promise<WorkSession | null> {
  const [session] = await db.select().from(workSessions).where(eq(workSessions.id, sessionId));
  return session ?? null;
}

export async function isSessionStopRequested(db: Db, sessionId: string): Promise<boolean> {
  const [row] = await db
    .select({ stopRequestedAt: workSessions.stopRequestedAt })
    .from(workSessions)
    .where(eq(workSessions.id, sessionId));
  return row?.stopRequestedAt != null;
}

/** The agent's most recent session other than `exceptId` that is no longer running. */
async function getLatestEndedSession(db: Db, agentId: string, exceptId: string): Promise<WorkSession | null> {
  const [session] = await db
    .select()
    .from(workSessions)
    .where(
      and(
        eq(workSessions.agentId, agentId),
        sql`${workSessions.status} <> 'running'`,
        sql`${workSessions.id} <> ${exceptId}`,
      ),
    )
    .orderBy(desc(workSessions.startedAt))
    .limit(1);
  return session ?? null;
}

export async function getRunningSession(db: Db, agentId: string): Promise<WorkSession | null> {
  const [session] = await db
    .select()
    .from(workSessions)
    .where(and(eq(workSessions.agentId, agentId), eq(workSessions.status, "running")));
  return session ?? null;
}

export function listSessions(db: Db, agentId: string, limit = 20): Promise<WorkSession[]> {
  return db
    .select()
    .from(workSessions)
    .where(eq(workSessions.agentId, agentId))
    .orderBy(desc(workSessions.startedAt))
    .limit(limit);
}

/**
 * Asks the worker running the agent's session to stop it: a flag its heartbeat
 * reads within seconds, and a NOTIFY that gets there at once. `cancelledTaskId`: the stop
 * comes from cancelling that task (the agent has nothing else open), not from the person's
 * Stop; the session's end says so. The person's Stop always wins: it clears the task, and a
 * cancel after a Stop does not replace it.
 */
export async function requestSessionStop(
  db: Db,
  agentId: string,
  cancelledTaskId: string | null = null,
): Promise<WorkSession | null> {
  return db.transaction(async (tx) => {
    const [session] = await tx
      .update(workSessions)
      .set({
        stopRequestedAt: sql`coalesce(${workSessions.stopRequestedAt}, now())`,
        cancelledTaskId:
          cancelledTaskId === null
            ? null
            : sql`case when ${workSessions.stopRequestedAt} is null then ${cancelledTaskId}::uuid else ${workSessions.cancelledTaskId} end`,
      })
      .where(and(eq(workSessions.agentId, agentId), eq(workSessions.status, "running")))
      .returning();
    if (session) await tx.execute(sql`select pg_notify(${SESSION_STOP_CHANNEL}, ${session.id})`);
    return session ?? null;
  });
}

/**
 * How long a session's heartbeat must be silent before a session whose worker no longer
 * holds its liveness lock is taken to be dead: two beats (a beat every stale/5 s). The lock
 * alone is not enough: a live worker whose lock connection dropped (a network blip, a
 * Postgres restart) takes it again at its next beat, and its sessions keep beating meanwhile.
 */
const deadWorkerGraceSeconds = (staleAfterSeconds: number) => (staleAfterSeconds * 2) / 5;

/**
 * Marks sessions of dead workers interrupted; returns them (their agents are woken again, and
 * one the person had asked to stop ends as a Stop: endReapedStop). Dead is either of: no heartbeat for `staleAfterSeconds` (a worker that hangs, a
 * machine that vanished without closing its connections), or no heartbeat for two beats
 * and its worker's liveness lock free (a killed process: Postgres freed the lock when its
 * connection closed), which retakes a kill -9's sessions in seconds instead of 15–20.
 */
export async function reapStaleSessions(
  db: Db,
  staleAfterSeconds = DEFAULT_STALE_SESSION_SECONDS,
): Promise<{ agentId: string; sessionId: string; stopRequested: boolean }[]> {
  const silentFor = (seconds: number) => sql`${workSessions.heartbeatAt} < now() - make_interval(secs => ${seconds})`;
  const rows = await db
    .update(workSessions)
    .set({ status: "interrupted", error: "The worker running this session stopped responding.", endedAt: sql`now()` })
    .where(
      and(
        eq(workSessions.status, "running"),
        sql`(${silentFor(staleAfterSeconds)} or (${silentFor(deadWorkerGraceSeconds(staleAfterSeconds))} and not ${workerHoldsLock(sql`${workSessions.worker}`)}))`,
      ),
    )
    .returning({
      agentId: workSessions.agentId,
      sessionId: workSessions.id,
      stopRequestedAt: workSessions.stopRequestedAt,
    });
  return rows.map((row) => ({
    agentId: row.agentId,
    sessionId: row.sessionId,
    stopRequested: row.stopRequestedAt !== null,
  }));
}

/** A reaped session the person had asked to stop, recorded as the Stop it was (see endReapedStop). */
export async function recordReapedAsStopped(db: Db, sessionId: string, error: string): Promise<boolean> {
  const rows = await db
    .update(workSessions)
    .set({ status: "stopped", error })
    .where(and(eq(workSessions.id, sessionId), eq(workSessions.status, "interrupted")))
    .returning({ id: workSessions.id });
  return rows.length > 0;
}

/**
 * SQL: agent `agent` has work given to it and not yet taken up — a pending task, queued
 * input, or a decision of the person's to carry out. The one definition the backlog, a
 * session's end and Resume build on (each adds what it alone looks at).
 */
function queuedWorkOf(agent: SQL): SQL {
  return sql`(exists (select 1 from tasks t where t.agent_id = ${agent} and ${taskStatusIn(sql`t.status`, ["pending"])})
    or exists (select 1 from agent_inputs i where i.agent_id = ${agent})
    or ${decisionWaitingFor(agent)})`;
}

/**
 * SQL: queuedWorkOf, or a task left in progress (a pause, a budget stop or a crash cut its
 * turn): what a new session of agent `agent` would take up. Resume and a budget change wake
 * on it; a budget stop keeps the wake flag while it holds.
 */
function workToResumeOf(agent: SQL): SQL {
  return sql`(${queuedWorkOf(agent)} or exists (select 1 from tasks t where t.agent_id = ${agent} and ${taskStatusIn(sql`t.status`, ["in_progress"])}))`;
}

/**
 * Sets the agent's wake flag without a nudge (keeping an earlier one): work waits for the
 * worker's backlog drain, which acts on it once the team may work again (a budget stop).
 */
export async function keepWakeRequested(db: Db, agentId: string): Promise<void> {
  await db
    .update(agents)
    .set({ wakeRequestedAt: sql`coalesce(${agents.wakeRequestedAt}, clock_timestamp())` })
    .where(eq(agents.id, agentId));
}

/**
 * "Someone asked for agent `a` and no live session serves it": a wake-up, a pending task,
 * queued input or a session whose worker died (its heartbeat went stale), and no running
 * session with a fresh heartbeat. One definition for the worker's backlog and the health
 * check's.
 */
function awaitingWork(staleAfterSeconds: number) {
  const stale = sql`s.heartbeat_at < now() - make_interval(secs => ${staleAfterSeconds})`;
  return sql`
  (a.wake_requested_at is not null
   or ${queuedWorkOf(sql`a.id`)}
   or exists (select 1 from work_sessions s where s.agent_id = a.id and s.status = 'running' and ${stale}))
  and not exists (select 1 from work_sessions s where s.agent_id = a.id and s.status = 'running' and not (${stale}))`;
}

/**
 * Agents of active teams someone asked for that no session is serving, with their teams: the
 * backlog a worker drains at start and now and then. A paused team's work waits for its
 * resume, which wakes its agents itself; the worker leaves out teams over their budget.
 */
export async function listAgentsAwaitingWork(
  db: Db,
  staleAfterSeconds = DEFAULT_STALE_SESSION_SECONDS,
): Promise<{ agentId: string; teamId: string }[]> {
  const rows = await db.execute<{ id: string; team_id: string }>(sql`
    select a.id, a.team_id from agents a join teams tm on tm.id = a.team_id and tm.status = 'active' where ${awaitingWork(staleAfterSeconds)}`);
  return rows.map((row) => ({ agentId: row.id, teamId: row.team_id }));
}

/** Work waiting for a worker in one team: how many of its agents wait, since when, and its lead (who hears about it). */
export type WaitingTeam = { teamId: string; leadId: string; agents: number; waitingSince: Date };

/**
 * The backlog by team, for active teams only (a paused team's work waits for the person,
 * not for a worker). An agent waits since the oldest of its wake-up, pending tasks and
 * queued input.
 */
export async function listTeamsAwaitingWork(
  db: Db,
  staleAfterSeconds = DEFAULT_STALE_SESSION_SECONDS,
): Promise<WaitingTeam[]> {
  const rows = await db.execute<{ team_id: string; lead_id: string; agents: number; waiting_since: string }>(sql`
    with waiting as (
      select a.team_id,
             least(a.wake_requested_at,
                   (select min(t.created_at) from tasks t where t.agent_id = a.id and ${taskStatusIn(sql`t.status`, ["pending"])}),
                   (select min(i.created_at) from agent_inputs i where i.agent_id = a.id),
                   (select min(p.decided_at) from approvals p where p.agent_id = a.id and p.status <> 'pending' and p.resolved_at is null),
                   (select min(s.heartbeat_at) from work_sessions s where s.agent_id = a.id and s.status = 'running')) as since
        from agents a join teams tm on tm.id = a.team_id and tm.status = 'active'
       where ${awaitingWork(staleAfterSeconds)})
    select w.team_id, lead.id as lead_id, count(*)::int as agents, min(w.since) as waiting_since
      from waiting w join agents lead on lead.team_id = w.team_id and lead.role = 'lead'
     group by w.team_id, lead.id
     order by waiting_since`);
  return rows.map((row) => ({
    teamId: row.team_id,
    leadId: row.lead_id,
    agents: row.agents,
    waitingSince: new Date(row.waiting_since),
  }));
}

export type SessionStart = {
  agent: Agent;
  team: Team;
  conversation: Conversation;
  context: Message[];
  previous: WorkSession | null;
};

/**
 * What a work session starts from, in one round trip: its agent and team, the agent's work
 * log and its context (whose last message is the log's tail, and which shows calls left
 * open), and the agent's latest ended session (a Stop it did not get to honour). A log that
 * does not exist yet is created, and read, after.
 */
export async function readSessionStart(db: Db, agentId: string, sessionId: string): Promise<SessionStart> {
  const [[row], previous, context] = await Promise.all([
    db
      .select({ agent: agents, team: teams, conversation: conversations })
      .from(agents)
      .innerJoin(teams, eq(teams.id, agents.teamId))
      .leftJoin(conversations, and(eq(conversations.agentId, agents.id), eq(conversations.mode, "background")))
      .where(eq(agents.id, agentId)),
    getLatestEndedSession(db, agentId, sessionId),
    getBackgroundContext(db, agentId),
  ]);
  if (!row) throw notFound("agent", agentId);
  if (row.conversation) return { agent: row.agent, team: row.team, conversation: row.conversation, context, previous };
  const conversation = await getBackgroundConversation(db, agentId);
  return {
    agent: row.agent,
    team: row.team,
    conversation,
    context: await getConversationContext(db, conversation.id),
    previous,
  };
}

/** Work of the agent's that a session would take up (workToResumeOf), whatever its team's status. */
export async function hasWorkToResume(db: Db, agentId: string): Promise<boolean> {
  const [row] = await db.execute<{ waiting: boolean }>(sql`select ${workToResumeOf(sql`${agentId}::uuid`)} as waiting`);
  return row?.waiting === true;
}

/** Work given to the agent and not taken up yet (queuedWorkOf), when its team is active. */
export async function hasWaitingWork(db: Db, agentId: string): Promise<boolean> {
  const [row] = await db.execute<{ waiting: boolean }>(sql`
    select exists (
      select 1 from agents a join teams t on t.id = a.team_id
       where a.id = ${agentId} and t.status = 'active' and ${queuedWorkOf(sql`a.id`)}
    ) as waiting`);
  return row?.waiting === true;
}

/** The team's agents with work waiting or a task left in progress (workToResumeOf), or a wake-up requested. */
export async function listAgentsWithWork(db: Db, teamId: string): Promise<string[]> {
  const rows = await db.execute<{ id: string }>(sql`
    select a.id from agents a
     where a.team_id = ${teamId} and (${workToResumeOf(sql`a.id`)} or a.wake_requested_at is not null)`);
  return rows.map((row) => row.id);
}

/** The task whose cancelling stopped the session (null: the person's Stop). */
export async function getCancelledTaskOfSession(db: Db, sessionId: string): Promise<string | null> {
  const [row] = await db
    .select({ cancelledTaskId: workSessions.cancelledTaskId })
    .from(workSessions)
    .where(eq(workSessions.id, sessionId));
  return row?.cancelledTaskId ?? null;
}
