import "server-only";
import { and, asc, desc, eq, inArray, type SQL, sql } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import { notFound } from "@/lib/errors";
import { finalTaskStatuses, isFinalTask, type OpenTaskStatus, openTaskStatuses } from "@/lib/db/task-statuses";
import type { Db } from "../client";
import { tasks, type Task, type TaskSource, type TaskStatus } from "../schema";

/**
 * SQL: `column` holds one of `statuses` (`= 'pending'`, `in ('pending', …)`), for statements
 * written as SQL text, from the named lists of db/task-statuses.ts. The statuses go in as
 * literals, as typed out before: the statement's text and plan stay the same, and they come
 * from the typed vocabulary, never from input.
 */
export function taskStatusIn(column: SQL | AnyPgColumn, statuses: readonly [TaskStatus, ...TaskStatus[]]): SQL {
  const literals = statuses.map((status) => `'${status}'`);
  return sql`${column} ${sql.raw(literals.length === 1 ? `= ${literals[0]}` : `in (${literals.join(", ")})`)}`;
}

export type NewTask = {
  agentId: string;
  source: TaskSource;
  title: string;
  description?: string;
  parentTaskId?: string | null;
  /** Begun at once (a webhook's task, whose input is queued with it); pending otherwise. */
  started?: boolean;
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
      ...(input.started ? { status: "in_progress" as const, startedAt: sql`now()` } : {}),
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
    .where(
      statuses ? and(eq(tasks.agentId, agentId), inArray(tasks.status, [...statuses])) : eq(tasks.agentId, agentId),
    )
    .orderBy(desc(tasks.createdAt))
    .prepare("list_tasks_by_agent")
    .execute();
}

/**
 * What the agent page shows of a long life: every open task, the `limit` most recent ended
 * ones (newest first), and how many ended ones there are in all. A page listing all of an
 * agent's 10 000 tasks took seconds to render.
 */
export async function listTasksForAgentPage(
  db: Db,
  agentId: string,
  limit: number,
): Promise<{ tasks: Task[]; endedCount: number }> {
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

/**
 * Moves a task to a new status and returns it, or null when it is already final — a cancelled
 * or completed task stays that way, whoever writes later — or not in one of `from` (open statuses
 * only, so the guard holds). Only the
 * task's lifecycle (src/lib/domain/task-lifecycle.ts) calls it: each transition by its name.
 */
export async function setTaskStatus(
  db: Db,
  taskId: string,
  status: TaskStatus,
  change: { from?: readonly OpenTaskStatus[]; result?: string | null } = {},
): Promise<Task | null> {
  const now = sql`now()`;
  const [task] = await db
    .update(tasks)
    .set({
      status,
      updatedAt: now,
      ...(change.result !== undefined ? { result: change.result } : {}),
      ...(status === "in_progress" ? { startedAt: sql`coalesce(${tasks.startedAt}, now())` } : {}),
      ...(isFinalTask(status) ? { completedAt: now } : {}),
    })
    .where(and(eq(tasks.id, taskId), inArray(tasks.status, [...(change.from ?? openTaskStatuses)])))
    .returning();
  return task ?? null;
}

/** A task, locked for the caller's transaction: a change to it decided on what else is open waits for the one under way. Null when it is gone. */
export async function lockTask(db: Db, taskId: string): Promise<Task | null> {
  const [task] = await db.select().from(tasks).where(eq(tasks.id, taskId)).for("update");
  return task ?? null;
}

/**
 * The open tasks of the tree under `taskId` (itself included), parents before their
 * children, each locked for the caller's transaction. Read level by level, each level's open
 * tasks locked before their children are read: a delegation holds its parent task
 * (holdParentTask) until it commits, so a child committed while this waited for its parent's
 * lock is read with the next level, and no child is added under a parent once it is locked. One
 * recursive statement read every level in the snapshot it started with, and missed such a child:
 * a Stop that met a delegation in flight left the delegated task running.
 */
export async function listOpenTaskTree(db: Db, taskId: string): Promise<Task[]> {
  const found: Task[] = [];
  let level = [taskId];
  // A tree is built by delegation, so it has no cycle; the depth cap keeps a corrupted row from looping forever.
  for (let depth = 0; level.length > 0 && depth <= 100; depth++) {
    found.push(
      ...(await db
        .select()
        .from(tasks)
        .where(and(inArray(tasks.id, level), inArray(tasks.status, [...openTaskStatuses])))
        .orderBy(asc(tasks.createdAt))
        .for("update")),
    );
    // Ended tasks are not locked (nothing is delegated under an ended task), but what is open under them is.
    const children = await db.select({ id: tasks.id }).from(tasks).where(inArray(tasks.parentTaskId, level));
    level = children.map((child) => child.id);
  }
  return found;
}

/**
 * The task a delegation goes under, held until the caller's transaction commits: FOR SHARE waits
 * for a cancel (which locks the task, listOpenTaskTree) or an end (which updates it) under way, and
 * reads the task as it left it; a cancel that comes later waits for the delegation, and then finds
 * the new child. Null when the task is gone.
 */
export async function holdParentTask(db: Db, taskId: string): Promise<Task | null> {
  const [task] = await db.select().from(tasks).where(eq(tasks.id, taskId)).for("share");
  return task ?? null;
}

/** A task and everything delegated from it, at any depth, parents first, each with the name of the agent that did it. */
export type TaskTreeNode = Pick<
  Task,
  "id" | "parentTaskId" | "agentId" | "title" | "status" | "result" | "source" | "createdAt" | "updatedAt"
> & {
  agentName: string;
  depth: number;
};

export async function listTaskTree(db: Db, taskId: string): Promise<TaskTreeNode[]> {
  const rows = await db.execute<{
    id: string;
    parent_task_id: string | null;
    agent_id: string;
    agent_name: string;
    title: string;
    status: TaskStatus;
    result: string | null;
    source: Task["source"];
    created_at: string;
    updated_at: string;
    depth: number;
  }>(sql`
    with recursive tree as (
      select id, 0 as depth from tasks where id = ${taskId}
      union all
      -- A tree is built by delegation, so it has no cycle; the depth cap keeps a corrupted row from looping forever.
      select t.id, tree.depth + 1 from tasks t join tree on t.parent_task_id = tree.id where tree.depth < 100
    )
    select t.id, t.parent_task_id, t.agent_id, a.name as agent_name, t.title, t.status, t.result, t.source,
           t.created_at, t.updated_at, tree.depth
      from tree join tasks t on t.id = tree.id join agents a on a.id = t.agent_id
     order by tree.depth, t.created_at, t.id`);
  return rows.map((row) => ({
    id: row.id,
    parentTaskId: row.parent_task_id,
    agentId: row.agent_id,
    agentName: row.agent_name,
    title: row.title,
    status: row.status,
    result: row.result,
    source: row.source,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    depth: Number(row.depth),
  }));
}

/** Which of these tasks delegated anything: only they get a delegation tree to open. */
export async function listTasksWithSubtasks(db: Db, taskIds: string[]): Promise<Set<string>> {
  if (taskIds.length === 0) return new Set();
  const rows = await db
    .selectDistinct({ parentTaskId: tasks.parentTaskId })
    .from(tasks)
    .where(inArray(tasks.parentTaskId, taskIds));
  return new Set(rows.flatMap((row) => (row.parentTaskId ? [row.parentTaskId] : [])));
}

/** The newest task a lead's schedule started: the "last run" shown beside its schedule. */
export async function getLastScheduledTask(db: Db, agentId: string): Promise<Task | null> {
  const [task] = await db
    .select()
    .from(tasks)
    .where(and(eq(tasks.agentId, agentId), eq(tasks.source, "schedule")))
    .orderBy(desc(tasks.createdAt))
    .limit(1);
  return task ?? null;
}

/** Tasks delegated from this one that are still open. */
export function listOpenSubtasks(db: Db, parentTaskId: string): Promise<Task[]> {
  return db
    .select()
    .from(tasks)
    .where(and(eq(tasks.parentTaskId, parentTaskId), inArray(tasks.status, [...openTaskStatuses])));
}

/** A task of the agent's whose description holds `text` (a retry's marker), if any. */
export async function findTaskDescribedWith(db: Db, agentId: string, text: string): Promise<{ id: string } | null> {
  const [found] = await db.execute<{ id: string }>(sql`
    select id from tasks where agent_id = ${agentId} and position(${text} in description) > 0 limit 1`);
  return found ?? null;
}
