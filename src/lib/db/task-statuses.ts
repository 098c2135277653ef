// A task's statuses by what they mean, named once: the engine, the queries' SQL (taskStatusIn,
// lib/db/queries/tasks.ts) and the pages use these, never a list typed out again.
// Client-safe: no imports but a type.
import type { TaskStatus } from "@/lib/db/schema";

/** Not ended: waiting to be taken up, under way, or waiting for an answer or a decision. */
export const openTaskStatuses = ["pending", "in_progress", "waiting_input"] as const satisfies TaskStatus[];
/** Taken up and not ended: what a session works on or a Stop cancels (a pending task has not begun). */
export const activeTaskStatuses = ["in_progress", "waiting_input"] as const satisfies TaskStatus[];
/** Ended: a final status stays final, whoever writes later (setTaskStatus). */
export const finalTaskStatuses = ["completed", "failed", "cancelled"] as const satisfies TaskStatus[];

export type OpenTaskStatus = (typeof openTaskStatuses)[number];

export function isOpenTask(status: string | null | undefined): status is OpenTaskStatus {
  return (openTaskStatuses as readonly (string | null | undefined)[]).includes(status);
}

export function isActiveTask(status: string | null | undefined): status is (typeof activeTaskStatuses)[number] {
  return (activeTaskStatuses as readonly (string | null | undefined)[]).includes(status);
}

export function isFinalTask(status: string | null | undefined): status is (typeof finalTaskStatuses)[number] {
  return (finalTaskStatuses as readonly (string | null | undefined)[]).includes(status);
}
