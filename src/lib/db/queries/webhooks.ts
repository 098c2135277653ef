import "server-only";
import { eq, sql } from "drizzle-orm";
import type { Db } from "../client";
import { webhookDeliveries, webhookSecrets, type WebhookSecret } from "../schema";

export async function getWebhookSecret(db: Db, teamId: string): Promise<WebhookSecret | null> {
  const [row] = await db.select().from(webhookSecrets).where(eq(webhookSecrets.teamId, teamId));
  return row ?? null;
}

/** Creates or replaces the team's secret: the old one stops working at once. */
export async function setWebhookSecret(db: Db, teamId: string, secret: string): Promise<WebhookSecret> {
  const [row] = await db
    .insert(webhookSecrets)
    .values({ teamId, secret })
    .onConflictDoUpdate({ target: webhookSecrets.teamId, set: { secret, createdAt: sql`now()` } })
    .returning();
  return row!;
}

/** True when there was a secret to delete. */
export async function deleteWebhookSecret(db: Db, teamId: string): Promise<boolean> {
  const deleted = await db
    .delete(webhookSecrets)
    .where(eq(webhookSecrets.teamId, teamId))
    .returning({ teamId: webhookSecrets.teamId });
  return deleted.length > 0;
}

/**
 * Records a delivery by its signature; false when it was recorded before (a replay).
 * A concurrent twin waits on the first one's row and then sees the conflict.
 */
export async function recordWebhookDelivery(db: Db, teamId: string, signature: string): Promise<boolean> {
  const inserted = await db
    .insert(webhookDeliveries)
    .values({ teamId, signature })
    .onConflictDoNothing()
    .returning({ teamId: webhookDeliveries.teamId });
  return inserted.length > 0;
}

/** Forgets deliveries received more than `seconds` ago (by the database's clock, which stamped them). */
export async function deleteWebhookDeliveriesOlderThan(db: Db, seconds: number): Promise<void> {
  await db
    .delete(webhookDeliveries)
    .where(sql`${webhookDeliveries.receivedAt} < now() - make_interval(secs => ${seconds})`);
}
