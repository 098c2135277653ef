import { and, asc, desc, eq, inArray, sql } from "drizzle-orm";
import { notFound } from "@/lib/errors";
import type { Db } from "../client";
import { tasks, type Task, type TaskSource, type TaskStatus } from "../schema";

export const finalTaskStatuses = ["completed", "failed", "cancelled"] as const satisfies TaskStatus[];
export const openTaskStatuses = ["pending", "in_progress", "waiting_input"] as const satisfies TaskStatus[];

export type NewTask = {
  agentId: string;
  source: TaskSource;
  title: string;
  description?: string;
  parentTaskId?: string | null;
};

export async function createTask(db: Db, input: NewTask): Promise<Task> {
  const [task] = await db
    .insert(tasks)
    .values({
      agentId: input.agentId,
      source: input.source,
      title: input.title,
      description: input.description ?? "",
      parentTaskId: input.parentTaskId ?? null,
    })
    .returning();
  return task!;
}

export async function getTask(db: Db, taskId: string): Promise<Task | null> {
  const [task] = await db.select().from(tasks).where(eq(tasks.id, taskId));
  return task ?? null;
}

export async function requireTask(db: Db, taskId: string): Promise<Task> {
  const task = await getTask(db, taskId);
  if (!task) throw notFound("task", taskId);
  return task;
}

/** The agent's tasks, newest first. */
export function listTasksByAgent(db: Db, agentId: string, statuses?: readonly TaskStatus[]): Promise<Task[]> {
  return db
    .select()
    .from(tasks)
    .where(statuses ? and(eq(tasks.agentId, agentId), inArray(tasks.status, [...statuses])) : eq(tasks.agentId, agentId))
    .orderBy(desc(tasks.createdAt))
    .prepare("list_tasks_by_agent")
    .execute();
}

/**
 * What the agent page shows of a long life: every open task, the `limit` most recent ended
 * ones (newest first), and how many ended ones there are in all. A page listing all of an
 * agent's 10 000 tasks took seconds to render.
 */
export async function listTasksForAgentPage(db: Db, agentId: string, limit: number): Promise<{ tasks: Task[]; endedCount: number }> {
  const [open, ended, [counted]] = await Promise.all([
    listTasksByAgent(db, agentId, openTaskStatuses),
    db
      .select()
      .from(tasks)
      .where(and(eq(tasks.agentId, agentId), inArray(tasks.status, [...finalTaskStatuses])))
      .orderBy(desc(tasks.createdAt), desc(tasks.id))
      .limit(limit),
    db
      .select({ n: sql<number>`count(*)::int` })
      .from(tasks)
      .where(and(eq(tasks.agentId, agentId), inArray(tasks.status, [...finalTaskStatuses]))),
  ]);
  const all = [...open, ...ended].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
  return { tasks: all, endedCount: counted?.n ?? 0 };
}

/** The agent's pending tasks, oldest first: the order a work session takes them. */
export function listPendingTasks(db: Db, agentId: string): Promise<Task[]> {
  return db
    .select()
    .from(tasks)
    .where(and(eq(tasks.agentId, agentId), eq(tasks.status, "pending")))
    .orderBy(asc(tasks.createdAt));
}

/**
 * Moves a task to a new status and returns it, or null when it is already final:
 * a cancelled or completed task stays that way, whoever writes later.
 */
export async function setTaskStatus(
  db: Db,
  taskId: string,
  status: TaskStatus,
  result?: string | null,
): Promise<Task | null> {
  const now = sql`now()`;
  const [task] = await db
    .update(tasks)
    .set({
      status,
      updatedAt: now,
      ...(result !== undefined ? { result } : {}),
      ...(status === "in_progress" ? { startedAt: sql`coalesce(${tasks.startedAt}, now())` } : {}),
      ...((finalTaskStatuses as readonly TaskStatus[]).includes(status) ? { completedAt: now } : {}),
    })
    .where(and(eq(tasks.id, taskId), inArray(tasks.status, [...openTaskStatuses])))
    .returning();
  return task ?? null;
}

/**
 * The open tasks of the tree under `taskId` (itself included), parents before their
 * children, each locked for the caller's transaction.
 */
export async function listOpenTaskTree(db: Db, taskId: string): Promise<Task[]> {
  const rows = await db.execute<{ id: string }>(sql`
    with recursive tree as (
      select id, 0 as depth from tasks where id = ${taskId}
      union all
      select t.id, tree.depth + 1 from tasks t join tree on t.parent_task_id = tree.id
    )
    select tree.id from tree join tasks t on t.id = tree.id
     where t.status in ('pending', 'in_progress', 'waiting_input')
     order by tree.depth
     for update of t`);
  const found: Task[] = [];
  for (const { id } of rows) {
    const task = await getTask(db, id);
    if (task) found.push(task);
  }
  return found;
}

/** Tasks delegated from this one that are still open. */
export function listOpenSubtasks(db: Db, parentTaskId: string): Promise<Task[]> {
  return db
    .select()
    .from(tasks)
    .where(and(eq(tasks.parentTaskId, parentTaskId), inArray(tasks.status, [...openTaskStatuses])));
}
