import "server-only";
import { and, eq, gt, lte, sql } from "drizzle-orm";
import type { Db } from "../client";
import { sessions, type Session } from "../schema";

export async function createSession(db: Db, input: { tokenHash: string; expiresAt: Date }): Promise<Session> {
  const [session] = await db.insert(sessions).values(input).returning();
  return session!;
}

/** The unexpired session with this token hash, or null. */
export async function findLiveSession(db: Db, tokenHash: string): Promise<Session | null> {
  const [session] = await db
    .select()
    .from(sessions)
    .where(and(eq(sessions.tokenHash, tokenHash), gt(sessions.expiresAt, sql`now()`)));
  return session ?? null;
}

export async function deleteSession(db: Db, tokenHash: string): Promise<void> {
  await db.delete(sessions).where(eq(sessions.tokenHash, tokenHash));
}

export async function deleteExpiredSessions(db: Db): Promise<void> {
  await db.delete(sessions).where(lte(sessions.expiresAt, sql`now()`));
}
