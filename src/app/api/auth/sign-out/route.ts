import { clearedSessionCookie, endSession, sessionTokensOf } from "@/lib/auth/auth";
import { SIGN_IN_PATH } from "@/lib/auth/auth-rules";
import { database } from "@/lib/db/client";
import { route } from "@/lib/http/http";

export const dynamic = "force-dynamic";

/**
 * POST /api/auth/sign-out → 200 {signedOut: true}: ends the session in the database (a
 * copied cookie stops working too) and clears the cookie. A plain HTML form post
 * (`<form method="post" action="/api/auth/sign-out">`) is answered 303 → /sign-in instead.
 * Open without a session, so an expired one can still clear its cookie.
 */
export const POST = route(
  async (request: Request) => {
    await endSession(database().db, sessionTokensOf(request));
    const cookie = clearedSessionCookie(request);
    const contentType = request.headers.get("content-type") ?? "";
    if (/^(application\/x-www-form-urlencoded|multipart\/form-data)/i.test(contentType)) {
      return new Response(null, { status: 303, headers: { location: SIGN_IN_PATH, "set-cookie": cookie } });
    }
    return Response.json({ signedOut: true }, { headers: { "set-cookie": cookie, "cache-control": "no-store" } });
  },
  { public: true },
);
