import { knownDeviceOf } from "@/lib/auth/auth";
import { clientAddress } from "@/lib/auth/auth-rules";
import { env } from "@/lib/env";
import { CadreError } from "@/lib/errors";
import { actOnClaim, checkActionToken } from "@/lib/engine/action-links";
import { parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { actBody } from "./schema";

export const dynamic = "force-dynamic";

/**
 * POST /api/act?t=TOKEN {reason?, answer?}: the one click on the page a signed action link opens
 * (/act). No session: the token is the credential, for its one item and action only. A forged
 * token is counted by the sign-in throttle (429 when too many came from one address); a genuine
 * one never is. A forged token is a 404
 * (not_found:action_link), an expired one too (not_found:action_link_expired); otherwise 200 with
 * the item's state after: decided now, or already settled (the page then says how).
 */
export const POST = route(
  async (request: Request) => {
    const token = new URL(request.url).searchParams.get("t");
    const { db, jobs } = await webEngine();
    // A browser that signed in here before is held back only by its own forged links; a genuine
    // link is never held back (checkActionToken).
    const device = await knownDeviceOf(request);
    const claim = await checkActionToken(
      db,
      token,
      device ? { device } : { client: clientAddress(request, { trustProxy: env().TRUST_PROXY }) },
    );
    if (claim === "invalid")
      throw new CadreError("not_found:action_link", "This link is not one Cadre made, or part of it was changed.");
    if ("expired" in claim)
      throw new CadreError("not_found:action_link_expired", "This link has expired; open the item in Cadre to decide.");
    const body = await parseJsonBody(request, actBody);
    const state = await actOnClaim(db, jobs, claim, body);
    return Response.json({ state: state.state }, { headers: { "cache-control": "no-store" } });
  },
  { public: true },
);
