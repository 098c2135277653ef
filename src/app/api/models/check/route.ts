import { checkAndStoreModel } from "@/lib/domain/model-profiles";
import { parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { modelCard, offlineModelCard } from "@/lib/views/model-card";
import { checkModelBody } from "./schema";

export const dynamic = "force-dynamic";

/**
 * POST /api/models/check `{ model? }` → `{ card }`: asks the model (the configured one when
 * none is named) a few small questions on the configured server, stores what it did as its
 * profile, and answers its compatibility card. On the offline model it asks nothing.
 */
export const POST = route(async (request: Request) => {
  const { model } = await parseJsonBody(request, checkModelBody);
  const { db, config } = await webEngine();
  const profile = await checkAndStoreModel(db, model ?? null);
  return Response.json({
    card: profile ? modelCard(profile.model, profile, config.contextTokenBudget) : offlineModelCard(),
  });
});
