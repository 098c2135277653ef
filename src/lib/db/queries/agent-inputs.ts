import "server-only";
import { and, asc, eq, isNull, or, sql } from "drizzle-orm";
import type { Db } from "../client";
import { agentInputs, type AgentInput } from "../schema";

export async function insertAgentInput(
  db: Db,
  input: { agentId: string; content: string; taskId?: string | null },
): Promise<AgentInput> {
  const [row] = await db
    .insert(agentInputs)
    .values({ agentId: input.agentId, content: input.content, taskId: input.taskId ?? null })
    .returning();
  return row!;
}

/** The oldest input waiting in the agent's queue, or null. */
export async function getOldestAgentInput(db: Db, agentId: string): Promise<AgentInput | null> {
  const [row] = await db
    .select()
    .from(agentInputs)
    .where(eq(agentInputs.agentId, agentId))
    .orderBy(asc(agentInputs.createdAt))
    .limit(1);
  return row ?? null;
}

/**
 * Removes and returns, oldest first, the agent's queued input that is about `taskId`,
 * together with input about no task in particular; `"all"` takes everything. Rows are
 * locked and skipped by a concurrent taker, so each input is taken once.
 */
export async function takeAgentInputs(
  db: Db,
  agentId: string,
  scope: { taskId: string | null } | "all",
): Promise<AgentInput[]> {
  const about =
    scope === "all"
      ? sql`true`
      : scope.taskId === null
        ? isNull(agentInputs.taskId)
        : or(isNull(agentInputs.taskId), eq(agentInputs.taskId, scope.taskId));
  const rows = await db.execute<{
    id: string;
    agent_id: string;
    content: string;
    task_id: string | null;
    created_at: string | Date;
  }>(sql`
    delete from agent_inputs where id in (
      select id from agent_inputs where ${and(eq(agentInputs.agentId, agentId), about)} for update skip locked
    ) returning id, agent_id, content, task_id, created_at`);
  return rows
    .map((row) => ({
      id: row.id,
      agentId: row.agent_id,
      content: row.content,
      taskId: row.task_id,
      createdAt: new Date(row.created_at),
    }))
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
}

/** Whether input about this task waits in the agent's queue. */
export async function hasAgentInputAbout(db: Db, agentId: string, taskId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: agentInputs.id })
    .from(agentInputs)
    .where(and(eq(agentInputs.agentId, agentId), eq(agentInputs.taskId, taskId)))
    .limit(1);
  return row !== undefined;
}
