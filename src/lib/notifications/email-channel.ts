import "server-only";
import nodemailer from "nodemailer";
import type { Notification } from "@/lib/db/schema";
import type { SmtpSettings } from "@/lib/env";
import type { ActionLink } from "./action-links";
import { DeliveryError } from "./delivery-error";

// Email notifications: one message per attempt through the SMTP server in SMTP_URL, from
// SMTP_FROM. The Message-ID is built from the notification id, the same on every attempt, so
// a retry after a lost answer is recognisable as the same message (mail clients thread it as
// one; a receiving system can drop the duplicate).

export const EMAIL_NEEDS_SMTP = "Email notifications need SMTP_URL and SMTP_FROM set on the server.";

/** `<notification-id@cadre>`: the email's idempotency key. */
function notificationMessageId(notificationId: string): string {
  return `<${notificationId}@cadre>`;
}

/** Sends the notification to the recipient. Throws a DeliveryError that says what went wrong. */
export async function sendEmailNotification(
  smtp: SmtpSettings | null,
  recipient: string,
  notification: Pick<Notification, "id" | "payload"> & { actions?: readonly ActionLink[] },
  signal?: AbortSignal,
): Promise<void> {
  // Not a passing trouble: nothing changes until the server is configured and restarted.
  if (!smtp) throw new DeliveryError(EMAIL_NEEDS_SMTP, { permanent: true });
  const { title, summary, link } = notification.payload;
  const transport = nodemailer.createTransport({
    url: smtp.url,
    // nodemailer's defaults wait minutes on a server that does not answer; a retry is better.
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  });
  const abort = () => transport.close();
  signal?.addEventListener("abort", abort, { once: true });
  try {
    await transport.sendMail({
      from: smtp.from,
      to: recipient,
      subject: title,
      text: emailText(summary, link, notification.actions ?? []),
      messageId: notificationMessageId(notification.id),
      headers: { "X-Cadre-Delivery": notification.id },
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/\s+/g, " ").slice(0, 300) : String(error);
    throw new DeliveryError(`could not send the email to ${recipient} through ${smtpServer(smtp.url)}: ${reason}`, {
      cause: error,
    });
  } finally {
    signal?.removeEventListener("abort", abort);
    transport.close();
  }
}

/**
 * The email's text: the summary, a line per action link, and the item's page. The links open a
 * page that asks for one more click, so a mail scanner that follows them decides nothing.
 */
function emailText(summary: string, link: string, actions: readonly ActionLink[]): string {
  const lines = [summary, ""];
  if (actions.length > 0) {
    for (const action of actions) lines.push(`${action.label}: ${action.url}`);
    const until = actions[0]!.expiresAt.toUTCString().replace(/:\d\d GMT$/, " UTC");
    lines.push(
      "",
      `Each link opens a page in Cadre where one click confirms; no sign-in needed. It works once, until ${until}.`,
      "",
    );
  }
  lines.push(`Open in Cadre: ${link}`, "");
  return lines.join("\n");
}

/** The server as the log shows it: host and port, never the credentials in the URL. */
function smtpServer(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return "the SMTP server";
  }
}
