import "server-only";
import { timingSafeEqual } from "node:crypto";
import { WEBHOOK_HEADERS, WEBHOOK_TOLERANCE_SECONDS, webhookSignature } from "@/lib/http/webhook-signature";
import { formatLogInput } from "@/lib/core/formats";
import { queueInput } from "@/lib/domain/tasks";
import type { EngineDeps } from "@/lib/core/engine-config";
import { getTeamLead } from "@/lib/db/queries/agents";
import { createTask } from "@/lib/db/queries/tasks";
import { requireTeam, writeUnderTeam } from "@/lib/db/queries/teams";
import { deleteWebhookDeliveriesOlderThan, getWebhookSecret, recordWebhookDelivery } from "@/lib/db/queries/webhooks";
import { CadreError } from "@/lib/errors";

// Webhooks: POST /api/hooks/:teamId, signed by the sender with the team's secret.
//
//   x-cadre-timestamp: <unix seconds>
//   x-cadre-signature: sha256=<hex HMAC-SHA256(secret, `${timestamp}.${raw body}`)>
//   x-cadre-webhook-name: <optional NAME; else the body's "name"; else "hook">
//
// An accepted delivery becomes the user message `[webhook:NAME] <body>` in the lead's
// background conversation, and the lead is woken (one transaction).

/** Of the body as shown to the lead (pretty JSON can be longer than the raw body). */
export const WEBHOOK_MESSAGE_MAX_CHARS = 20_000;

// A timestamp is good for the tolerance on either side of now, so a signature stays
// usable for twice the tolerance; remember accepted ones a little longer than that.
const DELIVERY_MEMORY_SECONDS = 2 * WEBHOOK_TOLERANCE_SECONDS + 60;

const unauthorized = (what: "signature" | "timestamp" | "secret", message: string) =>
  new CadreError(`unauthorized:webhook_${what}`, message);

/**
 * Verifies a delivery and hands it to the team's lead. Throws 404 (no such team), 401
 * (no secret configured, bad or missing signature, timestamp outside the tolerance) or
 * 409 (this signed delivery was accepted before). A paused team still receives it: the
 * message waits in the lead's background conversation until the team resumes.
 */
export async function receiveWebhook(
  engine: Pick<EngineDeps, "db" | "jobs">,
  teamId: string,
  delivery: { headers: Headers; body: Uint8Array; now?: Date },
): Promise<{ leadId: string; message: string }> {
  const { db, jobs } = engine;
  await requireTeam(db, teamId);
  const stored = await getWebhookSecret(db, teamId);
  if (!stored)
    throw unauthorized(
      "secret",
      "This team has no webhook secret: create one on the team page, then sign deliveries with it.",
    );

  const timestamp = delivery.headers.get(WEBHOOK_HEADERS.timestamp)?.trim() ?? "";
  if (!/^\d{1,12}$/.test(timestamp))
    throw unauthorized("timestamp", `Missing or malformed ${WEBHOOK_HEADERS.timestamp} (unix seconds).`);
  const given = /^sha256=([0-9a-f]{64})$/i
    .exec(delivery.headers.get(WEBHOOK_HEADERS.signature)?.trim() ?? "")?.[1]
    ?.toLowerCase();
  if (!given)
    throw unauthorized("signature", `Missing or malformed ${WEBHOOK_HEADERS.signature} (sha256=<64 hex digits>).`);
  const expected = webhookSignature(stored.secret, timestamp, delivery.body);
  if (!timingSafeEqual(Buffer.from(given, "hex"), Buffer.from(expected, "hex"))) {
    throw unauthorized(
      "signature",
      "The signature does not match: it must be the HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the team's current secret.",
    );
  }
  const age = Math.floor((delivery.now ?? new Date()).getTime() / 1000) - Number(timestamp);
  if (Math.abs(age) > WEBHOOK_TOLERANCE_SECONDS) {
    const when = age > 0 ? `${age} s old` : `${-age} s in the future`;
    throw unauthorized(
      "timestamp",
      `The timestamp is ${when}; at most ${WEBHOOK_TOLERANCE_SECONDS} s either way is accepted. Check the sender's clock.`,
    );
  }

  const message = webhookMessage(delivery.headers.get(WEBHOOK_HEADERS.name), delivery.body);
  await deleteWebhookDeliveriesOlderThan(db, DELIVERY_MEMORY_SECONDS);
  // Under the team's lock: a team deleted meanwhile is a 404, not a foreign-key violation.
  const leadId = await writeUnderTeam(db, teamId, async (tx) => {
    const lead = await getTeamLead(tx, teamId);
    if (!lead) throw new CadreError("conflict:team_lead", "This team has no lead to receive the webhook.");
    // Recorded in the same transaction as the message: a failure leaves no record, so the sender's retry is accepted.
    if (!(await recordWebhookDelivery(tx, teamId, expected))) {
      throw new CadreError(
        "conflict:webhook_replay",
        "This delivery was already received (same timestamp and signature).",
      );
    }
    // A delivery starts a story of its own: a task for the lead, begun, with the delivery as its input.
    const task = await createTask(tx, {
      agentId: lead.id,
      source: "webhook",
      title: `Webhook ${message.name}`,
      description: message.body,
      started: true,
    });
    await queueInput(tx, jobs, lead.id, message.text, task.id);
    return lead.id;
  });
  return { leadId, message: message.text };
}

/** `[webhook:NAME] <body>`: JSON pretty-printed, anything else as text, cut to a size the lead can read. */
function webhookMessage(nameHeader: string | null, body: Uint8Array): { name: string; body: string; text: string } {
  const text = new TextDecoder("utf-8").decode(body);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const bodyName =
    parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
      ? (parsed as { name?: unknown }).name
      : undefined;
  const name = [nameHeader, typeof bodyName === "string" ? bodyName : null].map(webhookName).find(Boolean) || "hook";
  // Postgres text cannot hold U+0000 (JSON.stringify escapes it inside strings; raw text may carry it).
  let shown = (parsed === undefined ? text : JSON.stringify(parsed, null, 2)).replaceAll("\0", "").trim();
  if (shown.length > WEBHOOK_MESSAGE_MAX_CHARS) {
    shown = `${shown.slice(0, WEBHOOK_MESSAGE_MAX_CHARS)}\n… (truncated: ${shown.length - WEBHOOK_MESSAGE_MAX_CHARS} more characters)`;
  }
  const input = { kind: "webhook" as const, name, body: shown || "(empty body)" };
  return { name, body: input.body, text: formatLogInput(input) };
}

/** Letters, digits, `_` and `-`, at most 40: a NAME cannot break out of its brackets or forge another prefix. */
function webhookName(value: string | null): string {
  return (value ?? "").replace(/[^A-Za-z0-9_-]/g, "").slice(0, 40);
}
