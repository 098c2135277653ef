import "server-only";
import { and, eq, gt, inArray, lte, sql } from "drizzle-orm";
import type { Db } from "../client";
import { sessions, type Session } from "../schema";

export async function createSession(db: Db, input: { tokenHash: string; expiresAt: Date }): Promise<Session> {
  const [session] = await db.insert(sessions).values(input).returning();
  return session!;
}

/** True when any of these token hashes is an unexpired session: one query, however many a request carries. */
export async function anyLiveSession(db: Db, tokenHashes: readonly string[]): Promise<boolean> {
  if (tokenHashes.length === 0) return false;
  const [found] = await db
    .select({ id: sessions.id })
    .from(sessions)
    .where(and(inArray(sessions.tokenHash, [...tokenHashes]), gt(sessions.expiresAt, sql`now()`)))
    .limit(1);
  return found !== undefined;
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
