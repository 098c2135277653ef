import type { Db } from "@/lib/db/client";
import type { InboxItem } from "@/lib/db/schema";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { postToInbox } from "./inbox";

/**
 * An `alert` in the person's inbox (and on the team's notification channels): something
 * failed or cannot go on without them. Each alert has a key naming what it is about
 * ("task-failed:<id>"); raising the same alert again adds nothing, so a failure seen by
 * several sessions, retries or workers is one alert. Runs in the caller's transaction,
 * with the change it reports.
 */
export async function raiseAlert(
  db: Db,
  jobs: JobQueue,
  alert: { teamId: string; agentId: string; taskId?: string | null; key: string; title: string; summary: string; content: string },
): Promise<InboxItem | null> {
  return postToInbox(db, jobs, {
    teamId: alert.teamId,
    agentId: alert.agentId,
    type: "alert",
    taskId: alert.taskId ?? null,
    dedupeKey: alert.key,
    title: alert.title.slice(0, 200),
    summary: alert.summary.slice(0, 1000),
    content: alert.content,
  });
}
