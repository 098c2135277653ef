import "server-only";
import { and, asc, desc, eq, inArray, isNull, sql, type SQL } from "drizzle-orm";
import { notFound } from "@/lib/errors";
import type { Db } from "../client";
import { approvals, type Approval, type DecisionChannel } from "../schema";

export type NewApproval = {
  teamId: string;
  agentId: string;
  conversationId: string;
  taskId: string | null;
  toolCallId: string;
  toolName: string;
  input: unknown;
  reason: string;
};

/** One row per waiting call; a redelivered step finds its call's row there and adds nothing. */
export async function createApproval(db: Db, input: NewApproval): Promise<Approval | null> {
  const [row] = await db
    .insert(approvals)
    .values({ ...input, input: input.input ?? {} })
    .onConflictDoNothing({ target: [approvals.conversationId, approvals.toolCallId] })
    .returning();
  return row ?? null;
}

export async function getApproval(db: Db, approvalId: string): Promise<Approval | null> {
  const [row] = await db.select().from(approvals).where(eq(approvals.id, approvalId));
  return row ?? null;
}

/** The row locked for a decision: two decisions on one approval take turns, and the second sees the first. */
export async function lockApproval(db: Db, approvalId: string): Promise<Approval> {
  const [row] = await db.select().from(approvals).where(eq(approvals.id, approvalId)).for("update");
  if (!row) throw notFound("approval", approvalId);
  return row;
}

export async function recordDecision(
  db: Db,
  approvalId: string,
  decision: { status: "approved"; approvedInput: unknown } | { status: "denied" | "withdrawn"; note: string },
  /** Where the person decided, and who when the channel says (a Slack user); none for a withdrawal. */
  via?: { channel: DecisionChannel; by?: string | null },
): Promise<Approval | null> {
  const source = via ? { decidedVia: via.channel, decidedBy: via.by ?? null } : {};
  const [row] = await db
    .update(approvals)
    .set(
      decision.status === "approved"
        ? { status: "approved", approvedInput: decision.approvedInput ?? {}, decidedAt: sql`now()`, ...source }
        : { status: decision.status, decisionNote: decision.note, decidedAt: sql`now()`, ...source },
    )
    .where(and(eq(approvals.id, approvalId), eq(approvals.status, "pending")))
    .returning();
  return row ?? null;
}

/** Calls of a conversation still waiting for their outcome to be stored, oldest first. */
export function listUnresolvedApprovals(db: Db, conversationId: string): Promise<Approval[]> {
  return db
    .select()
    .from(approvals)
    .where(and(eq(approvals.conversationId, conversationId), isNull(approvals.resolvedAt)))
    .orderBy(asc(approvals.createdAt));
}

export async function hasUnresolvedApprovalOfTask(db: Db, taskId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: approvals.id })
    .from(approvals)
    .where(and(eq(approvals.taskId, taskId), isNull(approvals.resolvedAt)))
    .limit(1);
  return row !== undefined;
}

/** A call of this task still waiting for the person's decision. */
export async function hasPendingApprovalOfTask(db: Db, taskId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: approvals.id })
    .from(approvals)
    .where(and(eq(approvals.taskId, taskId), eq(approvals.status, "pending")))
    .limit(1);
  return row !== undefined;
}

/** Whether a decision waits to be carried out in this conversation (the agent has something to do). */
export async function hasDecidedUnresolvedApproval(db: Db, conversationId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: approvals.id })
    .from(approvals)
    .where(
      and(
        eq(approvals.conversationId, conversationId),
        isNull(approvals.resolvedAt),
        sql`${approvals.status} <> 'pending'`,
      ),
    )
    .limit(1);
  return row !== undefined;
}

export async function markExecutionStarted(db: Db, approvalId: string): Promise<void> {
  await db.update(approvals).set({ executionStartedAt: sql`now()` }).where(eq(approvals.id, approvalId));
}

export async function markResolved(db: Db, approvalId: string): Promise<void> {
  await db
    .update(approvals)
    .set({ resolvedAt: sql`now()` })
    .where(and(eq(approvals.id, approvalId), isNull(approvals.resolvedAt)));
}

/** A task that ended has nothing left to approve: its waiting calls are withdrawn. */
export async function withdrawApprovalsOfTask(db: Db, taskId: string, note: string): Promise<Approval[]> {
  return db
    .update(approvals)
    .set({ status: "withdrawn", decisionNote: note, decidedAt: sql`now()` })
    .where(and(eq(approvals.taskId, taskId), eq(approvals.status, "pending")))
    .returning();
}

export async function withdrawApprovalsOfConversation(
  db: Db,
  conversationId: string,
  note: string,
): Promise<Approval[]> {
  return db
    .update(approvals)
    .set({ status: "withdrawn", decisionNote: note, decidedAt: sql`now()` })
    .where(and(eq(approvals.conversationId, conversationId), eq(approvals.status, "pending")))
    .returning();
}

/** An agent's approvals, newest first (the chat and the agent page show them). */
export function listAgentApprovals(db: Db, agentId: string, limit = 100): Promise<Approval[]> {
  return db
    .select()
    .from(approvals)
    .where(eq(approvals.agentId, agentId))
    .orderBy(desc(approvals.createdAt))
    .limit(limit);
}

/** The approvals of some calls of a conversation (a step's), oldest first. */
export function listApprovalsOfCalls(
  db: Db,
  conversationId: string,
  toolCallIds: readonly string[],
): Promise<Approval[]> {
  if (toolCallIds.length === 0) return Promise.resolve([]);
  return db
    .select()
    .from(approvals)
    .where(and(eq(approvals.conversationId, conversationId), inArray(approvals.toolCallId, [...toolCallIds])))
    .orderBy(asc(approvals.createdAt));
}

/**
 * The conversation's calls that were held for the person: `awaiting` those still waiting (their
 * calls have no result yet, on purpose), `held` all of them, decided or not (see toModelMessages).
 */
export async function heldCallIds(
  db: Db,
  conversationId: string,
): Promise<{ awaiting: Set<string>; held: Set<string> }> {
  const rows = await db
    .select({ toolCallId: approvals.toolCallId, status: approvals.status })
    .from(approvals)
    .where(eq(approvals.conversationId, conversationId));
  return {
    awaiting: new Set(rows.filter((row) => row.status === "pending").map((row) => row.toolCallId)),
    held: new Set(rows.map((row) => row.toolCallId)),
  };
}

/** Whether the conversation has a call waiting for the person. */
export async function hasPendingApproval(db: Db, conversationId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: approvals.id })
    .from(approvals)
    .where(and(eq(approvals.conversationId, conversationId), eq(approvals.status, "pending")))
    .limit(1);
  return row !== undefined;
}

/** Tool call ids of a conversation whose approval is not carried out yet: their result comes from carrying it out, nothing else. */
export async function unresolvedCallIds(db: Db, conversationId: string): Promise<Set<string>> {
  const rows = await db
    .select({ toolCallId: approvals.toolCallId })
    .from(approvals)
    .where(and(eq(approvals.conversationId, conversationId), isNull(approvals.resolvedAt)));
  return new Set(rows.map((row) => row.toolCallId));
}

/**
 * SQL: agent `a` has a decision on its work log to carry out (approved, denied or withdrawn,
 * not resolved yet). That is work waiting, as much as a pending task: the backlog, a session's
 * end and Resume look for it. (A decision in the chat is the chat-resume job's.)
 */
export function decisionWaitingFor(agentId: SQL): SQL {
  return sql`exists (select 1 from approvals p join conversations pc on pc.id = p.conversation_id and pc.mode = 'background'
                      where p.agent_id = ${agentId} and p.status <> 'pending' and p.resolved_at is null)`;
}

/** The tasks (null: none) that still have a call of the conversation waiting for the person. */
export async function listTasksWithPendingApprovals(
  db: Db,
  conversationId: string | null,
): Promise<Set<string | null>> {
  const rows = await db.execute<{ task_id: string | null }>(
    sql`select distinct task_id from approvals where conversation_id = ${conversationId} and status = 'pending'`,
  );
  return new Set(rows.map((row) => row.task_id));
}
