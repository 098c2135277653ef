import type { Db } from "@/lib/db/client";
import type { InboxItem } from "@/lib/db/schema";
import type { JobQueue } from "@/lib/jobs/job-queue";

/** Placeholder until the notifications branch lands: no channels, nothing to send. */
export async function enqueueNotifications(_db: Db, _jobs: JobQueue, _item: InboxItem): Promise<number> {
  return 0;
}
