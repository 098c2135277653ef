import "server-only";
import { and, desc, eq, sql } from "drizzle-orm";
import type { Db } from "../client";
import { notificationChannels, notifications, type Notification, type NotificationStatus } from "../schema";

export type NotificationPayload = Notification["payload"];

export type NewNotification = {
  channelId: string;
  teamId: string;
  inboxItemId: string | null;
  kind: string;
  payload: NotificationPayload;
};

export async function insertNotifications(db: Db, rows: NewNotification[]): Promise<Notification[]> {
  if (rows.length === 0) return [];
  return db.insert(notifications).values(rows).returning();
}

export async function getNotification(db: Db, notificationId: string): Promise<Notification | null> {
  const [row] = await db.select().from(notifications).where(eq(notifications.id, notificationId));
  return row ?? null;
}

/**
 * Counts an attempt as begun (attempts + 1, last_attempt_at), only while the notification is
 * still pending: null when it was sent or given up on meanwhile (a redelivered job), or is gone.
 */
export async function beginNotificationAttempt(db: Db, notificationId: string): Promise<Notification | null> {
  const [row] = await db
    .update(notifications)
    .set({ attempts: sql`${notifications.attempts} + 1`, lastAttemptAt: sql`clock_timestamp()` })
    .where(and(eq(notifications.id, notificationId), eq(notifications.status, "pending")))
    .returning();
  return row ?? null;
}

export async function markNotificationSent(db: Db, notificationId: string): Promise<void> {
  await db
    .update(notifications)
    .set({ status: "sent", sentAt: sql`clock_timestamp()`, lastError: null })
    .where(and(eq(notifications.id, notificationId), eq(notifications.status, "pending")));
}

/** Records why an attempt failed; `final` also gives up on it (status failed). A sent notification stays sent. */
export async function recordNotificationFailure(
  db: Db,
  notificationId: string,
  error: string,
  options: { final: boolean },
): Promise<void> {
  // status is always set (to itself when not final): the live-event trigger fires on updates
  // of status or attempts only, and the delivery log should show the error as it is recorded.
  const status: NotificationStatus = options.final ? "failed" : "pending";
  await db
    .update(notifications)
    .set({ lastError: error, status })
    .where(and(eq(notifications.id, notificationId), eq(notifications.status, "pending")));
}

/**
 * Gives up on a notification still pending (pg-boss retried it as often as it would), keeping
 * the last attempt's error, or `reason` when that attempt left none (its worker died).
 */
export async function giveUpOnNotification(db: Db, notificationId: string, reason: string): Promise<boolean> {
  const updated = await db
    .update(notifications)
    .set({ status: "failed", lastError: sql`coalesce(${notifications.lastError}, ${reason})` })
    .where(and(eq(notifications.id, notificationId), eq(notifications.status, "pending")))
    .returning({ id: notifications.id });
  return updated.length > 0;
}

export type NotificationDelivery = Pick<
  Notification,
  | "id"
  | "channelId"
  | "inboxItemId"
  | "kind"
  | "status"
  | "attempts"
  | "lastError"
  | "createdAt"
  | "lastAttemptAt"
  | "sentAt"
> & { channelName: string; title: string };

/** The team's delivery log, newest first. */
export function listNotificationDeliveries(db: Db, teamId: string, limit = 50): Promise<NotificationDelivery[]> {
  return db
    .select({
      id: notifications.id,
      channelId: notifications.channelId,
      channelName: notificationChannels.name,
      inboxItemId: notifications.inboxItemId,
      kind: notifications.kind,
      title: sql<string>`${notifications.payload}->>'title'`,
      status: notifications.status,
      attempts: notifications.attempts,
      lastError: notifications.lastError,
      createdAt: notifications.createdAt,
      lastAttemptAt: notifications.lastAttemptAt,
      sentAt: notifications.sentAt,
    })
    .from(notifications)
    .innerJoin(notificationChannels, eq(notificationChannels.id, notifications.channelId))
    .where(eq(notifications.teamId, teamId))
    .orderBy(desc(notifications.createdAt), desc(notifications.id))
    .limit(limit);
}
