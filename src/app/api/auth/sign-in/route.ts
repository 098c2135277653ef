import { clientAddress, passwordMatches, sessionCookie, signInAttempts, signInRequired, startSession } from "@/lib/auth";
import { database } from "@/lib/db/client";
import { CadreError } from "@/lib/errors";
import { errorResponse, parseJsonBody, route } from "@/lib/http";
import { plural } from "@/lib/plural";
import { SIGN_IN_BODY_LIMIT_BYTES, signInBody } from "./schema";

export const dynamic = "force-dynamic";

/**
 * POST /api/auth/sign-in {password} → 200 {signedIn: true} with the session cookie.
 * Wrong password 401; too many failures (5 a minute per client, 20 in all) 429 with Retry-After.
 */
export const POST = route(
  async (request: Request) => {
    if (!signInRequired()) throw new CadreError("not_found:sign_in", "Sign-in is off: APP_PASSWORD is not set, so no password is needed.");
    const client = clientAddress(request);
    // Checked before the password is looked at, so a locked-out guesser learns nothing, not even a right guess.
    const wait = signInAttempts.retryAfterSeconds(client);
    if (wait > 0) {
      return errorResponse(429, "rate_limited:sign_in", `Too many sign-in attempts. Try again in ${plural(wait, "second")}.`, { "retry-after": String(wait) });
    }
    const { password } = await parseJsonBody(request, signInBody, { maxBytes: SIGN_IN_BODY_LIMIT_BYTES });
    if (!passwordMatches(password)) {
      signInAttempts.recordFailure(client);
      console.warn(`[auth] failed sign-in from ${client.slice(0, 100)}`);
      throw new CadreError("unauthorized:password", "Wrong password.");
    }
    const { token } = await startSession(database().db);
    return Response.json({ signedIn: true }, { headers: { "set-cookie": sessionCookie(request, token), "cache-control": "no-store" } });
  },
  { public: true },
);
