import "server-only";
import { sql } from "drizzle-orm";
import type { Db } from "./client";

/** True when the database answers a trivial query within `timeoutMs`. */
export async function databaseAnswers(db: Db, timeoutMs = 3000): Promise<{ ok: true } | { ok: false; reason: string }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([db.execute(sql`select 1`), timeout]);
    return { ok: true };
  } catch (error) {
    // Drizzle wraps driver errors as "Failed query: …"; the cause says what actually went wrong.
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    return { ok: false, reason: cause instanceof Error ? cause.message : String(cause) };
  } finally {
    clearTimeout(timer);
  }
}
