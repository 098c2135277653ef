import { db } from "@/lib/db/client";
import { checkConnectionsAndModel } from "@/lib/domain/model-profiles";
import { env } from "@/lib/env";
import { route } from "@/lib/http/http";
import { modelCard } from "@/lib/views/model-card";

export const dynamic = "force-dynamic";

/**
 * POST /api/connection-check → { model, search, compatibility }: `model` and `search` each
 * `{ state, message }`, whether the configured model server and Tavily answer (reachable, key
 * refused, model missing, unreachable, not configured); `compatibility`, when the server serves
 * the configured model, that model's card after a check of how it behaves (its profile stored),
 * else null. POST: it spends a search and a few small model requests.
 */
export const POST = route(async (_request: Request) => {
  const { profile, ...connections } = await checkConnectionsAndModel(db);
  return Response.json({
    ...connections,
    compatibility: profile && modelCard(profile.model, profile, env().CONTEXT_TOKEN_BUDGET),
  });
});
