import "server-only";
import { createHmac, timingSafeEqual } from "node:crypto";

// Slack's request signing (https://api.slack.com/authentication/verifying-requests-from-slack):
//
//   X-Slack-Request-Timestamp: <unix seconds>
//   X-Slack-Signature: v0=<hex HMAC-SHA256(signing secret, `v0:${timestamp}:${raw body}`)>
//
// A timestamp more than five minutes away is refused, so a captured request cannot be replayed
// later; within those minutes a replay decides nothing new (a decision is made once).

const SLACK_TOLERANCE_SECONDS = 300;
export const SLACK_BODY_LIMIT_BYTES = 64 * 1024;
const SLACK_HEADERS = { timestamp: "x-slack-request-timestamp", signature: "x-slack-signature" } as const;

function slackSignature(secret: string, timestamp: string, body: Uint8Array | string): string {
  return `v0=${createHmac("sha256", secret).update(`v0:${timestamp}:`).update(body).digest("hex")}`;
}

/** Why the request is not Slack's (in words for the 401), or null when its signature holds and is fresh. */
export function slackSignatureProblem(
  secret: string,
  headers: Headers,
  body: Uint8Array,
  now = Math.floor(Date.now() / 1000),
): string | null {
  const timestamp = headers.get(SLACK_HEADERS.timestamp)?.trim() ?? "";
  const given = headers.get(SLACK_HEADERS.signature)?.trim() ?? "";
  if (!/^\d{1,12}$/.test(timestamp)) return `the ${SLACK_HEADERS.timestamp} header is missing or not a number`;
  if (Math.abs(now - Number(timestamp)) > SLACK_TOLERANCE_SECONDS)
    return "its timestamp is more than five minutes away from this server's clock (a replay, or a wrong clock)";
  const expected = Buffer.from(slackSignature(secret, timestamp, body));
  const actual = Buffer.from(given);
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected))
    return "its signature does not match the signing secret (SLACK_SIGNING_SECRET)";
  return null;
}

/** The headers Slack would send: for tests. */
export function signedSlackHeaders(
  secret: string,
  body: string,
  timestamp = Math.floor(Date.now() / 1000),
): Record<string, string> {
  return {
    [SLACK_HEADERS.timestamp]: String(timestamp),
    [SLACK_HEADERS.signature]: slackSignature(secret, String(timestamp), body),
  };
}
