import { parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { modelPriceBody, parseModelId, resetModelPrice, setModelPrice } from "@/lib/usage/model-prices";

export const dynamic = "force-dynamic";
/** The model id's segments: `openai/gpt-4o` arrives as two. */
type Params = { params: Promise<{ model?: string[] }> };

/** `{ inputUsdPerMtok, cachedInputUsdPerMtok?, outputUsdPerMtok }` → `{ price }`: the person's price for the model, over a built-in one. */
export const PUT = route(async (request: Request, { params }: Params) => {
  const model = parseModelId((await params).model);
  const body = await parseJsonBody(request, modelPriceBody);
  const { db } = await webEngine();
  return Response.json({ price: await setModelPrice(db, model, body) });
});

/** Removes the person's price: back to the built-in one, or none (tokens only). */
export const DELETE = route(async (_request: Request, { params }: Params) => {
  const model = parseModelId((await params).model);
  const { db } = await webEngine();
  await resetModelPrice(db, model);
  return new Response(null, { status: 204 });
});
