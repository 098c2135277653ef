import { route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { listPrices } from "@/lib/usage/model-prices";

export const dynamic = "force-dynamic";

/** `{ prices: [{ model, builtIn, custom }] }`: the built-in prices and the person's own (custom wins). */
export const GET = route(async () => {
  const { db } = await webEngine();
  return Response.json({ prices: await listPrices(db) });
});
