import "server-only";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Db } from "@/lib/db/client";
import { serverKey } from "@/lib/db/queries/server-keys";

// Signed action links (issue 37): an Approve, Deny or Answer link in a notification is the
// credential for that one item and that one action, and for nothing else. Its token says what
// it is for and until when, signed with a key Cadre makes for itself (`server_keys`), so the
// worker that sends a notification and the web server that opens its link agree without
// storing any token. A link works once because its item is decided once (decideApproval's
// one-winner rule); after that it only says how the item was decided.
//
//   token = base64url("1:<action>:<channel>:<item id>:<expires, unix seconds>") "." base64url(HMAC-SHA256)
//
// Tokens travel in the query string (`/act?t=…`), which Cadre's logs and traces never keep.

const linkActions = ["approve", "deny", "answer"] as const;
export type LinkAction = (typeof linkActions)[number];
/** Which message carried the link: the decision records it (approvals.decided_via). */
const linkChannels = ["email", "webhook", "slack"] as const;
export type LinkChannel = (typeof linkChannels)[number];

export type ActionClaim = { action: LinkAction; channel: LinkChannel; itemId: string; expiresAt: Date };

export type ReadToken =
  | { valid: true; claim: ActionClaim; expired: boolean }
  /** Not a token Cadre signed: cut, changed or made up. It says nothing about any item. */
  | { valid: false };

const KEY_NAME = "action-links";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Tokens are about 120 characters; anything much longer is not worth a look. */
const MAX_TOKEN_LENGTH = 400;

const keys = new WeakMap<Db, Promise<Buffer>>();

/**
 * The signing key, made by the first process that needs it; read once per database handle and kept.
 * So voiding every link (deleting the key) takes a restart of every process (README, decision).
 */
export function actionLinkKey(db: Db): Promise<Buffer> {
  let key = keys.get(db);
  if (!key) {
    key = serverKey(db, KEY_NAME, () => randomBytes(32).toString("base64url")).then((text) =>
      Buffer.from(text, "base64url"),
    );
    key.catch(() => keys.delete(db)); // a database that did not answer is asked again next time
    keys.set(db, key);
  }
  return key;
}

function signature(key: Buffer, payload: string): Buffer {
  return createHmac("sha256", key).update(`cadre action link\n${payload}`).digest();
}

export function signActionLink(key: Buffer, claim: ActionClaim): string {
  const payload = [
    "1",
    claim.action,
    claim.channel,
    claim.itemId,
    String(Math.floor(claim.expiresAt.getTime() / 1000)),
  ].join(":");
  return `${Buffer.from(payload).toString("base64url")}.${signature(key, payload).toString("base64url")}`;
}

const TOKEN_SHAPE = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/;

/** True for a string shaped like a token (payload.signature, canonical base64url): worth checking its signature. */
export function looksLikeActionToken(token: unknown): token is string {
  if (typeof token !== "string" || token.length > MAX_TOKEN_LENGTH) return false;
  const match = TOKEN_SHAPE.exec(token);
  return match !== null && isCanonicalBase64url(match[1]!) && isCanonicalBase64url(match[2]!);
}

/**
 * Base64url that decodes and re-encodes to the same text. The last character of an encoding can
 * carry unused bits, so up to four spellings decode to the same bytes; only Cadre's own is a token
 * (one token, one spelling: nothing can tell a "changed" link apart from the one sent).
 */
function isCanonicalBase64url(text: string): boolean {
  return Buffer.from(text, "base64url").toString("base64url") === text;
}

/** Checks a token's signature first (constant time), then reads it; an expired one is still told apart from a forged one. */
export function readActionToken(key: Buffer, token: unknown, now = new Date()): ReadToken {
  if (!looksLikeActionToken(token)) return { valid: false };
  const match = TOKEN_SHAPE.exec(token)!;
  const payload = Buffer.from(match[1]!, "base64url").toString("utf8");
  const given = Buffer.from(match[2]!, "base64url");
  const expected = signature(key, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { valid: false };
  const [version, action, channel, itemId, expires] = payload.split(":");
  if (
    version !== "1" ||
    !linkActions.includes(action as LinkAction) ||
    !linkChannels.includes(channel as LinkChannel) ||
    !UUID.test(itemId ?? "") ||
    !/^\d{1,12}$/.test(expires ?? "")
  )
    return { valid: false };
  const expiresAt = new Date(Number(expires) * 1000);
  return {
    valid: true,
    claim: { action: action as LinkAction, channel: channel as LinkChannel, itemId: itemId!, expiresAt },
    expired: expiresAt.getTime() <= now.getTime(),
  };
}
