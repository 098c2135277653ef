import "server-only";
// What a model call costs. Pure (no database): the pages, the report and the budgets share it.
// The person's own prices live in `model_prices` (queries/model-prices.ts) and win over these.

/** US dollars per million tokens. A null cached rate: cached input costs what other input costs. */
export type TokenPrice = { inputUsdPerMtok: number; cachedInputUsdPerMtok: number | null; outputUsdPerMtok: number };

/**
 * Built-in defaults: OpenAI's list prices (standard tier) as of August 2025, per million tokens
 * (the embedding models' too).
 * Prices change and discounts exist (batch, flex, contracts): every one can be overridden, and
 * models not listed added, in the price table on the Usage page. The offline model runs on no
 * provider and costs nothing.
 */
export const BUILT_IN_PRICES: Readonly<Record<string, TokenPrice>> = {
  "gpt-5": { inputUsdPerMtok: 1.25, cachedInputUsdPerMtok: 0.125, outputUsdPerMtok: 10 },
  "gpt-5-mini": { inputUsdPerMtok: 0.25, cachedInputUsdPerMtok: 0.025, outputUsdPerMtok: 2 },
  "gpt-5-nano": { inputUsdPerMtok: 0.05, cachedInputUsdPerMtok: 0.005, outputUsdPerMtok: 0.4 },
  "gpt-4.1": { inputUsdPerMtok: 2, cachedInputUsdPerMtok: 0.5, outputUsdPerMtok: 8 },
  "gpt-4.1-mini": { inputUsdPerMtok: 0.4, cachedInputUsdPerMtok: 0.1, outputUsdPerMtok: 1.6 },
  "gpt-4.1-nano": { inputUsdPerMtok: 0.1, cachedInputUsdPerMtok: 0.025, outputUsdPerMtok: 0.4 },
  "gpt-4o": { inputUsdPerMtok: 2.5, cachedInputUsdPerMtok: 1.25, outputUsdPerMtok: 10 },
  "gpt-4o-mini": { inputUsdPerMtok: 0.15, cachedInputUsdPerMtok: 0.075, outputUsdPerMtok: 0.6 },
  o3: { inputUsdPerMtok: 2, cachedInputUsdPerMtok: 0.5, outputUsdPerMtok: 8 },
  "o3-mini": { inputUsdPerMtok: 1.1, cachedInputUsdPerMtok: 0.55, outputUsdPerMtok: 4.4 },
  "o4-mini": { inputUsdPerMtok: 1.1, cachedInputUsdPerMtok: 0.275, outputUsdPerMtok: 4.4 },
  // Embedding models (recall by meaning): input only, no cache.
  "text-embedding-3-small": { inputUsdPerMtok: 0.02, cachedInputUsdPerMtok: null, outputUsdPerMtok: 0 },
  "text-embedding-3-large": { inputUsdPerMtok: 0.13, cachedInputUsdPerMtok: null, outputUsdPerMtok: 0 },
  "text-embedding-ada-002": { inputUsdPerMtok: 0.1, cachedInputUsdPerMtok: null, outputUsdPerMtok: 0 },
  offline: { inputUsdPerMtok: 0, cachedInputUsdPerMtok: 0, outputUsdPerMtok: 0 },
};

/** The price columns of a row (a model_prices row has more). */
function priceOfRow(row: TokenPrice): TokenPrice {
  return {
    inputUsdPerMtok: row.inputUsdPerMtok,
    cachedInputUsdPerMtok: row.cachedInputUsdPerMtok,
    outputUsdPerMtok: row.outputUsdPerMtok,
  };
}

/** The built-in price of exactly this id (own keys only: `constructor` is no model). */
export function builtInPrice(model: string): TokenPrice | null {
  return Object.hasOwn(BUILT_IN_PRICES, model) ? BUILT_IN_PRICES[model]! : null;
}

/** A model id as the price table takes it: a letter or digit first, then letters, digits and . _ : @ + -, with / between parts. */
export const MODEL_ID_PATTERN = /^[a-z0-9][a-z0-9._:@+-]*(?:\/[a-z0-9][a-z0-9._:@+-]*)*$/;
export const MODEL_ID_MAX_LENGTH = 200;

/** The form a model id is stored and compared in: trimmed, lower case (providers do not tell ids apart by case). */
export function normalizeModelId(model: string): string {
  return model.trim().toLowerCase();
}

/** `-2024-08-06` or `-20240806` at the end: a dated snapshot of a model. */
const DATE_SUFFIX = /-\d{4}-?\d{2}-?\d{2}$/;

/**
 * The ids a model is looked up by, most specific first: the id itself; without a provider
 * prefix (`openai/gpt-4o` → `gpt-4o`, the part after the last `/`, as OpenRouter and
 * gateways name models); and each of those without a date suffix (`gpt-4o-2024-08-06` →
 * `gpt-4o`). Nothing else: `gpt-4o-mini` never takes the price of `gpt-4o`.
 */
export function priceCandidates(model: string): string[] {
  const id = normalizeModelId(model);
  const bare = id.slice(id.lastIndexOf("/") + 1);
  const candidates = [id, bare, id.replace(DATE_SUFFIX, ""), bare.replace(DATE_SUFFIX, "")];
  return [...new Set(candidates.filter((candidate) => candidate.length > 0))];
}

export type PriceSource = "custom" | "built-in";
export type PriceMatch = {
  price: TokenPrice;
  source: PriceSource /** The id whose price applies (e.g. gpt-4o for gpt-4o-2024-08-06). */;
  matched: string;
};

/**
 * The prices in force: the person's rows over the built-in defaults. At each candidate id
 * (see priceCandidates) a row of the person's wins over a built-in price, so a price set for
 * `gpt-4o` also prices its dated snapshots, and one set for a snapshot prices only that one.
 */
export class PriceTable {
  private readonly custom: Map<string, TokenPrice>;
  private readonly memo = new Map<string, PriceMatch | null>();

  constructor(customRows: readonly ({ model: string } & TokenPrice)[] = []) {
    this.custom = new Map(customRows.map((row) => [normalizeModelId(row.model), priceOfRow(row)]));
  }

  /** The price of a model, or null: no price is known, so its calls show tokens only. */
  priceOf(model: string): PriceMatch | null {
    const known = this.memo.get(model);
    if (known !== undefined) return known;
    let match: PriceMatch | null = null;
    for (const candidate of priceCandidates(model)) {
      const custom = this.custom.get(candidate);
      if (custom) match = { price: custom, source: "custom", matched: candidate };
      else {
        const builtIn = builtInPrice(candidate);
        if (builtIn) match = { price: builtIn, source: "built-in", matched: candidate };
      }
      if (match) break;
    }
    this.memo.set(model, match);
    return match;
  }

  /**
   * The price of some calls of a model: the one their usage rows kept (the price when they were
   * made), else today's. Rows keep none when they were written before rows kept prices, or when
   * the model had no price then: a price the person adds later prices them (nothing is repriced).
   */
  priceAt(model: string, kept?: TokenPrice | null): TokenPrice | null {
    return kept ?? this.priceOf(model)?.price ?? null;
  }

  /** The cost of some tokens of one model in US dollars (at their kept price, see priceAt), or null when the model has no price. */
  costOf(model: string, tokens: TokenCounts, kept?: TokenPrice | null): number | null {
    const price = this.priceAt(model, kept);
    return price ? costOf(price, tokens) : null;
  }

  /** What the cache saved on some tokens of one model in US dollars (at their kept price, see priceAt); 0 when the model has no price. */
  savedOf(model: string, tokens: CacheCounts, kept?: TokenPrice | null): number {
    const price = this.priceAt(model, kept);
    return price ? savedByCache(price, tokens) : 0;
  }
}

/**
 * How the database finds a model's price when a usage row is written (queries/usage.ts): each
 * candidate id, most specific first, with its built-in price. The row takes the first candidate
 * with a price, the person's (model_prices) before the built-in one: PriceTable.priceOf's rule,
 * read at the moment of the call without loading the table.
 */
export function priceLookup(model: string): { rank: number; model: string; builtIn: TokenPrice | null }[] {
  return priceCandidates(model).map((candidate, rank) => ({
    rank,
    model: candidate,
    builtIn: builtInPrice(candidate),
  }));
}

/**
 * US dollars rounded to the micro-dollar (6 decimals): sums of float products carry noise
 * (0.0001230000000002) that no page or API answer should show. Rounded where costs are added
 * up and served: the report, Spend, traces and stories.
 */
export function roundUsd(value: number): number {
  return Math.round(value * 1_000_000) / 1_000_000;
}

/** Tokens as usage rows count them: `inputTokens` includes the `cachedTokens` read from the provider's cache. */
export type TokenCounts = { inputTokens: number; outputTokens: number; cachedTokens: number };

/** The input side of some tokens: what the cache arithmetic needs. */
export type CacheCounts = Pick<TokenCounts, "inputTokens" | "cachedTokens">;

/** The cached part of some input, within 0 and the input: a provider that reports more cached than input tokens is not believed. */
function cachedPart(tokens: CacheCounts): number {
  return Math.min(Math.max(tokens.cachedTokens, 0), Math.max(tokens.inputTokens, 0));
}

/** US dollars for some tokens at a price: cached input at the cached rate (or the input rate when there is none). */
export function costOf(price: TokenPrice, tokens: TokenCounts): number {
  const cached = cachedPart(tokens);
  const uncached = tokens.inputTokens - cached;
  const cachedRate = price.cachedInputUsdPerMtok ?? price.inputUsdPerMtok;
  return (
    (uncached * price.inputUsdPerMtok + cached * cachedRate + tokens.outputTokens * price.outputUsdPerMtok) / 1_000_000
  );
}

/** The share of input the provider served from its prompt cache, 0 to 1; 0 when there was no input. */
export function cachedShare(tokens: CacheCounts): number {
  return tokens.inputTokens > 0 ? cachedPart(tokens) / tokens.inputTokens : 0;
}

/**
 * US dollars the cache saved at a price: what the cached input would have cost at the input
 * rate less what it cost at the cached rate, so costOf + savedByCache is the cost had nothing
 * been cached. 0 without a cached rate (cached input then costs what other input costs), and
 * never below 0: a cached rate set above the input rate saves nothing (costOf still charges it).
 */
export function savedByCache(price: TokenPrice, tokens: CacheCounts): number {
  if (price.cachedInputUsdPerMtok === null) return 0;
  return (cachedPart(tokens) * Math.max(0, price.inputUsdPerMtok - price.cachedInputUsdPerMtok)) / 1_000_000;
}

/** One row of the price table as the Usage page lists it. */
export type PriceListEntry = { model: string; builtIn: TokenPrice | null; custom: TokenPrice | null };

/** Every built-in and custom price, by model id: what the editor shows (custom over built-in, reset goes back). */
export function priceList(customRows: readonly ({ model: string } & TokenPrice)[]): PriceListEntry[] {
  const entries = new Map<string, PriceListEntry>();
  for (const [model, price] of Object.entries(BUILT_IN_PRICES))
    entries.set(model, { model, builtIn: price, custom: null });
  for (const row of customRows) {
    const id = normalizeModelId(row.model);
    entries.set(id, { model: id, builtIn: builtInPrice(id), custom: priceOfRow(row) });
  }
  return [...entries.values()];
}
