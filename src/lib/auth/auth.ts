import "server-only";
import { cache } from "react";
import { createHash, createHmac, randomBytes, scrypt, timingSafeEqual } from "node:crypto";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import type { Db } from "@/lib/db/client";
import { database } from "@/lib/db/client";
import {
  anyLiveSession,
  createSession,
  deleteExpiredSessions,
  deleteSession,
  findLiveSession,
} from "@/lib/db/queries/sessions";
import { databaseUnavailableReason } from "@/lib/db/errors";
import { loggable } from "@/lib/telemetry/log";
import { env } from "@/lib/env";
import { CadreError } from "@/lib/errors";
import { refusalMessage, signInThrottle, type Attempter, type SignInAttempt } from "@/lib/auth/sign-in-throttle";
import {
  clientAddress,
  cookieCandidates,
  crossSiteReason,
  DEVICE_COOKIE,
  HOST_PREFIX,
  isLoopbackHost,
  isStateChanging,
  looksLikeSessionToken,
  requestHost,
  SESSION_COOKIE,
  sessionTokensIn,
  SIGN_IN_PATH,
} from "@/lib/auth/auth-rules";

// Sign-in for Cadre (PRODUCT.md, APP_PASSWORD). One password, no users. A session is a
// row in `sessions`; the browser holds its random token in an httpOnly cookie. Every API
// route (route() in src/lib/http/http.ts), page (requirePageSession) and server action checks
// the session itself: src/proxy.ts only turns strangers away early, and is not trusted.

export const SESSION_MAX_AGE_SECONDS = 30 * 24 * 60 * 60;

/** True when APP_PASSWORD is set: then everything but the public paths needs a session. */
export function signInRequired(): boolean {
  return env().APP_PASSWORD !== undefined;
}

function password(): string {
  const value = env().APP_PASSWORD;
  if (value === undefined) throw new CadreError("not_found:sign_in", "Sign-in is off: APP_PASSWORD is not set.");
  return value;
}

/** Constant-time: both sides are hashed to the same length first, so neither length nor content leaks through timing. */
export function passwordMatches(given: string): boolean {
  const expected = env().APP_PASSWORD;
  if (expected === undefined) return false;
  const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** Keyed with the password: changing APP_PASSWORD signs everybody out, and a stored hash is useless without the cookie. */
function tokenHash(token: string): string {
  return createHmac("sha256", password()).update(token).digest("hex");
}

/** A new session: its token goes into the cookie, only its hash into the database. */
export async function startSession(db: Db): Promise<{ token: string; expiresAt: Date }> {
  const token = randomBytes(32).toString("base64url");
  const expiresAt = new Date(Date.now() + SESSION_MAX_AGE_SECONDS * 1000);
  await deleteExpiredSessions(db);
  await createSession(db, { tokenHash: tokenHash(token), expiresAt });
  return { token, expiresAt };
}

export async function isLiveSession(db: Db, token: string | undefined): Promise<boolean> {
  if (!looksLikeSessionToken(token)) return false;
  return (await findLiveSession(db, tokenHash(token))) !== null;
}

/** True when any of the tokens (a request's session cookies, duplicates included) is a live session. */
export async function hasLiveSession(db: Db, tokens: readonly string[]): Promise<boolean> {
  return anyLiveSession(db, tokens.filter((token) => looksLikeSessionToken(token)).map(tokenHash));
}

export async function endSession(db: Db, tokens: readonly string[]): Promise<void> {
  if (!signInRequired()) return;
  for (const token of tokens) if (looksLikeSessionToken(token)) await deleteSession(db, tokenHash(token));
}

export function sessionTokensOf(request: Request): string[] {
  return sessionTokensIn(request.headers.get("cookie"));
}

/** The cookie's name as set on this answer: `__Host-` over https (see HOST_PREFIX). */
function cookieName(request: Request, name: string): string {
  return isHttps(request) ? `${HOST_PREFIX}${name}` : name;
}

/** `Secure` only over https: a LAN install on plain http must still be able to sign in. */
function isHttps(request: Request): boolean {
  const forwarded = request.headers.get("x-forwarded-proto")?.split(",")[0]?.trim();
  return forwarded ? forwarded === "https" : new URL(request.url).protocol === "https:";
}

export function sessionCookie(request: Request, token: string): string {
  return [
    `${cookieName(request, SESSION_COOKIE)}=${token}`,
    "Path=/",
    "HttpOnly",
    "SameSite=Lax",
    `Max-Age=${SESSION_MAX_AGE_SECONDS}`,
    ...(isHttps(request) ? ["Secure"] : []),
  ].join("; ");
}

export function clearedSessionCookie(request: Request): string {
  return [
    `${cookieName(request, SESSION_COOKIE)}=`,
    "Path=/",
    "HttpOnly",
    "SameSite=Lax",
    "Max-Age=0",
    ...(isHttps(request) ? ["Secure"] : []),
  ].join("; ");
}

export type Access = {
  /** No session needed (the health probe, sign-in, webhooks). */
  public?: boolean;
  /** Skip the Origin check: only for requests authenticated by something other than a cookie (webhook HMACs). */
  crossOrigin?: boolean;
};

/**
 * The check route() makes before every API handler: throws a 401/403 CadreError when the
 * request may not go on. It looks only at the request, never at headers a proxy might have
 * added, so skipping src/proxy.ts (e.g. a forged `x-middleware-subrequest`) gains nothing.
 */
export async function checkApiAccess(request: Request | undefined, access: Access = {}): Promise<void> {
  if (request && !access.crossOrigin && isStateChanging(request.method)) {
    const reason = crossSiteReason(request, { trustProxy: env().TRUST_PROXY });
    if (reason)
      throw new CadreError("forbidden:origin", `Refused: ${reason}. Changes are only accepted from Cadre's own pages.`);
  }
  if (access.public) return;
  if (!signInRequired()) {
    if (request && !isLoopbackHost(requestHost(request))) throw loopbackOnly(requestHost(request));
    return;
  }
  const live = request !== undefined && (await sessionIsLive(sessionTokensOf(request)));
  if (!live) throw new CadreError("unauthorized:session", "Sign in first: this Cadre is protected by a password.");
}

function loopbackOnly(host: string): CadreError {
  return new CadreError(
    "forbidden:host",
    `Refused a request addressed to ${host.slice(0, 100)}: without APP_PASSWORD, Cadre serves this computer only (localhost). Set APP_PASSWORD to serve other machines.`,
  );
}

export type PageAccess = { allowed: true } | { allowed: false; reason: "sign-in" | "host" };

/** The page check without Next's request context, so it can be tested directly. */
export async function checkPageAccess(input: {
  host: string | null;
  sessionTokens: readonly string[];
}): Promise<PageAccess> {
  if (!signInRequired()) return isLoopbackHost(input.host) ? { allowed: true } : { allowed: false, reason: "host" };
  return (await sessionIsLive(input.sessionTokens)) ? { allowed: true } : { allowed: false, reason: "sign-in" };
}

/**
 * isLiveSession for a route's or a page's check. The query's parameter is the token's hash, and
 * what is thrown here is logged (by route() or by Next itself): it never carries parameters. A
 * database starting, full or gone is a 503 to come back to.
 */
async function sessionIsLive(tokens: readonly string[]): Promise<boolean> {
  try {
    return await hasLiveSession(database().db, tokens);
  } catch (error) {
    const why = databaseUnavailableReason(error);
    if (!why) throw loggable(error); // not the database's absence: a 500, logged
    throw new CadreError(
      "unavailable:database",
      `Could not check the session: the database does not answer right now (${why}). Try again in a few seconds.`,
      { cause: loggable(error) },
    );
  }
}

/** Once per server render: layout, metadata and page all ask, the database answers once. */
const currentPageAccess = cache(async (): Promise<PageAccess> => {
  const headerList = await headers();
  return checkPageAccess({ host: headerList.get("host"), sessionTokens: sessionTokensIn(headerList.get("cookie")) });
});

/**
 * For pages, layouts' data, `generateMetadata` and server actions: returns when the
 * visitor may see the app; otherwise redirects to the sign-in page (which brings them
 * back to `returnTo`), or throws for a request addressed to a foreign host.
 */
export async function requirePageSession(returnTo?: string): Promise<void> {
  const access = await currentPageAccess();
  if (access.allowed) return;
  if (access.reason === "host") throw loopbackOnly("a host other than localhost");
  redirect(returnTo ? `${SIGN_IN_PATH}?next=${encodeURIComponent(returnTo)}` : SIGN_IN_PATH);
}

/** True when the visitor is signed in (or sign-in is off): for a layout deciding whether to show the navigation. */
export async function hasPageSession(): Promise<boolean> {
  return (await currentPageAccess()).allowed;
}

/** A year: a browser that signs in at least once a year stays known. Renewed at each sign-in. */
export const DEVICE_MAX_AGE_SECONDS = 365 * 24 * 60 * 60;

let deviceKeyCache: { password: string; key: Promise<Buffer> } | undefined;

/**
 * The key known-device cookies are signed with: derived from APP_PASSWORD (a new password forgets
 * every device, as it ends every session) through scrypt, so a copied cookie is no shortcut to
 * guessing the password offline. Derived once per process.
 */
function deviceKey(): Promise<Buffer> {
  const current = password();
  if (deviceKeyCache?.password !== current) {
    const key = new Promise<Buffer>((resolve, reject) =>
      scrypt(current, "cadre known-device cookie", 32, (error, derived) => (error ? reject(error) : resolve(derived))),
    );
    deviceKeyCache = { password: current, key };
  }
  return deviceKeyCache.key;
}

async function deviceSignature(id: string): Promise<string> {
  return createHmac("sha256", await deviceKey())
    .update(id)
    .digest("base64url");
}

/** The id of the known device this request's cookie names, when its signature holds; else null (a stranger). */
export async function knownDeviceOf(request: Request): Promise<string | null> {
  if (!signInRequired()) return null;
  const shape = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;
  // Every value is tried: a duplicate planted before the real one must not make the owner a stranger.
  for (const value of cookieCandidates(request.headers.get("cookie"), DEVICE_COOKIE, (value) => shape.test(value))) {
    const [, id, signature] = shape.exec(value) as unknown as [string, string, string];
    if (timingSafeEqual(Buffer.from(signature), Buffer.from(await deviceSignature(id)))) return id;
  }
  return null;
}

/**
 * `<id>.<HMAC>`. Over http sent only to the sign-in and sign-out routes (Path=/api/auth); over
 * https as `__Host-cadre_device`, which a browser accepts only with Path=/.
 */
async function deviceCookie(request: Request, id: string): Promise<string> {
  const value = `${id}.${await deviceSignature(id)}`;
  return [
    `${cookieName(request, DEVICE_COOKIE)}=${value}`,
    isHttps(request) ? "Path=/" : "Path=/api/auth",
    "HttpOnly",
    "SameSite=Strict",
    `Max-Age=${DEVICE_MAX_AGE_SECONDS}`,
    ...(isHttps(request) ? ["Secure"] : []),
  ].join("; ");
}

/**
 * POST /api/auth/sign-in's use case. The attempt is counted (reserved, sign-in-throttle.ts)
 * before `readPassword` reads the body, in the same step as the check: an attempt that must
 * wait learns nothing, not even that its password was right, and attempts whose bodies arrive
 * together cannot all pass a check none of them has been counted in yet. A browser with a valid
 * known-device cookie is held back only by its own failures; a stranger by its address's and by
 * all strangers' together. Returns the Set-Cookie values: the session, and the known-device
 * cookie (kept, or new), renewed.
 */
export async function signIn(db: Db, request: Request, readPassword: () => Promise<string>): Promise<string[]> {
  if (!signInRequired())
    throw new CadreError("not_found:sign_in", "Sign-in is off: APP_PASSWORD is not set, so no password is needed.");
  const device = await knownDeviceOf(request);
  const client = clientAddress(request, { trustProxy: env().TRUST_PROXY });
  const who: Attempter = device ? { device } : { client };
  const attempt = reserveAttempt(who);
  let given: string;
  try {
    given = await readPassword();
  } catch (error) {
    attempt.unchecked();
    throw error;
  }
  if (!passwordMatches(given)) {
    attempt.wrong();
    console.warn(`[auth] failed sign-in from ${client}${device ? " (a browser that signed in here before)" : ""}`);
    throw new CadreError("unauthorized:password", "Wrong password.");
  }
  attempt.right();
  const { token } = await startSession(db);
  return [sessionCookie(request, token), await deviceCookie(request, device ?? randomBytes(16).toString("base64url"))];
}

/**
 * Counts an attempt at a credential (a password, an action link, a Slack signature) before it is
 * compared; throws the 429 when this browser, address or all strangers must wait.
 */
export function reserveAttempt(who: Attempter): SignInAttempt {
  const reserved = signInThrottle.reserve(who);
  if ("refusal" in reserved)
    throw new CadreError("rate_limited:sign_in", refusalMessage(reserved.refusal), {
      retryAfterSeconds: reserved.refusal.retryAfterSeconds,
    });
  return reserved.attempt;
}
