import "server-only";
import type { Db } from "@/lib/db/client";
import { listModelPrices } from "@/lib/db/queries/model-prices";
import { getTeamUsageTodayByModel, type ModelTokens } from "@/lib/db/queries/usage";
import { cachedShare, PriceTable, roundUsd } from "./prices";

/** The prices in force now: the person's rows over the built-in defaults. */
export async function loadPriceTable(db: Db): Promise<PriceTable> {
  return new PriceTable(await listModelPrices(db));
}

/**
 * Tokens and cost of some usage, and the cache's part of its input; models without a price add
 * tokens but no cost (and save nothing), and are named. Each call is priced at the price its row
 * kept, else today's (PriceTable.priceAt); dollars rounded to the micro-dollar.
 */
export type Spend = {
  calls: number;
  /** Of the calls, those whose tokens are Cadre's estimate (cut off before the provider counted them). */
  estimatedCalls: number;
  tokens: number;
  costUsd: number;
  unpricedModels: string[];
  inputTokens: number;
  cachedTokens: number;
  /** cachedTokens / inputTokens, 0 to 1. */
  cachedShare: number;
  /** What the cached tokens saved against the input rate (see savedByCache). */
  savedUsd: number;
};

export function spendOf(rows: readonly ModelTokens[], prices: PriceTable): Spend {
  const spend: Spend = {
    calls: 0,
    estimatedCalls: 0,
    tokens: 0,
    costUsd: 0,
    unpricedModels: [],
    inputTokens: 0,
    cachedTokens: 0,
    cachedShare: 0,
    savedUsd: 0,
  };
  for (const row of rows) {
    spend.calls += row.calls;
    spend.estimatedCalls += row.estimatedCalls;
    spend.tokens += row.inputTokens + row.outputTokens;
    spend.inputTokens += row.inputTokens;
    spend.cachedTokens += row.cachedTokens;
    spend.savedUsd += prices.savedOf(row.model, row, row.price);
    const cost = prices.costOf(row.model, row, row.price);
    if (cost === null) {
      if (!spend.unpricedModels.includes(row.model)) spend.unpricedModels.push(row.model);
    } else spend.costUsd += cost;
  }
  spend.costUsd = roundUsd(spend.costUsd);
  spend.savedUsd = roundUsd(spend.savedUsd);
  spend.cachedShare = cachedShare(spend);
  return spend;
}

/** What the team spent since the start of the current UTC day (input + output tokens, and their cost). */
export async function teamSpendToday(db: Db, teamId: string, prices?: PriceTable): Promise<Spend> {
  const [rows, table] = await Promise.all([getTeamUsageTodayByModel(db, teamId), prices ?? loadPriceTable(db)]);
  return spendOf(rows, table);
}
