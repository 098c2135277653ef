import "server-only";
import type { Db } from "@/lib/db/client";
import { listChannelIdsForKind } from "@/lib/db/queries/notification-channels";
import { insertNotifications, type NotificationPayload } from "@/lib/db/queries/notifications";
import type { InboxItem, Notification, NotificationChannel, Team } from "@/lib/db/schema";
import { env, publicUrl } from "@/lib/env";
import type { JobQueue } from "@/lib/jobs/job-queue";

// Notifications are an outbox: a `notifications` row per channel and its pg-boss job, written
// in the transaction that creates the inbox item. A rollback leaves neither; a commit leaves
// both, and a worker delivers them later. So an agent never waits on a network, and nothing
// is sent about an item that never came to be.

/** The link in a notification: the item's own page. */
function inboxItemLink(itemId: string): string {
  return `${publicUrl()}/inbox/${itemId}`;
}

/**
 * What the notification's action links act on (deliver.ts signs them as it sends): fixed here,
 * expiry included, so every attempt sends the same links.
 */
function actionOf(item: InboxItem): Pick<NotificationPayload, "action"> {
  const expiresAt = new Date(Date.now() + env().ACTION_LINK_TTL_HOURS * 3_600_000).toISOString();
  if (item.approvalId) return { action: { kind: "approval", id: item.approvalId, expiresAt } };
  if (item.questionId) return { action: { kind: "question", id: item.questionId, expiresAt } };
  return {};
}

/**
 * Queues a notification of the inbox item to each enabled channel of its team that takes its
 * type, in the caller's transaction (the one that created the item). Returns how many. With no
 * such channel this is one indexed select; it never touches the network.
 */
export async function enqueueNotifications(db: Db, jobs: JobQueue, item: InboxItem): Promise<number> {
  const channelIds = await listChannelIdsForKind(db, item.teamId, item.type);
  if (channelIds.length === 0) return 0;
  const payload: NotificationPayload = {
    type: item.type,
    title: item.title,
    summary: item.summary,
    link: inboxItemLink(item.id),
    ...actionOf(item),
  };
  // A savepoint when the caller holds a transaction (it should): the rows and their jobs stand or fall together either way.
  const queued = await db.transaction(async (tx) => {
    const rows = await insertNotifications(
      tx,
      channelIds.map((channelId) => ({
        channelId,
        teamId: item.teamId,
        inboxItemId: item.id,
        kind: item.type,
        payload,
      })),
    );
    for (const row of rows) await jobs.sendNotification(tx, row.id);
    return rows;
  });
  return queued.length;
}

/**
 * Send test: a "test" notification to this one channel, whatever its kinds and even while it
 * is off (to try it before turning it on). It goes through the same queue and delivery log.
 */
export async function enqueueTestNotification(
  db: Db,
  jobs: JobQueue,
  channel: Pick<NotificationChannel, "id" | "name" | "teamId">,
  team: Pick<Team, "name">,
): Promise<Notification> {
  const payload: NotificationPayload = {
    type: "test",
    title: `Test notification from Cadre (${team.name})`,
    summary: `If you can read this, the channel "${channel.name}" works: briefings, questions, approvals and alerts it is set to receive will arrive here.`,
    link: `${publicUrl()}/teams/${channel.teamId}`,
  };
  return db.transaction(async (tx) => {
    const [row] = await insertNotifications(tx, [
      { channelId: channel.id, teamId: channel.teamId, inboxItemId: null, kind: "test", payload },
    ]);
    await jobs.sendNotification(tx, row!.id);
    return row!;
  });
}
