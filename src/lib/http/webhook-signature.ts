import "server-only";
import { createHmac, randomBytes } from "node:crypto";

// How a webhook delivery is signed (POST /api/hooks/:teamId; receiving one: domain/webhooks.ts):
//
//   x-cadre-timestamp: <unix seconds>
//   x-cadre-signature: sha256=<hex HMAC-SHA256(secret, `${timestamp}.${raw body}`)>
//   x-cadre-webhook-name: <optional NAME; else the body's "name"; else "hook">

export const WEBHOOK_TOLERANCE_SECONDS = 300;
export const WEBHOOK_BODY_LIMIT_BYTES = 64 * 1024;
export const WEBHOOK_HEADERS = {
  timestamp: "x-cadre-timestamp",
  signature: "x-cadre-signature",
  name: "x-cadre-webhook-name",
} as const;

export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64url")}`;
}

/** Hex HMAC-SHA256 keyed with the secret (its UTF-8 text, prefix included) over `timestamp.body`. */
export function webhookSignature(secret: string, timestamp: string, body: Uint8Array | string): string {
  return createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex");
}

/** The headers a sender sends: what the team page can show, and what tests use. */
export function signedWebhookHeaders(
  secret: string,
  body: Uint8Array | string,
  timestamp = Math.floor(Date.now() / 1000),
): Record<string, string> {
  const stamp = String(timestamp);
  return {
    [WEBHOOK_HEADERS.timestamp]: stamp,
    [WEBHOOK_HEADERS.signature]: `sha256=${webhookSignature(secret, stamp, body)}`,
  };
}
