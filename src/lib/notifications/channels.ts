import "server-only";
import { z } from "zod";
import type { Db } from "@/lib/db/client";
import {
  deleteNotificationChannel,
  insertNotificationChannel,
  listNotificationChannels,
  updateNotificationChannel,
  writeUnderNotificationChannel,
  type NotificationChannelChanges,
  type PublicNotificationChannel,
} from "@/lib/db/queries/notification-channels";
import { listNotificationDeliveries, type NotificationDelivery } from "@/lib/db/queries/notifications";
import { requireTeam, writeUnderTeam } from "@/lib/db/queries/teams";
import { notificationKinds, type Notification, type NotificationKind } from "@/lib/db/schema";
import { smtpSettings, type SmtpSettings } from "@/lib/env";
import { CadreError } from "@/lib/errors";
import { outboundUrlProblem, privateAddressesAllowed } from "@/lib/http/outbound-url";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { generateWebhookSecret } from "@/lib/http/webhook-signature";
import { EMAIL_NEEDS_SMTP } from "./email-channel";
import { enqueueTestNotification } from "./enqueue";

// A team's notification channels: what the HTTP API and the team page do with them.

/** The fields a client sends, checked the same way on create and change (the routes' schema.ts compose them). */
export const channelFields = {
  name: z.string().trim().min(1, "name is required").max(120),
  url: z
    .string()
    .trim()
    .max(2000, "url: at most 2000 characters")
    .pipe(
      z.url({
        protocol: /^https?$/,
        message: "url must be an http:// or https:// URL, such as a Slack incoming-webhook URL",
      }),
    ),
  recipient: z
    .string()
    .trim()
    .max(320)
    .pipe(z.email({ message: "recipient must be an email address, such as ops@example.com" })),
  kinds: z
    .array(z.enum(notificationKinds, { message: `kinds may hold only ${notificationKinds.join(", ")}` }))
    .min(1, `kinds: choose at least one of ${notificationKinds.join(", ")}`)
    .max(notificationKinds.length * 4)
    // Stored once each, in the product's order, however they were sent.
    .transform((kinds) => notificationKinds.filter((kind) => kinds.includes(kind))),
};

export type NewChannelInput =
  | { type: "webhook"; name: string; url: string; kinds: NotificationKind[] }
  | { type: "email"; name: string; recipient: string; kinds: NotificationKind[] };

/** The server's SMTP settings unless the caller (a test) says otherwise; 409 without them. */
function requireSmtp(options: { smtp?: SmtpSettings | null }): void {
  const smtp = options.smtp === undefined ? smtpSettings() : options.smtp;
  if (!smtp) throw new CadreError("conflict:smtp_not_configured", EMAIL_NEEDS_SMTP);
}

/** A webhook URL Cadre will not send to (credentials in it, a refused address) is a 400 now, not a failed delivery later. */
function requireDeliverableUrl(url: string, options: { allowPrivate?: boolean }): void {
  const problem = outboundUrlProblem(url, { allowPrivate: options.allowPrivate ?? privateAddressesAllowed() });
  if (problem) throw new CadreError("bad_request:validation", `url ${problem}.`);
}

/**
 * Adds a channel to the team. A webhook channel gets a new signing secret, returned here and
 * never again; an email channel needs the server's SMTP settings (409 without them).
 */
export async function createNotificationChannel(
  db: Db,
  teamId: string,
  input: NewChannelInput,
  options: { smtp?: SmtpSettings | null; allowPrivate?: boolean } = {},
): Promise<{ channel: PublicNotificationChannel; secret?: string }> {
  if (input.type === "email") requireSmtp(options);
  else requireDeliverableUrl(input.url, options);
  const values = input.type === "webhook" ? { ...input, secret: generateWebhookSecret() } : input;
  const { secret, ...channel } = await writeUnderTeam(db, teamId, (tx) =>
    insertNotificationChannel(tx, teamId, values),
  );
  return secret ? { channel, secret } : { channel };
}

/** Changes what was sent; `url` only for a webhook channel, `recipient` only for an email one. */
export async function changeNotificationChannel(
  db: Db,
  channelId: string,
  changes: NotificationChannelChanges,
  options: { allowPrivate?: boolean } = {},
): Promise<PublicNotificationChannel> {
  if (changes.url !== undefined) requireDeliverableUrl(changes.url, options);
  return writeUnderNotificationChannel(db, channelId, async (tx, channel) => {
    if (channel.type === "webhook" && changes.recipient !== undefined) {
      throw new CadreError("bad_request:validation", "recipient: this is a webhook channel; change its url instead.");
    }
    if (channel.type === "email" && changes.url !== undefined) {
      throw new CadreError("bad_request:validation", "url: this is an email channel; change its recipient instead.");
    }
    return updateNotificationChannel(tx, channelId, changes);
  });
}

/** Deletes the channel and its delivery log; what is still queued for it is dropped with it. */
export async function removeNotificationChannel(db: Db, channelId: string): Promise<void> {
  await writeUnderNotificationChannel(db, channelId, (tx) => deleteNotificationChannel(tx, channelId));
}

/** Send test: queues a "test" notification to this channel only; it shows in the delivery log like any other. */
export async function sendTestNotification(
  db: Db,
  jobs: JobQueue,
  channelId: string,
  options: { smtp?: SmtpSettings | null } = {},
): Promise<Notification> {
  return writeUnderNotificationChannel(db, channelId, async (tx, channel) => {
    if (channel.type === "email") requireSmtp(options);
    const team = await requireTeam(tx, channel.teamId);
    return enqueueTestNotification(tx, jobs, channel, team);
  });
}

/** What the team page and GET show: the channels (no secrets) and the latest deliveries. */
export async function listTeamNotifications(
  db: Db,
  teamId: string,
): Promise<{ channels: PublicNotificationChannel[]; deliveries: NotificationDelivery[] }> {
  await requireTeam(db, teamId);
  const [channels, deliveries] = await Promise.all([
    listNotificationChannels(db, teamId),
    listNotificationDeliveries(db, teamId),
  ]);
  return { channels, deliveries };
}
