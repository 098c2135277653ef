import "server-only";
import { z } from "zod";
import type { Db } from "@/lib/db/client";
import { deleteModelPrice, listModelPrices, upsertModelPrice } from "@/lib/db/queries/model-prices";
import { CadreError } from "@/lib/errors";
import {
  MODEL_ID_MAX_LENGTH,
  MODEL_ID_PATTERN,
  normalizeModelId,
  priceList,
  type TokenPrice,
  type PriceListEntry,
} from "./prices";

/** The largest price taken, in US dollars per million tokens: far above any model's, within the column (numeric(12,4)). */
const MAX_USD_PER_MTOK = 1_000_000;

const usdPerMtok = (what: string) =>
  z
    .number({ error: `${what} must be a number of US dollars per million tokens.` })
    .min(0, `${what} cannot be negative.`)
    .max(
      MAX_USD_PER_MTOK,
      `${what} is at most ${MAX_USD_PER_MTOK.toLocaleString("en-US")} US dollars per million tokens.`,
    )
    // The column keeps 4 decimals: a finer price would be stored rounded, unlike what was sent.
    .refine(
      (value) => Math.abs(value * 10_000 - Math.round(value * 10_000)) < 1e-6,
      `${what} takes at most 4 decimals (0.0001 US dollars per million tokens).`,
    );

/** A model's price as the price table editor sends it. No cached rate (null or absent): cached input costs the input rate. */
export const modelPriceBody = z.strictObject({
  inputUsdPerMtok: usdPerMtok("inputUsdPerMtok"),
  cachedInputUsdPerMtok: usdPerMtok("cachedInputUsdPerMtok").nullable().optional(),
  outputUsdPerMtok: usdPerMtok("outputUsdPerMtok"),
});

/**
 * A model id from the path (its segments, as a catch-all route gives them), normalized;
 * a 400 that says the rules when it breaks them.
 */
export function parseModelId(segments: string[] | string | undefined): string {
  const raw = Array.isArray(segments) ? segments.join("/") : (segments ?? "");
  const model = normalizeModelId(raw);
  if (model.length === 0 || model.length > MODEL_ID_MAX_LENGTH || !MODEL_ID_PATTERN.test(model)) {
    throw new CadreError(
      "bad_request:model",
      `"${raw.slice(0, 100)}" is not a model id: use 1 to ${MODEL_ID_MAX_LENGTH} letters, digits and . _ : @ + -, starting with a letter or digit, with / between a provider and a model (openai/gpt-4o).`,
    );
  }
  return model;
}

export function listPrices(db: Db): Promise<PriceListEntry[]> {
  return listModelPrices(db).then(priceList);
}

/** Sets the person's price for a model (over its built-in one, if any). */
export async function setModelPrice(
  db: Db,
  model: string,
  body: z.infer<typeof modelPriceBody>,
): Promise<PriceListEntry> {
  const price: TokenPrice = {
    inputUsdPerMtok: body.inputUsdPerMtok,
    cachedInputUsdPerMtok: body.cachedInputUsdPerMtok ?? null,
    outputUsdPerMtok: body.outputUsdPerMtok,
  };
  const row = await upsertModelPrice(db, model, price);
  return priceList([row]).find((entry) => entry.model === model)!;
}

/** Removes the person's price: the model goes back to its built-in price, or to none. 404 when it had none of the person's. */
export async function resetModelPrice(db: Db, model: string): Promise<void> {
  if (!(await deleteModelPrice(db, model))) {
    throw new CadreError("not_found:model_price", `There is no price of your own for ${model} to remove.`);
  }
}
