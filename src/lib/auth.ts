import { cache } from "react";
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { cookies, headers } from "next/headers";
import { redirect } from "next/navigation";
import type { Db } from "@/lib/db/client";
import { database } from "@/lib/db/client";
import { createSession, deleteExpiredSessions, deleteSession, findLiveSession } from "@/lib/db/queries/sessions";
import { databaseUnavailableReason } from "@/lib/db/errors";
import { env } from "@/lib/env";
import { CadreError } from "@/lib/errors";
import {
  cookieValue,
  crossSiteReason,
  isLoopbackHost,
  isStateChanging,
  looksLikeSessionToken,
  requestHost,
  SESSION_COOKIE,
  SIGN_IN_PATH,
} from "@/lib/auth-rules";

// Sign-in for Cadre (PRODUCT.md, APP_PASSWORD). One password, no users. A session is a
// row in `sessions`; the browser holds its random token in an httpOnly cookie. Every API
// route (route() in src/lib/http.ts), page (requirePageSession) and server action checks
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

export async function endSession(db: Db, token: string | undefined): Promise<void> {
  if (looksLikeSessionToken(token) && signInRequired()) await deleteSession(db, tokenHash(token));
}

export function sessionTokenOf(request: Request): string | undefined {
  return cookieValue(request.headers.get("cookie"), SESSION_COOKIE);
}

/** `Secure` only over https: a LAN install on plain http must still be able to sign in. */
function isHttps(request: Request): boolean {
  const forwarded = request.headers.get("x-forwarded-proto")?.split(",")[0]?.trim();
  return forwarded ? forwarded === "https" : new URL(request.url).protocol === "https:";
}

export function sessionCookie(request: Request, token: string): string {
  return [`${SESSION_COOKIE}=${token}`, "Path=/", "HttpOnly", "SameSite=Lax", `Max-Age=${SESSION_MAX_AGE_SECONDS}`, ...(isHttps(request) ? ["Secure"] : [])].join("; ");
}

export function clearedSessionCookie(request: Request): string {
  return [`${SESSION_COOKIE}=`, "Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=0", ...(isHttps(request) ? ["Secure"] : [])].join("; ");
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
    if (reason) throw new CadreError("forbidden:origin", `Refused: ${reason}. Changes are only accepted from Cadre's own pages.`);
  }
  if (access.public) return;
  if (!signInRequired()) {
    if (request && !isLoopbackHost(requestHost(request))) throw loopbackOnly(requestHost(request));
    return;
  }
  let live = false;
  try {
    live = request !== undefined && (await isLiveSession(database().db, sessionTokenOf(request)));
  } catch (error) {
    const why = databaseUnavailableReason(error);
    if (!why) throw error; // not the database's absence: the route answers 500 and logs it
    throw new CadreError("unavailable:database", `Could not check the session: the database does not answer right now (${why}). Try again in a few seconds.`, { cause: error });
  }
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
export async function checkPageAccess(input: { host: string | null; sessionToken: string | undefined }): Promise<PageAccess> {
  if (!signInRequired()) return isLoopbackHost(input.host) ? { allowed: true } : { allowed: false, reason: "host" };
  return (await isLiveSession(database().db, input.sessionToken)) ? { allowed: true } : { allowed: false, reason: "sign-in" };
}

/** Once per server render: layout, metadata and page all ask, the database answers once. */
const currentPageAccess = cache(async (): Promise<PageAccess> => {
  const [cookieStore, headerList] = await Promise.all([cookies(), headers()]);
  return checkPageAccess({ host: headerList.get("host"), sessionToken: cookieStore.get(SESSION_COOKIE)?.value });
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

/**
 * Failed sign-in attempts, in memory: at most `perClient` per client address and
 * `overall` in total within a sliding window. The client address comes from
 * X-Forwarded-For, which a client can forge, so the overall cap is what really bounds
 * password guessing; a person locked out by an attack waits at most one window.
 */
export class SignInAttempts {
  private readonly failures = new Map<string, number[]>();
  private all: number[] = [];

  constructor(readonly limits: { perClient: number; overall: number; windowMs: number }) {}

  /** Seconds to wait before trying again, or 0 when an attempt may be made now. */
  retryAfterSeconds(client: string, now = Date.now()): number {
    this.forgetOld(now);
    const mine = this.failures.get(client) ?? [];
    const waits: number[] = [];
    if (mine.length >= this.limits.perClient) waits.push(mine[mine.length - this.limits.perClient]! + this.limits.windowMs - now);
    if (this.all.length >= this.limits.overall) waits.push(this.all[this.all.length - this.limits.overall]! + this.limits.windowMs - now);
    return waits.length ? Math.max(1, Math.ceil(Math.max(...waits) / 1000)) : 0;
  }

  recordFailure(client: string, now = Date.now()): void {
    const mine = this.failures.get(client) ?? [];
    mine.push(now);
    this.failures.set(client, mine);
    this.all.push(now);
  }

  clear(): void {
    this.failures.clear();
    this.all = [];
  }

  private forgetOld(now: number): void {
    const cutoff = now - this.limits.windowMs;
    this.all = this.all.filter((time) => time > cutoff);
    for (const [client, times] of this.failures) {
      const recent = times.filter((time) => time > cutoff);
      if (recent.length) this.failures.set(client, recent);
      else this.failures.delete(client);
    }
  }
}

const holder = globalThis as typeof globalThis & { cadreSignInAttempts?: SignInAttempts };
/** One per process (dev hot reloads keep it). */
export const signInAttempts = (holder.cadreSignInAttempts ??= new SignInAttempts({ perClient: 5, overall: 20, windowMs: 60_000 }));

/** The client's address as far as the server can tell (see SignInAttempts for why it is not trusted further). */
export function clientAddress(request: Request): string {
  const forwarded = request.headers.get("x-forwarded-for")?.split(",")[0]?.trim();
  return forwarded || request.headers.get("x-real-ip")?.trim() || "unknown";
}
