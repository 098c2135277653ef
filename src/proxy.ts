import { NextResponse, type NextRequest } from "next/server";
import { hasLiveSession } from "@/lib/auth/auth";
import { isLoopbackHost, isPublicPath, SIGN_IN_PATH, sessionTokensIn } from "@/lib/auth/auth-rules";
import { database } from "@/lib/db/client";
import { newNonce, NON_PAGE_POLICY, pagePolicy, setSecurityHeaders } from "@/lib/http/security-headers";
import { databaseUnavailableReason } from "@/lib/db/errors";
import { databaseAnswersForPages, databaseOutagePage } from "@/lib/http/page-outage";
import { describeForLog } from "@/lib/telemetry/log";

/**
 * The early gate (Next 16's `proxy`, formerly middleware): strangers get the sign-in page
 * or a 401 before anything renders. It is not the only check: route handlers, pages and
 * server actions verify the session themselves (src/lib/auth/auth.ts), so a request that skips
 * this file (a forged `x-middleware-subrequest`, a matcher gap) gains nothing. It is the only
 * check for one thing: a path Next cannot decode, which fails before any handler could see it.
 */
export async function proxy(request: NextRequest): Promise<Response> {
  // Every answer gets the security headers, whoever writes it: this gate, a handler, a page, an
  // error or a 404. A page's policy carries a fresh nonce, which Next reads from the request.
  const policy = request.nextUrl.pathname.startsWith("/api/")
    ? NON_PAGE_POLICY
    : pagePolicy(newNonce(), process.env.NODE_ENV === "development");
  const headers = new Headers(request.headers);
  headers.set("Content-Security-Policy", policy);
  // A page while the database does not answer: 503 and a page that tries again, not Next's 500 or a hang.
  const response =
    !request.nextUrl.pathname.startsWith("/api/") && !(await databaseAnswersForPages())
      ? databaseOutagePage()
      : await gate(request, { request: { headers } });
  setSecurityHeaders(response.headers, policy);
  return response;
}

/** `onward`: how a request that may pass goes on (with the policy in its headers, for Next). */
async function gate(request: NextRequest, onward: { request: { headers: Headers } }): Promise<Response> {
  const { pathname, search } = request.nextUrl;
  const api = pathname.startsWith("/api/");
  // Normally answered before Next by scripts/lib/client-address.mjs; here too for a server started without it.
  if (!SERVED_METHODS.includes(request.method)) {
    const message = `Cadre does not answer ${request.method.slice(0, 20)} requests; it answers ${SERVED_METHODS.join(", ")}.`;
    return Response.json(
      { error: { code: "method_not_allowed:http", message } },
      { status: 405, headers: { allow: SERVED_METHODS.join(", ") } },
    );
  }
  const password = process.env.APP_PASSWORD?.trim();

  // Next decodes a dynamic segment after this proxy and answers a bare text 500 when it cannot
  // (`/api/agents/%`, `/teams/%ZZ`): the only place to answer such a path properly is here.
  if (!isDecodablePath(pathname)) {
    if (api) {
      const message = "The path is not valid: a % in a URL must start an escape like %2F (write a literal % as %25).";
      return Response.json({ error: { code: "bad_request:path", message } }, { status: 400 });
    }
    return NextResponse.rewrite(new URL(NOT_FOUND_PATH, request.url), { ...onward, status: 404 });
  }

  if (!password) {
    // Without a password Cadre serves this computer only; see isLoopbackHost for why the Host matters.
    if (isPublicPath(pathname) || isLoopbackHost(request.headers.get("host"))) return NextResponse.next(onward);
    const message =
      "Without APP_PASSWORD, Cadre serves this computer only (localhost). Set APP_PASSWORD to serve other machines.";
    return api
      ? Response.json({ error: { code: "forbidden:host", message } }, { status: 403 })
      : new Response(message, { status: 403 });
  }

  if (isPublicPath(pathname) || (await sessionLooksValid(sessionTokensIn(request.headers.get("cookie")))))
    return NextResponse.next(onward);
  if (api) {
    return Response.json(
      { error: { code: "unauthorized:session", message: "Sign in first: this Cadre is protected by a password." } },
      { status: 401 },
    );
  }
  const signIn = new URL(SIGN_IN_PATH, request.url);
  if (pathname !== "/") signIn.searchParams.set("next", `${pathname}${search}`);
  return NextResponse.redirect(signIn);
}

/** Every method some route or page answers (also in scripts/lib/client-address.mjs). */
const SERVED_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** Where a page path that cannot be decoded is sent: Next's own not-found route (src/app/not-found.tsx). */
const NOT_FOUND_PATH = "/_not-found";

/** False for a path with a malformed percent-escape (`%`, `%ZZ`, a cut UTF-8 sequence). */
function isDecodablePath(pathname: string): boolean {
  try {
    decodeURIComponent(pathname);
    return true;
  } catch {
    return false;
  }
}

/**
 * A live session in the database. When the database cannot be asked, the request goes on:
 * what is behind the proxy checks again and fails closed.
 */
async function sessionLooksValid(tokens: readonly string[]): Promise<boolean> {
  if (tokens.length === 0) return false;
  try {
    return await hasLiveSession(database().db, tokens);
  } catch (error) {
    // One line: under a full or restarting database every request says this.
    const why = databaseUnavailableReason(error) ?? describeForLog(error);
    console.error(`[auth] proxy could not check a session (${why}); leaving it to the page or route.`);
    return true;
  }
}

/**
 * Next buffers the body of every request this proxy sees (so the proxy and the handler can both
 * read it) and answers only once that body has all arrived, even when the proxy answers 401
 * without reading it: a stranger's half-sent body would hold its 401, and a body given up
 * half-way would be logged as an "aborted" stack. So requests with a body skip the proxy; the
 * handler's own check (route(), requirePageSession) refuses them before anything reads the
 * body, and next.config.ts gives them their security headers. Exception: a path with a "%" in
 * it still comes here, body or not, since only here can a path Next cannot decode be answered.
 */
export const config = {
  matcher: [
    // Everything but Next's own static assets and the icon (next.config.ts gives those their
    // headers), as long as the request has no body: no Content-Length above 0, no Transfer-Encoding.
    {
      source: "/((?!_next/static|_next/image|favicon.ico).*)",
      missing: [
        { type: "header", key: "content-length", value: "0*[1-9][0-9]*" },
        { type: "header", key: "transfer-encoding" },
      ],
    },
    // A path with a "%" that Next may not decode (`/api/agents/%`): only this proxy can answer it.
    // With a body too, scripts/lib/client-address.mjs answers first, the body unread (under
    // `npm start` / `npm run dev`); here it would be read whole before any answer.
    {
      source: "/((?!_next/static|_next/image|favicon.ico).*%.*)",
      missing: [
        { type: "header", key: "content-length", value: "0*[1-9][0-9]*" },
        { type: "header", key: "transfer-encoding" },
      ],
    },
  ],
};
