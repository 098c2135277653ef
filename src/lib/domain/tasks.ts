import "server-only";
import { eq, sql } from "drizzle-orm";
import type { Db } from "@/lib/db/client";
import { retryingTransaction } from "@/lib/db/transactions";
import { deleteAgent, getAgent } from "@/lib/db/queries/agents";
import { insertAgentInput } from "@/lib/db/queries/agent-inputs";
import { withdrawQuestionsOfTask } from "@/lib/db/queries/questions";
import { withdrawApprovalsOfTask } from "@/lib/db/queries/approvals";
import {
  createTask,
  getTask,
  listOpenSubtasks,
  listOpenTaskTree,
  listTasksByAgent,
  openTaskStatuses,
  requireTask,
  setTaskStatus,
  type NewTask,
} from "@/lib/db/queries/tasks";
import { requestSessionStop, workToResumeOf } from "@/lib/db/queries/work-sessions";
import { agents, type Task, type TaskStatus } from "@/lib/db/schema";
import { CadreError } from "@/lib/errors";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { raiseAlert } from "./alerts";
import { CANCELLED_BY_PERSON, formatLogInput, type LogInput } from "@/lib/core/formats";

/** Creates a task and wakes its agent, in one transaction: a task never waits unnoticed. */
export async function assignTask(db: Db, jobs: JobQueue, input: NewTask): Promise<Task> {
  return db.transaction(async (tx) => {
    const task = await createTask(tx, input);
    await jobs.wakeAgent(tx, input.agentId);
    return task;
  });
}

/**
 * A failed or cancelled task, tried again by the person: a new pending task for the same
 * agent with the same title, its description saying which task it retries, and the agent
 * woken — in the caller's transaction. The old task stays as it ended, for the record.
 */
const retryMarker = (taskId: string) => `Retry of task ${taskId}`;

export async function retryTask(db: Db, jobs: JobQueue, task: Task): Promise<Task> {
  if (task.status !== "failed" && task.status !== "cancelled") {
    throw new CadreError(
      "conflict:task_not_ended",
      `Only a failed or cancelled task can be retried; this one is ${task.status.replace("_", " ")}.`,
    );
  }
  // One retry per ended task: the task's row lock makes a second retry (a double click, two
  // tabs) wait for the first and then find it.
  await db.execute(sql`select 1 from tasks where id = ${task.id} for update`);
  const [earlier] = await db.execute<{ id: string }>(sql`
    select id from tasks where agent_id = ${task.agentId} and position(${retryMarker(task.id)} in description) > 0 limit 1`);
  if (earlier) {
    throw new CadreError(
      "conflict:task_retried",
      `This task was already retried as task ${earlier.id}; retry that one if it failed too.`,
    );
  }
  const retryNote = `${retryMarker(task.id)} ("${task.title}"), which ${task.status === "failed" ? "failed" : "was cancelled"}${task.result ? `: ${task.result}` : "."}`;
  return assignTask(db, jobs, {
    agentId: task.agentId,
    source: "user",
    title: task.title,
    description: [task.description, retryNote].filter(Boolean).join("\n\n"),
  });
}

/**
 * Puts input into an agent's queue and wakes it, in one transaction. The agent's
 * session moves it into the work log before its next model call (see work-loop.ts);
 * `taskId` names the recipient's task it is about, so the session takes it up with
 * that task in focus.
 */
export async function queueInput(
  db: Db,
  jobs: JobQueue,
  agentId: string,
  input: LogInput | string,
  taskId: string | null = null,
): Promise<void> {
  await db.transaction(async (tx) => {
    await insertAgentInput(tx, { agentId, content: typeof input === "string" ? input : formatLogInput(input), taskId });
    await jobs.wakeAgent(tx, agentId);
  });
}

export type TaskEnd =
  | { status: "completed"; result: string }
  | { status: "failed"; reason: string }
  | { status: "cancelled"; reason: string; removed?: boolean };

/**
 * Ends a task and tells whoever waits on it, in the caller's transaction: its lead
 * hears the outcome of a subordinate's task exactly once (the status change is the
 * guard: a task already final changes nothing and tells nobody), and a failure is an
 * alert in the person's inbox. Work delegated from a task that failed is cancelled
 * with it. Returns the ended task, or null when it was already final.
 */
export async function endTask(db: Db, jobs: JobQueue, taskId: string, end: TaskEnd): Promise<Task | null> {
  const result = end.status === "completed" ? end.result : end.reason;
  const task = await setTaskStatus(db, taskId, end.status, result);
  if (!task) return null;
  await withdrawQuestionsOfTask(db, task.id);
  // Its calls waiting for the person are withdrawn; the agent's session stores their "not run" results.
  if ((await withdrawApprovalsOfTask(db, task.id, `its task "${task.title}" was ${task.status}`)).length > 0)
    await jobs.wakeAgent(db, task.agentId);
  const agent = await getAgent(db, task.agentId);
  if (!agent) return task;

  if (agent.role === "subordinate" && agent.parentAgentId) {
    const parent = task.parentTaskId ? await getTask(db, task.parentTaskId) : null;
    // When the lead's own task was cancelled or failed, the work under it went with it: nothing to report.
    const parentGone = parent !== null && (parent.status === "cancelled" || parent.status === "failed");
    if (!(end.status === "cancelled" && parentGone)) {
      const outcome: LogInput =
        end.status === "completed"
          ? { kind: "report", agentName: agent.name, taskId: task.id, result: end.result }
          : end.status === "failed"
            ? { kind: "failed", agentName: agent.name, taskId: task.id, reason: end.reason }
            : end.removed
              ? { kind: "removed", agentName: agent.name, taskId: task.id }
              : { kind: "cancelled", agentName: agent.name, taskId: task.id, reason: end.reason };
      await queueInput(db, jobs, agent.parentAgentId, outcome, task.parentTaskId);
    }
  }
  if (end.status === "failed") {
    await raiseAlert(db, jobs, {
      teamId: agent.teamId,
      agentId: agent.id,
      taskId: task.id,
      key: `task-failed:${task.id}`,
      title: `${agent.name} could not finish "${task.title}"`,
      summary: end.reason,
      content: `**${agent.name}** stopped working on the task **${task.title}**.\n\n${end.reason}\n\nThe agent's work log shows what happened up to that point.`,
    });
    const delegated = await listOpenSubtasks(db, task.id);
    await cancelTrees(
      db,
      jobs,
      delegated.map((child) => child.id),
      `Its parent task failed: ${end.reason}`,
    );
  }
  return task;
}

/**
 * Cancels open tasks with everything delegated from them, in the caller's
 * transaction, parents first (so a lead whose own task is cancelled is not told about
 * the work under it). Each agent that was working on a cancelled task hears so in its
 * work log and goes on with its other tasks; an agent left with nothing open has its
 * session stopped instead. `quietFor`: an agent that is being stopped anyway. Returns
 * the tasks it ended.
 */
export async function cancelTrees(
  db: Db,
  jobs: JobQueue,
  rootIds: readonly string[],
  reason: string,
  options: { removed?: boolean; quietFor?: string } = {},
): Promise<Task[]> {
  const cancelled: { task: Task; statusBefore: TaskStatus }[] = [];
  for (const rootId of rootIds) {
    for (const task of await listOpenTaskTree(db, rootId)) {
      const ended = await endTask(db, jobs, task.id, {
        status: "cancelled",
        reason,
        removed: options.removed && task.id === rootId,
      });
      if (ended) cancelled.push({ task: ended, statusBefore: task.status });
    }
  }
  for (const agentId of new Set(cancelled.map(({ task }) => task.agentId))) {
    if (agentId === options.quietFor) continue;
    if ((await listTasksByAgent(db, agentId, openTaskStatuses)).length === 0) {
      // Its session ends saying which task was cancelled (the one it was on, when it was on one), not as a Stop.
      const ofAgent = cancelled.filter(({ task }) => task.agentId === agentId);
      const named = ofAgent.find(({ statusBefore }) => statusBefore !== "pending") ?? ofAgent[0]!;
      await requestSessionStop(db, agentId, named.task.id);
      continue;
    }
    // Only work under way needs telling: a pending task never reached the agent's log.
    for (const { task } of cancelled.filter(
      ({ task, statusBefore }) => task.agentId === agentId && statusBefore !== "pending",
    )) {
      await queueInput(
        db,
        jobs,
        agentId,
        { kind: "task-cancelled", taskId: task.id, title: task.title, reason },
        task.id,
      );
    }
  }
  return cancelled.map(({ task }) => task);
}

/** Cancels a task and every open task delegated from it, at any depth, in one transaction (see cancelTrees). */
export async function cancelTask(
  db: Db,
  jobs: JobQueue,
  taskId: string,
  reason = CANCELLED_BY_PERSON,
): Promise<{ task: Task; cancelled: Task[] }> {
  await requireTask(db, taskId);
  const cancelled = await retryingTransaction(db, (tx) => cancelTrees(tx, jobs, [taskId], reason));
  return { task: await requireTask(db, taskId), cancelled };
}

/**
 * Removes a subordinate (and its own subordinates, by cascade). Its unfinished work
 * ends first, in the same transaction: each lead hears "was removed" for a task it
 * delegated, and a running session is told to stop.
 */
export async function removeSubordinate(db: Db, jobs: JobQueue, agentId: string): Promise<void> {
  await retryingTransaction(db, async (tx) => {
    const removed = await tx.execute<{ id: string }>(sql`
      with recursive tree as (
        select id from agents where id = ${agentId}
        union all
        select a.id from agents a join tree on a.parent_agent_id = tree.id
      )
      select id from tree`);
    const ids = removed.map((row) => row.id);
    for (const id of ids) {
      await tx.select({ id: agents.id }).from(agents).where(eq(agents.id, id)).for("update");
      const open = await listTasksByAgent(tx, id, openTaskStatuses);
      await cancelTrees(
        tx,
        jobs,
        open.map((task) => task.id),
        "The agent was removed.",
        { removed: true, quietFor: id },
      );
      await requestSessionStop(tx, id);
    }
    await deleteAgent(tx, agentId);
  });
}

/** Wakes every agent of the team that has work waiting or a task left in progress (workToResumeOf), or a wake-up. */
export async function wakeAgentsWithWork(db: Db, jobs: JobQueue, teamId: string): Promise<void> {
  const rows = await db.execute<{ id: string }>(sql`
    select a.id from agents a
     where a.team_id = ${teamId} and (${workToResumeOf(sql`a.id`)} or a.wake_requested_at is not null)`);
  for (const { id } of rows) await jobs.wakeAgent(db, id);
}
