import "server-only";
// A task's life, by name: the one module that changes a task's status. Every change goes
// through setTaskStatus (src/lib/db/queries/tasks.ts), whose guard keeps a final status final
// whoever writes later; nothing outside this module calls it.
//
//   pending ──start──▶ in_progress ──wait──▶ waiting_input ──resume──▶ in_progress
//   any open status ──complete / fail / cancel (endTask)──▶ completed / failed / cancelled
//
// An ended task withdraws what it waited on (its open questions, its calls waiting for the
// person), tells its lead once and, when it failed, alerts the person once and cancels the work
// delegated from it.
import type { Db } from "@/lib/db/client";
import { getAgent } from "@/lib/db/queries/agents";
import { hasPendingApprovalOfTask, withdrawApprovalsOfTask } from "@/lib/db/queries/approvals";
import { hasOpenQuestion, withdrawQuestionsOfTask } from "@/lib/db/queries/questions";
import {
  getTask,
  listOpenSubtasks,
  listOpenTaskTree,
  listTasksByAgent,
  lockTask,
  setTaskStatus,
} from "@/lib/db/queries/tasks";
import { requestSessionStop } from "@/lib/db/queries/work-sessions";
import type { Task, TaskStatus } from "@/lib/db/schema";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { openTaskStatuses } from "@/lib/db/task-statuses";
import { alertTaskFailed } from "./alerts";
import type { LogInput } from "@/lib/core/formats";
import { queueInput } from "./tasks";

/** start: a pending task is taken up (takeNextWork). Null when it is not pending any more (it ended meanwhile). */
export function startTask(db: Db, taskId: string): Promise<Task | null> {
  return setTaskStatus(db, taskId, "in_progress", { from: ["pending"] });
}

/**
 * wait: the task waits for an answer (a question to the person or to the lead) or for the
 * person's decision on a call. Null when it ended already: then nothing should be asked.
 */
export function waitForInput(db: Db, taskId: string): Promise<Task | null> {
  return setTaskStatus(db, taskId, "waiting_input");
}

/**
 * resume: a waiting task goes back to in_progress once nothing it waits on is still open (no
 * question unanswered, no call waiting for a decision), and the agent's next session takes it
 * up. The one rule for the person's answer, the lead's answer and the person's decision on a
 * call; the caller has just settled its own question or approval. The task's row is locked
 * before the look: the lead's answer and the person's decision on the same task commit under
 * no common lock, and each, not yet seeing the other's, would leave the task waiting for
 * nothing. Locked, the second looks after the first has committed. Null when it stays as it is.
 */
export async function resumeTask(db: Db, taskId: string | null): Promise<Task | null> {
  if (!taskId) return null;
  if ((await lockTask(db, taskId))?.status !== "waiting_input") return null;
  if ((await hasOpenQuestion(db, taskId)) || (await hasPendingApprovalOfTask(db, taskId))) return null;
  return setTaskStatus(db, taskId, "in_progress", { from: ["waiting_input"] });
}

/**
 * complete: the task's result, reported to its lead (see endTask). Null when it was final
 * already, or when work delegated from it is still open: a task is done only once what it
 * waits for has ended, whatever its agent's last words said ("Waiting for reports …"); the
 * agent is woken by each report and completes it then. Looked at under the task's row lock: a
 * delegation holds its parent (holdParentTask) until it commits, so a subtask committed while
 * this waited is seen, and none can be added under the task once this has looked.
 */
export async function completeTask(db: Db, jobs: JobQueue, taskId: string, result: string): Promise<Task | null> {
  if (!(await lockTask(db, taskId))) return null;
  if ((await listOpenSubtasks(db, taskId)).length > 0) return null;
  return endTask(db, jobs, taskId, { status: "completed", result });
}

/**
 * fail: the person is alerted and the work delegated from it is cancelled (see endTask). Null when
 * it was final already. `alerted`: the caller raised the one alert that covers this failure and others.
 */
export function failTask(
  db: Db,
  jobs: JobQueue,
  taskId: string,
  reason: string,
  options: { alerted?: boolean } = {},
): Promise<Task | null> {
  return endTask(db, jobs, taskId, { status: "failed", reason, alerted: options.alerted });
}

type TaskEnd =
  | { status: "completed"; result: string }
  | { status: "failed"; reason: string; alerted?: boolean }
  | { status: "cancelled"; reason: string; removed?: boolean };

/**
 * Ends a task and tells whoever waits on it, in the caller's transaction: its lead
 * hears the outcome of a subordinate's task exactly once (the status change is the
 * guard: a task already final changes nothing and tells nobody), and a failure is an
 * alert in the person's inbox. Work delegated from a task that failed is cancelled
 * with it. Returns the ended task, or null when it was already final.
 */
async function endTask(db: Db, jobs: JobQueue, taskId: string, end: TaskEnd): Promise<Task | null> {
  const result = end.status === "completed" ? end.result : end.reason;
  const task = await setTaskStatus(db, taskId, end.status, { result });
  if (!task) return null;
  await withdrawWaitsOf(db, jobs, task);
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
    if (!end.alerted) await alertTaskFailed(db, jobs, agent, task, end.reason);
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
 * withdraw: an ended task asks nothing any more. Its open questions are withdrawn (an answer
 * coming later is refused, saying how the task ended) and so are its calls waiting for the
 * person; the agent's session, woken for them, stores their "not run" results.
 */
async function withdrawWaitsOf(db: Db, jobs: JobQueue, task: Task): Promise<void> {
  await withdrawQuestionsOfTask(db, task.id);
  if ((await withdrawApprovalsOfTask(db, task.id, `its task "${task.title}" was ${task.status}`)).length > 0)
    await jobs.wakeAgent(db, task.agentId);
}

/**
 * cancel: open tasks end with everything delegated from them, in the caller's
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
