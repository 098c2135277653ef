import "server-only";
// The request rules that need no database, pure functions of a request: shared by
// src/proxy.ts and by the checks every route handler and page makes (src/lib/auth/auth.ts).

export const SESSION_COOKIE = "cadre_session";
/** The known-device cookie: set at each sign-in, it lets this browser sign in again while strangers are being held back. */
export const DEVICE_COOKIE = "cadre_device";
/**
 * Over https both cookies are set as `__Host-<name>` (Secure, Path=/, no Domain): a browser
 * accepts such a cookie only from this very host, so a neighbouring subdomain cannot plant one
 * ("cookie tossing"). Over plain http (127.0.0.1, a LAN install) a browser refuses `__Host-`
 * cookies, so the plain names stay. Both names are read, every value of each is tried, and only
 * one that checks out counts: a planted duplicate can neither shadow nor replace a good cookie.
 */
export const HOST_PREFIX = "__Host-";
export const SIGN_IN_PATH = "/sign-in";

/**
 * The address of the connection a request came on, stamped on every request by the web server
 * (scripts/lib/client-address.mjs, loaded by `npm start` / `npm run dev`), over anything a client sent
 * under that name. Next itself passes on an `X-Forwarded-For` a client sent as it came.
 */
export const CLIENT_ADDRESS_HEADER = "x-cadre-client-address";

/**
 * Who a request comes from, for counting sign-in failures: with `trustProxy` (TRUST_PROXY=1:
 * the operator's reverse proxy adds the address it saw to X-Forwarded-For) the last entry of
 * X-Forwarded-For, the one that proxy wrote (the entries before it are the client's own say);
 * otherwise the connection's address. "unknown" when neither is there (a server started without
 * scripts/lib/client-address.mjs): then all strangers share one count.
 */
export function clientAddress(
  request: { headers: { get(name: string): string | null } },
  options: { trustProxy?: boolean } = {},
): string {
  const forwarded = options.trustProxy
    ? request.headers
        .get("x-forwarded-for")
        ?.split(",")
        .map((entry) => entry.trim())
        .filter(Boolean)
        .at(-1)
    : undefined;
  return (forwarded || request.headers.get(CLIENT_ADDRESS_HEADER)?.trim() || "unknown").slice(0, 100);
}

/**
 * Reachable without a session: the health probe, signing in and out, webhooks (they carry their
 * own HMAC), an action link's page and its one click (the signed token is the credential, for one
 * item: src/lib/auth/action-links.ts), Slack's buttons (Slack's signature), and the app's icons and
 * web manifest (the sign-in page shows them; they hold nothing private).
 */
const publicPaths = [
  /^\/sign-in\/?$/,
  /^\/act\/?$/,
  /^\/api\/act\/?$/,
  /^\/api\/slack\/actions\/?$/,
  /^\/api\/health\/?$/,
  /^\/api\/auth\/sign-(in|out)\/?$/,
  /^\/api\/hooks\/[^/]+\/?$/,
  /^\/(favicon\.ico|icon\.svg|apple-icon\.png|manifest\.webmanifest)$/,
];

export function isPublicPath(pathname: string): boolean {
  return publicPaths.some((pattern) => pattern.test(pathname));
}

/** A session token as we issue them: 32 random bytes, base64url. Anything else is not worth a database lookup. */
export function looksLikeSessionToken(value: string | undefined | null): value is string {
  return typeof value === "string" && /^[A-Za-z0-9_-]{43}$/.test(value);
}

/** The value of one cookie in a `Cookie` header (the first, when there are several). */
export function cookieValue(cookieHeader: string | null, name: string): string | undefined {
  return cookieValues(cookieHeader, name)[0];
}

/** Every value of the cookie called `name` (a browser sends duplicates when they differ in path or domain). */
function cookieValues(cookieHeader: string | null, name: string): string[] {
  if (!cookieHeader) return [];
  const values: string[] = [];
  for (const part of cookieHeader.split(";")) {
    const index = part.indexOf("=");
    if (index > 0 && part.slice(0, index).trim() === name) values.push(part.slice(index + 1).trim());
  }
  return values;
}

/**
 * At most this many well-formed values of one cookie are tried. Generous on purpose: over http a
 * sibling subdomain can plant one value per longer path ahead of the real one, so a small cap let
 * planted values push the owner's cookie out (the session was tried in one query, the device
 * cookie is a cheap HMAC). A browser sends at most ~180 cookies per domain anyway.
 */
const MAX_COOKIE_CANDIDATES = 16;

/** The values of a Cadre cookie to try, `__Host-` first, duplicates dropped, that pass `looksRight`. */
export function cookieCandidates(
  cookieHeader: string | null,
  name: string,
  looksRight: (value: string) => boolean,
): string[] {
  const values = [...cookieValues(cookieHeader, `${HOST_PREFIX}${name}`), ...cookieValues(cookieHeader, name)];
  return [...new Set(values.filter(looksRight))].slice(0, MAX_COOKIE_CANDIDATES);
}

/** The session tokens a request carries, to be tried one by one. */
export function sessionTokensIn(cookieHeader: string | null): string[] {
  return cookieCandidates(cookieHeader, SESSION_COOKIE, looksLikeSessionToken);
}

/** The host a request was addressed to: the `Host` header (what the browser connected to), else the URL's. */
export function requestHost(request: Request): string {
  return request.headers.get("host") ?? new URL(request.url).host;
}

/** The hostname of a `host[:port]`, lowercased, IPv6 brackets removed. */
function hostnameOf(host: string): string {
  try {
    return new URL(`http://${host}`).hostname.toLowerCase().replace(/^\[|\]$/g, "");
  } catch {
    return "";
  }
}

/**
 * True for names of this computer. Without APP_PASSWORD the server listens on 127.0.0.1
 * only; refusing other Host names too stops DNS rebinding, where a web page re-points its
 * own name at 127.0.0.1 and then reads the app as if it were same-origin.
 */
export function isLoopbackHost(host: string | null | undefined): boolean {
  if (!host) return false;
  const name = hostnameOf(host);
  return name === "localhost" || name.endsWith(".localhost") || name === "::1" || /^127(\.\d{1,3}){3}$/.test(name);
}

export function isStateChanging(method: string): boolean {
  return !["GET", "HEAD", "OPTIONS"].includes(method.toUpperCase());
}

/** `host[:port]` normalised for comparison (default ports dropped), or undefined when unparsable. */
function normaliseHost(protocol: string, host: string): string | undefined {
  try {
    return new URL(`${protocol}//${host}`).host.toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * Why a state-changing request must be refused as cross-site, or null when it may go on.
 *
 * - `Origin` present: it must name the host the request was sent to: the `Host` header or
 *   the URL's host (the address Next listens on), and `X-Forwarded-Host` only with
 *   `trustProxy` (TRUST_PROXY=1: the operator says a reverse proxy sets it; any client can
 *   send it, so otherwise it proves nothing). `null`, a foreign origin or a non-http(s) one
 *   is refused.
 * - `Origin` absent: browsers send it with every cross-origin request and with every
 *   same-origin one that is not GET/HEAD, so its absence means a non-browser client
 *   (curl, a script), which has no ambient cookie to abuse; allowed, unless the browser's
 *   `Sec-Fetch-Site` says the request came from another site.
 */
export function crossSiteReason(request: Request, options: { trustProxy?: boolean } = {}): string | null {
  const origin = request.headers.get("origin");
  if (origin === null) {
    const site = request.headers.get("sec-fetch-site");
    return site === "cross-site" || site === "same-site"
      ? `the request came from another site (Sec-Fetch-Site: ${site})`
      : null;
  }
  if (origin.trim().toLowerCase() === "null") return "its Origin is null (a sandboxed page, a file or a redirect)";
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return `its Origin (${origin.slice(0, 100)}) is not a URL`;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    return `its Origin (${parsed.protocol}) is not http(s)`;
  const originHost = parsed.host.toLowerCase();
  const forwarded = options.trustProxy ? request.headers.get("x-forwarded-host")?.split(",")[0]?.trim() : undefined;
  const candidates = [request.headers.get("host"), forwarded, new URL(request.url).host].filter(
    (host): host is string => Boolean(host),
  );
  if (candidates.some((host) => normaliseHost(parsed.protocol, host) === originHost)) return null;
  return `its Origin (${origin.slice(0, 100)}) is not this server`;
}

/** A path to return to after signing in: only a local path, never `//evil.example` or a full URL. */
export function safeReturnPath(value: unknown): string {
  if (typeof value !== "string" || !value.startsWith("/") || value.startsWith("//") || value.startsWith("/\\"))
    return "/";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses (a header or log line split by a return path)
  if (/[\u0000-\u001f\u007f]/.test(value) || value.length > 2000) return "/";
  if (value === SIGN_IN_PATH || value.startsWith(`${SIGN_IN_PATH}?`) || value.startsWith(`${SIGN_IN_PATH}/`))
    return "/";
  return value;
}
