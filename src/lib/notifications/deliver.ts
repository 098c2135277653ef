import "server-only";
import type { Db } from "@/lib/db/client";
import { getNotificationChannel } from "@/lib/db/queries/notification-channels";
import {
  beginNotificationAttempt,
  getNotification,
  giveUpOnNotification,
  markNotificationSent,
  recordNotificationFailure,
} from "@/lib/db/queries/notifications";
import type { Notification, NotificationChannel } from "@/lib/db/schema";
import { smtpSettings, type SmtpSettings } from "@/lib/env";
import type { OutboundPolicy } from "@/lib/http/outbound-url";
import type { JobQueue, NotificationAttempt } from "@/lib/jobs/job-queue";
import { actionLinksOf } from "./action-links";
import { DeliveryError, deliveryErrorMessage } from "./delivery-error";
import { sendEmailNotification } from "./email-channel";
import { postWebhookNotification } from "./webhook-channel";

/** `outbound`: where webhooks may go (outbound-url.ts); the environment's policy unless a test brings its own. */
export type DeliverySettings = { smtp: SmtpSettings | null; outbound?: OutboundPolicy };
export type DeliveryOutcome = "sent" | "failed" | "skipped";
type Log = (message: string, error?: unknown) => void;

const CHANNEL_OFF = "Not sent: the channel was turned off before it went out.";
const WORKER_DIED = "The last attempt did not finish (its worker stopped), and no more attempts were left.";

/** The worker's side: deliver each queued notification, and hear of those pg-boss gave up on. */
export async function workNotifications(db: Db, jobs: JobQueue, log: Log): Promise<void> {
  const settings: DeliverySettings = { smtp: smtpSettings() };
  await jobs.workNotifications(
    async (attempt) => {
      try {
        await deliverNotification(db, attempt, settings);
      } catch (error) {
        log(`[notifications] ${deliveryErrorMessage(error)}${attempt.lastAttempt ? "" : " (will retry)"}`);
        throw error;
      }
    },
    async (notificationId) => {
      if (await giveUpOnNotification(db, notificationId, WORKER_DIED))
        log(`[notifications] gave up on notification ${notificationId}: ${WORKER_DIED}`);
    },
  );
}

/**
 * One attempt at one notification. Already sent, given up on or gone (a job delivered again
 * after its worker died, or a deleted channel): nothing to do. Otherwise the attempt is counted
 * first, then the channel is tried (no transaction is held over the network): a success marks it
 * sent; a failure records its error and throws so pg-boss retries it with backoff, unless this
 * was the last attempt or retrying cannot help, which mark it failed.
 *
 * A worker killed between the receiver's answer and `sent` leaves it pending: the retry sends
 * it again with the same idempotency key (the notification id), which is what the key is for.
 */
export async function deliverNotification(
  db: Db,
  attempt: NotificationAttempt,
  settings: DeliverySettings = { smtp: smtpSettings() },
): Promise<DeliveryOutcome> {
  const { notificationId } = attempt;
  const notification = await getNotification(db, notificationId);
  if (notification?.status !== "pending") return "skipped";
  const channel = await getNotificationChannel(db, notification.channelId);
  if (!channel) return "skipped";
  // Turning a channel off stops what is still queued for it too (a test is the exception: it was asked for).
  if (!channel.enabled && notification.kind !== "test") {
    await recordNotificationFailure(db, notificationId, CHANNEL_OFF, { final: true });
    return "failed";
  }
  if (!(await beginNotificationAttempt(db, notificationId))) return "skipped";

  try {
    await sendThroughChannel(db, channel, notification, settings, attempt.signal);
  } catch (error) {
    const message = deliveryErrorMessage(error);
    const permanent = error instanceof DeliveryError && error.permanent;
    await recordNotificationFailure(db, notificationId, message, { final: permanent || attempt.lastAttempt });
    if (permanent) return "failed";
    throw new DeliveryError(
      `notification ${notificationId} to "${channel.name}", attempt ${attempt.attempt}: ${message}`,
      { cause: error },
    );
  }
  await markNotificationSent(db, notificationId);
  return "sent";
}

async function sendThroughChannel(
  db: Db,
  channel: NotificationChannel,
  notification: Notification,
  settings: DeliverySettings,
  signal: AbortSignal,
): Promise<void> {
  switch (channel.type) {
    case "webhook": {
      if (!channel.url || !channel.secret)
        throw new DeliveryError("This webhook channel has no URL or secret: delete it and add it again.", {
          permanent: true,
        });
      const actions = {
        links: await actionLinksOf(db, notification.payload, "webhook"),
        slack: await actionLinksOf(db, notification.payload, "slack"),
      };
      return postWebhookNotification(
        { url: channel.url, secret: channel.secret },
        { ...notification, actions },
        signal,
        settings.outbound,
      );
    }
    case "email": {
      if (!channel.recipient)
        throw new DeliveryError("This email channel has no recipient: delete it and add it again.", {
          permanent: true,
        });
      const actions = await actionLinksOf(db, notification.payload, "email");
      return sendEmailNotification(settings.smtp, channel.recipient, { ...notification, actions }, signal);
    }
  }
}
