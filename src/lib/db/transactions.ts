import "server-only";
import type { Db } from "./client";
import { postgresErrorCode } from "./errors";

/** Postgres gave up on the transaction because of another one's timing, not because of its input. */
function isRetriable(error: unknown): boolean {
  const code = postgresErrorCode(error);
  return code === "40P01" || code === "40001";
}

/**
 * A transaction that runs again when Postgres picks it as a deadlock's victim (40P01) or
 * cannot serialize it (40001). Two of the person's actions that lock the same tasks and
 * agents from different ends (a Stop of a lead and one of its subordinate, a cancel and a
 * delete) can deadlock; each must still answer, not fail with a 500. A new attempt starts
 * after the other side committed, so it sees what that side did.
 */
export async function retryingTransaction<T>(db: Db, work: (tx: Db) => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(work);
    } catch (error) {
      if (attempt >= attempts || !isRetriable(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10 * attempt + Math.random() * 40));
    }
  }
}
