import "server-only";
import { and, asc, eq, sql } from "drizzle-orm";
import type { Db } from "../client";
import { questions, type DecisionChannel, type Question } from "../schema";

export async function createQuestion(
  db: Db,
  input: { agentId: string; taskId: string | null; recipientAgentId: string | null; question: string },
): Promise<Question> {
  const [row] = await db.insert(questions).values(input).returning();
  return row!;
}

export async function getQuestion(db: Db, questionId: string): Promise<Question | null> {
  const [row] = await db.select().from(questions).where(eq(questions.id, questionId));
  return row ?? null;
}

/** Open questions the agent was asked, oldest first. */
export function listOpenQuestionsFor(db: Db, recipientAgentId: string): Promise<Question[]> {
  return db
    .select()
    .from(questions)
    .where(and(eq(questions.recipientAgentId, recipientAgentId), eq(questions.status, "open")))
    .orderBy(asc(questions.createdAt));
}

/** Records the answer of an open question; null when it was answered or withdrawn already. */
export async function answerQuestion(
  db: Db,
  questionId: string,
  answer: string,
  /** Where the person answered; null for an agent's answer to its subordinate. */
  via: DecisionChannel | null = null,
): Promise<Question | null> {
  const [row] = await db
    .update(questions)
    .set({ status: "answered", answer, answeredAt: sql`now()`, answeredVia: via })
    .where(and(eq(questions.id, questionId), eq(questions.status, "open")))
    .returning();
  return row ?? null;
}

/** A task that ended asks nothing any more. */
export async function withdrawQuestionsOfTask(db: Db, taskId: string): Promise<void> {
  await db
    .update(questions)
    .set({ status: "withdrawn" })
    .where(and(eq(questions.taskId, taskId), eq(questions.status, "open")));
}

export async function hasOpenQuestion(db: Db, taskId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: questions.id })
    .from(questions)
    .where(and(eq(questions.taskId, taskId), eq(questions.status, "open")))
    .limit(1);
  return row !== undefined;
}

/** The question, its row locked for the transaction. */
export async function lockQuestion(tx: Db, questionId: string): Promise<Question | null> {
  const [question] = await tx.select().from(questions).where(eq(questions.id, questionId)).for("update");
  return question ?? null;
}
