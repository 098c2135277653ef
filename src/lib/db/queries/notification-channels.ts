import "server-only";
import { and, asc, eq, sql } from "drizzle-orm";
import { notFound } from "@/lib/errors";
import type { Db } from "../client";
import { notificationChannels, teams, type NotificationChannel, type NotificationKind } from "../schema";

/** A channel as pages and the API show it: never its secret, which is shown once when it is made. */
export type PublicNotificationChannel = Omit<NotificationChannel, "secret">;

// Every column but the secret: what a listing selects, so no page or response can carry it.
const publicColumns = {
  id: notificationChannels.id,
  teamId: notificationChannels.teamId,
  type: notificationChannels.type,
  name: notificationChannels.name,
  url: notificationChannels.url,
  recipient: notificationChannels.recipient,
  kinds: notificationChannels.kinds,
  enabled: notificationChannels.enabled,
  createdAt: notificationChannels.createdAt,
  updatedAt: notificationChannels.updatedAt,
};

export type NewNotificationChannel =
  | { type: "webhook"; name: string; url: string; secret: string; kinds: NotificationKind[] }
  | { type: "email"; name: string; recipient: string; kinds: NotificationKind[] };

export async function insertNotificationChannel(
  db: Db,
  teamId: string,
  input: NewNotificationChannel,
): Promise<NotificationChannel> {
  const [channel] = await db
    .insert(notificationChannels)
    .values({ teamId, ...input })
    .returning();
  return channel!;
}

/** Oldest first, so a team's list does not reorder as channels are added. */
export function listNotificationChannels(db: Db, teamId: string): Promise<PublicNotificationChannel[]> {
  return db
    .select(publicColumns)
    .from(notificationChannels)
    .where(eq(notificationChannels.teamId, teamId))
    .orderBy(asc(notificationChannels.createdAt));
}

/** With its secret: for signing a delivery, never for showing. */
export async function getNotificationChannel(db: Db, channelId: string): Promise<NotificationChannel | null> {
  const [channel] = await db.select().from(notificationChannels).where(eq(notificationChannels.id, channelId));
  return channel ?? null;
}

/**
 * The ids of the team's enabled channels that take this kind: the one query an inbox item
 * pays for notifications, on the team index (a team has a handful of channels at most).
 * FOR KEY SHARE, as the notifications' foreign key would take it anyway: a channel deleted at
 * this moment is either skipped or waits for the caller's commit, so it can never fail the
 * caller's transaction (an agent's) with a foreign-key violation.
 */
export async function listChannelIdsForKind(db: Db, teamId: string, kind: NotificationKind): Promise<string[]> {
  const rows = await db
    .select({ id: notificationChannels.id })
    .from(notificationChannels)
    .where(
      and(
        eq(notificationChannels.teamId, teamId),
        eq(notificationChannels.enabled, true),
        sql`${notificationChannels.kinds} @> ${JSON.stringify([kind])}::jsonb`,
      ),
    )
    .orderBy(asc(notificationChannels.createdAt))
    .for("key share");
  return rows.map((row) => row.id);
}

export type NotificationChannelChanges = Partial<{
  name: string;
  url: string;
  recipient: string;
  kinds: NotificationKind[];
  enabled: boolean;
}>;

export async function updateNotificationChannel(
  db: Db,
  channelId: string,
  changes: NotificationChannelChanges,
): Promise<PublicNotificationChannel> {
  const [channel] = await db
    .update(notificationChannels)
    .set({ ...changes, updatedAt: sql`now()` })
    .where(eq(notificationChannels.id, channelId))
    .returning(publicColumns);
  if (!channel) throw notFound("notification_channel", channelId);
  return channel;
}

/** Its delivery log goes with it (cascade). */
export async function deleteNotificationChannel(db: Db, channelId: string): Promise<void> {
  const deleted = await db
    .delete(notificationChannels)
    .where(eq(notificationChannels.id, channelId))
    .returning({ id: notificationChannels.id });
  if (deleted.length === 0) throw notFound("notification_channel", channelId);
}

/**
 * Runs `write` in a transaction that holds the channel's team first (see writeUnderTeam in
 * teams.ts: a team deleted meanwhile makes this a 404, not a foreign-key violation), then
 * reads the channel again; 404 `not_found:notification_channel` when it is gone.
 */
export function writeUnderNotificationChannel<T>(
  db: Db,
  channelId: string,
  write: (tx: Db, channel: NotificationChannel) => Promise<T>,
): Promise<T> {
  return db.transaction(async (tx) => {
    const [held] = await tx
      .select({ id: teams.id })
      .from(teams)
      .innerJoin(notificationChannels, eq(notificationChannels.teamId, teams.id))
      .where(eq(notificationChannels.id, channelId))
      .for("no key update", { of: teams });
    const channel = held ? await getNotificationChannel(tx, channelId) : null;
    if (!channel) throw notFound("notification_channel", channelId);
    return write(tx, channel);
  });
}
