import { and, eq, notInArray, type SQL } from "drizzle-orm";
import { usage, type Usage } from "../../src/lib/db/schema";
import { builtInPrice, costOf } from "../../src/lib/usage/prices";
import type { BenchDatabase } from "./postgres";

/** The list price the cost figures use: what most people would run a team on. */
export const PRICED_AS = "gpt-4.1-mini";
export const LIST_PRICE = builtInPrice(PRICED_AS)!;

/** Tokens as the person is billed for them: the usage rows the engine wrote. */
export type Bill = {
  calls: number;
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
  usd: number;
  usdWithoutCache: number;
};

export function bill(rows: readonly Usage[]): Bill {
  const total = { calls: rows.length, inputTokens: 0, cachedTokens: 0, outputTokens: 0 };
  for (const row of rows) {
    total.inputTokens += row.inputTokens;
    total.cachedTokens += row.cachedTokens;
    total.outputTokens += row.outputTokens;
  }
  return {
    ...total,
    usd: costOf(LIST_PRICE, total),
    usdWithoutCache: costOf(LIST_PRICE, { ...total, cachedTokens: 0 }),
  };
}

/** Usage rows matching `where` that no earlier call of this reader returned: what one outcome cost. */
export function usageReader(database: BenchDatabase) {
  const seen = new Set<string>();
  return async (where: SQL | undefined): Promise<Usage[]> => {
    const rows = await database.db
      .select()
      .from(usage)
      .where(and(where, seen.size ? notInArray(usage.id, [...seen]) : undefined))
      .orderBy(usage.createdAt);
    for (const row of rows) seen.add(row.id);
    return rows;
  };
}

export const ofTeam = (teamId: string) => eq(usage.teamId, teamId);
export const ofAgent = (agentId: string) => eq(usage.agentId, agentId);

/** Calls by purpose, in a few words: "work 12, extraction 3, briefing 1". */
export function byPurpose(rows: readonly Usage[]): string {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.purpose, (counts.get(row.purpose) ?? 0) + 1);
  return [...counts].map(([purpose, count]) => `${purpose} ${count}`).join(", ");
}

/** Tokens as a person reads them: 812, 41.2k, 1.20M. */
export function formatTokens(tokens: number): string {
  if (tokens >= 1_000_000) return `${(tokens / 1_000_000).toFixed(2)}M`;
  if (tokens >= 1_000) return `${(tokens / 1_000).toFixed(1)}k`;
  return String(tokens);
}

export const percent = (part: number, whole: number) => (whole > 0 ? `${((part / whole) * 100).toFixed(0)}%` : "–");
export const formatUsd = (usd: number) => `$${usd < 0.01 ? usd.toFixed(4) : usd.toFixed(3)}`;
