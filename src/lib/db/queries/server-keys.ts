import "server-only";
import { eq } from "drizzle-orm";
import type { Db } from "../client";
import { serverKeys } from "../schema";

/**
 * The key called `name`, made from `make()` by the first process that asks (for every other
 * the insert does nothing, so all read the same key).
 */
export async function serverKey(db: Db, name: string, make: () => string): Promise<string> {
  const read = async () =>
    (await db.select({ key: serverKeys.key }).from(serverKeys).where(eq(serverKeys.name, name)))[0]?.key;
  const found = await read();
  if (found) return found;
  await db.insert(serverKeys).values({ name, key: make() }).onConflictDoNothing();
  return (await read())!;
}
