import { signIn } from "@/lib/auth/auth";
import { database } from "@/lib/db/client";
import { parseJsonBody, route } from "@/lib/http/http";
import { SIGN_IN_BODY_LIMIT_BYTES, signInBody } from "./schema";

export const dynamic = "force-dynamic";

/**
 * POST /api/auth/sign-in {password} → 200 {signedIn: true} with the session cookie and the
 * known-device cookie. Wrong password 401; too many failures 429 with Retry-After (a known
 * browser: 5 a minute of its own; a stranger: 5 a minute per address, 20 a minute for all
 * strangers together; see src/lib/auth/sign-in-throttle.ts).
 */
export const POST = route(
  async (request: Request) => {
    const cookies = await signIn(
      database().db,
      request,
      async () => (await parseJsonBody(request, signInBody, { maxBytes: SIGN_IN_BODY_LIMIT_BYTES })).password,
    );
    const headers = new Headers({ "cache-control": "no-store" });
    for (const cookie of cookies) headers.append("set-cookie", cookie);
    return Response.json({ signedIn: true }, { headers });
  },
  { public: true },
);
