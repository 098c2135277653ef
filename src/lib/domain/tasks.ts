import "server-only";
import type { Db } from "@/lib/db/client";
import { retryingTransaction } from "@/lib/db/transactions";
import { deleteAgent, listAgentTree, lockAgent } from "@/lib/db/queries/agents";
import { insertAgentInput } from "@/lib/db/queries/agent-inputs";
import {
  createTask,
  listTasksByAgent,
  requireTask,
  type NewTask,
  lockTask,
  findTaskDescribedWith,
} from "@/lib/db/queries/tasks";
import { openTaskStatuses } from "@/lib/db/task-statuses";
import { requestSessionStop, listAgentsWithWork } from "@/lib/db/queries/work-sessions";
import type { Task } from "@/lib/db/schema";
import { CadreError } from "@/lib/errors";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { CANCELLED_BY_PERSON, formatLogInput, type LogInput } from "@/lib/core/formats";
import { cancelTrees } from "./task-lifecycle";

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
  await lockTask(db, task.id);
  const earlier = await findTaskDescribedWith(db, task.agentId, retryMarker(task.id));
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
    for (const id of await listAgentTree(tx, agentId)) {
      await lockAgent(tx, id);
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
  for (const id of await listAgentsWithWork(db, teamId)) await jobs.wakeAgent(db, id);
}
