import { sql } from "drizzle-orm";
import type { Db } from "@/lib/db/client";
import { addUserMessage } from "@/lib/db/queries/messages";
import { getBackgroundConversation } from "@/lib/db/queries/conversations";
import { requestSessionStop } from "@/lib/db/queries/work-sessions";
import { createTask, listTasksByAgent, openTaskStatuses, requireTask, type NewTask } from "@/lib/db/queries/tasks";
import type { Task } from "@/lib/db/schema";
import type { JobQueue } from "@/lib/jobs/job-queue";

/** Creates a task and wakes its agent, in one transaction: a task never waits unnoticed. */
export async function assignTask(db: Db, jobs: JobQueue, input: NewTask): Promise<Task> {
  return db.transaction(async (tx) => {
    const task = await createTask(tx, input);
    await jobs.wakeAgent(tx, input.agentId);
    return task;
  });
}

/**
 * Puts a message into an agent's background conversation and wakes it, in one
 * transaction. A running session sees it before its next model call.
 */
export async function postToBackground(db: Db, jobs: JobQueue, agentId: string, content: string): Promise<void> {
  await db.transaction(async (tx) => {
    const conversation = await getBackgroundConversation(tx, agentId);
    await addUserMessage(tx, conversation.id, content);
    await jobs.wakeAgent(tx, agentId);
  });
}

/**
 * Cancels a task and every open task delegated from it, at any depth. Agents left
 * with nothing open have their running session stopped. Returns what was cancelled.
 */
export async function cancelTask(db: Db, taskId: string, reason = "Cancelled by the person."): Promise<{ task: Task; cancelled: Task[] }> {
  const task = await requireTask(db, taskId);
  const cancelled = await db.transaction(async (tx) => {
    const rows = await tx.execute<{ id: string; agent_id: string }>(sql`
      with recursive tree as (
        select id from tasks where id = ${taskId}
        union all
        select t.id from tasks t join tree on t.parent_task_id = tree.id
      )
      update tasks set status = 'cancelled', result = coalesce(result, ${reason}), updated_at = now(), completed_at = now()
       where id in (select id from tree) and status in ('pending', 'in_progress', 'waiting_input')
      returning id, agent_id`);
    return rows;
  });
  const agentIds = [...new Set(cancelled.map((row) => row.agent_id))];
  for (const agentId of agentIds) {
    const open = await listTasksByAgent(db, agentId, openTaskStatuses);
    if (open.length === 0) await requestSessionStop(db, agentId);
  }
  const cancelledTasks: Task[] = [];
  for (const row of cancelled) cancelledTasks.push(await requireTask(db, row.id));
  return { task: (await requireTask(db, task.id)) ?? task, cancelled: cancelledTasks };
}
