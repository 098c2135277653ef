import "server-only";
import type { Notification } from "@/lib/db/schema";
import { signedWebhookHeaders } from "@/lib/http/webhook-signature";
import type { ActionLink } from "./action-links";
import { DeliveryError, isTimeout, networkErrorCode } from "./delivery-error";
import {
  isPublicAddress,
  outboundPolicy,
  outboundRequest,
  OutboundUrlRefused,
  type OutboundPolicy,
} from "@/lib/http/outbound-url";
import { maskUrl } from "@/lib/util/redact";

// Outbound webhooks: one POST per attempt, signed like inbound webhooks (src/lib/webhooks.ts)
// so a receiver verifies both the same way:
//
//   content-type: application/json
//   x-cadre-timestamp: <unix seconds of this attempt>
//   x-cadre-signature: sha256=<hex HMAC-SHA256(channel secret, `${timestamp}.${raw body}`)>
//   idempotency-key, x-cadre-delivery: <notification id> (the same on every attempt)
//
// The body carries Slack's `text` beside Cadre's own fields, so a Slack incoming-webhook URL
// works as the channel's URL with nothing in between (Slack ignores the other fields).

const WEBHOOK_NOTIFICATION_TIMEOUT_MS = 10_000;
const NOTIFICATION_HEADERS = { idempotencyKey: "idempotency-key", delivery: "x-cadre-delivery" } as const;

const ERROR_BODY_CHARS = 200;

type WebhookNotificationBody = {
  id: string;
  type: string;
  title: string;
  summary: string;
  link: string;
  text: string;
  /** An approval's Approve and Deny links, a question's Answer link: each opens a page that asks for one click. */
  actions?: { action: string; label: string; url: string }[];
  /** Slack Block Kit: the text, and buttons a Slack app with interactivity sends to /api/slack/actions. */
  blocks?: unknown[];
};

/** The links of a notification, for the body: `links` for any receiver, `slack` for the buttons (signed for Slack). */
export type WebhookActions = { links: readonly ActionLink[]; slack: readonly ActionLink[] };

/** What a receiver gets: the same bytes on every attempt (the payload and its links were fixed when the notification was made). */
function webhookNotificationBody(
  notification: Pick<Notification, "id" | "payload"> & { actions?: WebhookActions },
): string {
  const { type, title, summary, link } = notification.payload;
  const links = notification.actions?.links ?? [];
  const text = slackText(notification.payload, links);
  return JSON.stringify({
    id: notification.id,
    type,
    title,
    summary,
    link,
    text,
    ...(links.length > 0
      ? {
          actions: links.map(({ action, label, url }) => ({ action, label, url })),
          blocks: slackBlocks(text, notification.actions?.slack ?? []),
        }
      : {}),
  } satisfies WebhookNotificationBody);
}

const escapeMrkdwn = (text: string) => text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** Slack mrkdwn: the title in bold, the summary, the action links, a link; `&`, `<` and `>` escaped as Slack asks, so text cannot forge a link. */
function slackText(payload: Notification["payload"], links: readonly ActionLink[]): string {
  const actions = links.map((each) => `<${escapeMrkdwn(each.url)}|${each.label}>`).join(" · ");
  return `*${escapeMrkdwn(payload.title)}*\n${escapeMrkdwn(payload.summary)}\n${actions ? `${actions} · ` : ""}<${escapeMrkdwn(payload.link)}|Open in Cadre>`;
}

/**
 * The message as Slack blocks: its text, then a button per action. Approve and Deny decide from
 * Slack (the interactivity endpoint checks Slack's signature and the button's token); Answer
 * needs words, so it opens the answer page.
 */
function slackBlocks(text: string, slack: readonly ActionLink[]): unknown[] {
  const button = (each: ActionLink) =>
    each.action === "answer"
      ? { type: "button", action_id: "cadre_answer", text: { type: "plain_text", text: each.label }, url: each.url }
      : {
          type: "button",
          action_id: `cadre_${each.action}`,
          text: { type: "plain_text", text: each.label },
          style: each.action === "approve" ? "primary" : "danger",
          value: each.token,
        };
  return [
    { type: "section", text: { type: "mrkdwn", text } },
    ...(slack.length > 0 ? [{ type: "actions", block_id: "cadre_actions", elements: slack.map(button) }] : []),
  ];
}

/**
 * POSTs the notification to the channel's URL, under the outbound-URL policy (outbound-url.ts:
 * the address is checked as it is connected to). A 2xx is delivered. A 307/308 redirect is
 * followed (it keeps the POST and its body), each hop checked again; any other answer, no
 * connection, no answer within 10 s or a refused address throws a DeliveryError that says what
 * happened, for the delivery log and a retry.
 */
export async function postWebhookNotification(
  channel: { url: string; secret: string },
  notification: Pick<Notification, "id" | "payload"> & { actions?: WebhookActions },
  signal?: AbortSignal,
  policy: OutboundPolicy = outboundPolicy(),
): Promise<void> {
  const body = webhookNotificationBody(notification);
  const target = maskUrl(channel.url);
  const timeout = AbortSignal.timeout(WEBHOOK_NOTIFICATION_TIMEOUT_MS);
  let answer: Awaited<ReturnType<typeof outboundRequest>>;
  try {
    answer = await outboundRequest(
      channel.url,
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "Cadre-Notifications",
          ...signedWebhookHeaders(channel.secret, body),
          [NOTIFICATION_HEADERS.idempotencyKey]: notification.id,
          [NOTIFICATION_HEADERS.delivery]: notification.id,
        },
        body,
        // Followed only when the redirect keeps the POST (307/308): see below.
        redirect: "manual",
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      },
      policy,
      { follow: [307, 308] },
    );
  } catch (error) {
    // The address was refused: no retry will change that (an edit of the channel will).
    if (error instanceof OutboundUrlRefused) throw new DeliveryError(error.message, { cause: error, permanent: true });
    throw new DeliveryError(describeFetchFailure(error, target, timeout), { cause: error });
  }
  const { response } = answer;
  if (response.ok) {
    await response.body?.cancel().catch(() => {});
    return;
  }
  // What a private address answers is not the receiver's to say on a page: only a public one's words are quoted.
  let excerpt = "";
  if (isPublicAddress(answer.address)) excerpt = await readExcerpt(response);
  else await response.body?.cancel().catch(() => {});
  const location = response.headers.get("location");
  // A 301/302/303 would turn the POST into a GET elsewhere: say so rather than follow it.
  const redirect =
    response.status >= 300 && response.status < 400
      ? ` (a redirect to ${location ? maskUrl(URL.parse(location, answer.url)?.href ?? location) : "?"}; use the final URL)`
      : "";
  throw new DeliveryError(
    `HTTP ${response.status} from ${maskUrl(answer.url)}${redirect}${excerpt ? `: ${excerpt}` : ""}`,
  );
}

function describeFetchFailure(error: unknown, target: string, timeout: AbortSignal): string {
  if (timeout.aborted || isTimeout(error))
    return `no answer from ${target} within ${WEBHOOK_NOTIFICATION_TIMEOUT_MS / 1000} s`;
  if (error instanceof Error && error.name === "AbortError")
    return `the attempt to reach ${target} was interrupted (the worker stopped); it is retried`;
  const code = networkErrorCode(error);
  return `could not connect to ${target}: ${code ?? (error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error))}`;
}

/** The first characters of an error answer, read no further than needed: a receiver may send a lot. */
async function readExcerpt(response: Response): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    while (text.length < ERROR_BODY_CHARS * 4) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    // What was read so far is enough to go on.
  } finally {
    await reader.cancel().catch(() => {});
  }
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > ERROR_BODY_CHARS ? `${flat.slice(0, ERROR_BODY_CHARS)}…` : flat;
}
