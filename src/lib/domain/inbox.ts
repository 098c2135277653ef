import "server-only";
import type { Db } from "@/lib/db/client";
import { createInboxItem, createInboxItemOnce, type NewInboxItem } from "@/lib/db/queries/inbox-items";
import type { InboxItem } from "@/lib/db/schema";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { enqueueNotifications } from "@/lib/notifications/enqueue";

/**
 * Puts an item in the person's inbox and queues its notifications to the team's channels,
 * in one transaction (the caller's, or its own): an item never goes out without being in
 * the inbox, nor lands there without going out. With a dedupe key it is created once
 * (an alert: alerts.ts); null when it existed already. Delivery itself happens later, on the
 * notification queue, so no agent ever waits for a mail server.
 */
export async function postToInbox(db: Db, jobs: JobQueue, item: NewInboxItem): Promise<InboxItem | null> {
  return db.transaction(async (tx) => {
    const created = item.dedupeKey
      ? await createInboxItemOnce(tx, { ...item, dedupeKey: item.dedupeKey })
      : await createInboxItem(tx, item);
    if (created) await enqueueNotifications(tx, jobs, created);
    return created;
  });
}
