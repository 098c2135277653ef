import "server-only";
import { asc, eq, sql } from "drizzle-orm";
import type { Db } from "../client";
import { modelPrices, type ModelPrice } from "../schema";

import type { TokenPrice } from "@/lib/usage/prices";

/** The person's prices (src/lib/usage/prices.ts puts them over the built-in defaults). */
export function listModelPrices(db: Db): Promise<ModelPrice[]> {
  return db.select().from(modelPrices).orderBy(asc(modelPrices.model));
}

/** Sets a model's price; the id is expected normalized (normalizeModelId). */
export async function upsertModelPrice(db: Db, model: string, price: TokenPrice): Promise<ModelPrice> {
  const [row] = await db
    .insert(modelPrices)
    .values({ model, ...price })
    .onConflictDoUpdate({ target: modelPrices.model, set: { ...price, updatedAt: sql`now()` } })
    .returning();
  return row!;
}

/** Removes a model's own price; false when it had none. */
export async function deleteModelPrice(db: Db, model: string): Promise<boolean> {
  const deleted = await db
    .delete(modelPrices)
    .where(eq(modelPrices.model, model))
    .returning({ model: modelPrices.model });
  return deleted.length > 0;
}
