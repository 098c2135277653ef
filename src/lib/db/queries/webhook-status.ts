import "server-only";
import { eq } from "drizzle-orm";
import type { Db } from "../client";
import { webhookSecrets } from "../schema";

/**
 * Whether a team accepts webhooks, for the team page: never selects the secret itself, so
 * nothing that renders a page can leak it.
 */
export async function getWebhookSecretStatus(
  db: Db,
  teamId: string,
): Promise<{ configured: boolean; createdAt: Date | null }> {
  const [row] = await db
    .select({ createdAt: webhookSecrets.createdAt })
    .from(webhookSecrets)
    .where(eq(webhookSecrets.teamId, teamId));
  return { configured: row !== undefined, createdAt: row?.createdAt ?? null };
}
