import { describe, expect, it } from "vitest";
import { describeCache, formatShare, formatUsd } from "./format";
import {
  BUILT_IN_PRICES,
  cachedShare,
  costOf,
  PriceTable,
  priceCandidates,
  priceList,
  roundUsd,
  savedByCache,
} from "./prices";

describe("model prices", () => {
  it("price a dated snapshot and a provider-prefixed id as their model, and nothing by prefix", () => {
    const prices = new PriceTable();
    expect(prices.priceOf("gpt-4o-2024-08-06")).toMatchObject({ matched: "gpt-4o", source: "built-in" });
    expect(prices.priceOf("openai/gpt-4.1-mini")).toMatchObject({ matched: "gpt-4.1-mini" });
    expect(prices.priceOf("OpenAI/GPT-4o-mini-2024-07-18")).toMatchObject({ matched: "gpt-4o-mini" });
    expect(prices.priceOf("gpt-4o-mini")!.price).toEqual(BUILT_IN_PRICES["gpt-4o-mini"]);
    // No guessing: an unknown model is unpriced, even when a known id is its prefix.
    expect(prices.priceOf("gpt-4o-realtime-preview")).toBeNull();
    expect(prices.priceOf("llama3.1:8b")).toBeNull();
    expect(prices.priceOf("constructor")).toBeNull();
    expect(priceCandidates("openrouter/openai/gpt-4o-2024-08-06")).toEqual([
      "openrouter/openai/gpt-4o-2024-08-06",
      "gpt-4o-2024-08-06",
      "openrouter/openai/gpt-4o",
      "gpt-4o",
    ]);
  });

  it("let the person's price win at each id, most specific id first", () => {
    const custom = (model: string, input: number) => ({
      model,
      inputUsdPerMtok: input,
      cachedInputUsdPerMtok: null,
      outputUsdPerMtok: 1,
    });
    const prices = new PriceTable([custom("gpt-4o", 3), custom("gpt-4o-2024-05-13", 5), custom("llama3.1:8b", 0)]);
    expect(prices.priceOf("gpt-4o")).toMatchObject({ source: "custom", price: { inputUsdPerMtok: 3 } });
    expect(prices.priceOf("gpt-4o-2024-08-06")).toMatchObject({ source: "custom", matched: "gpt-4o" });
    expect(prices.priceOf("gpt-4o-2024-05-13")).toMatchObject({ source: "custom", price: { inputUsdPerMtok: 5 } });
    expect(prices.priceOf("gpt-4.1")).toMatchObject({ source: "built-in" });
    // A local model priced by the person: $0 input, $1 per million output tokens.
    expect(prices.costOf("llama3.1:8b", { inputTokens: 1000, outputTokens: 1000, cachedTokens: 0 })).toBeCloseTo(
      0.001,
      12,
    );
  });

  it("charge cached input at the cached rate, and at the input rate when there is none", () => {
    const price = { inputUsdPerMtok: 2, cachedInputUsdPerMtok: 0.5, outputUsdPerMtok: 8 };
    // 1M input of which 400k cached, 100k output: 600k × $2 + 400k × $0.5 + 100k × $8.
    expect(costOf(price, { inputTokens: 1_000_000, cachedTokens: 400_000, outputTokens: 100_000 })).toBeCloseTo(
      1.2 + 0.2 + 0.8,
      10,
    );
    expect(
      costOf(
        { ...price, cachedInputUsdPerMtok: null },
        { inputTokens: 1_000_000, cachedTokens: 400_000, outputTokens: 0 },
      ),
    ).toBeCloseTo(2, 10);
    // A provider reporting more cached than input tokens does not make the cost negative.
    expect(costOf(price, { inputTokens: 10, cachedTokens: 50, outputTokens: 0 })).toBeCloseTo(5e-6, 12);
  });

  it("say what the cache saved: the cached tokens at the input rate less the cached rate, and what share of input they were", () => {
    const price = { inputUsdPerMtok: 2, cachedInputUsdPerMtok: 0.5, outputUsdPerMtok: 8 };
    const tokens = { inputTokens: 1_000_000, cachedTokens: 400_000, outputTokens: 100_000 };
    // 400k cached × ($2 − $0.50) per million.
    expect(savedByCache(price, tokens)).toBeCloseTo(0.6, 10);
    expect(cachedShare(tokens)).toBeCloseTo(0.4, 10);
    // The cost plus the saving is what the same call costs with nothing cached.
    expect(costOf(price, tokens) + savedByCache(price, tokens)).toBeCloseTo(
      costOf(price, { ...tokens, cachedTokens: 0 }),
      10,
    );
    // No cached rate: cached input costs what other input costs, so nothing was saved.
    expect(savedByCache({ ...price, cachedInputUsdPerMtok: null }, tokens)).toBe(0);
    // A cached rate above the input rate saves nothing rather than a negative amount.
    expect(savedByCache({ ...price, cachedInputUsdPerMtok: 3 }, tokens)).toBe(0);
    // A provider reporting more cached than input tokens: the share and the saving stop at all of the input.
    expect(cachedShare({ inputTokens: 10, cachedTokens: 50 })).toBe(1);
    expect(savedByCache(price, { inputTokens: 10, cachedTokens: 50 })).toBeCloseTo(1.5e-5, 12);
    expect(cachedShare({ inputTokens: 0, cachedTokens: 0 })).toBe(0);

    // Through the table: a dated snapshot saves at its model's rates, an unpriced model saves nothing.
    const prices = new PriceTable();
    expect(prices.savedOf("gpt-4.1-2025-04-14", tokens)).toBeCloseTo(0.6, 10);
    expect(prices.savedOf("gpt-4o", { inputTokens: 2_000_000, cachedTokens: 2_000_000 })).toBeCloseTo(2.5, 10);
    expect(prices.savedOf("llama3.1:8b", tokens)).toBe(0);
    expect(prices.savedOf("offline", tokens)).toBe(0);
  });

  it("put the cache in words: the share of input cached and what it saved, none, or nothing to say", () => {
    const figures = (inputTokens: number, cachedTokens: number, savedUsd: number) => ({
      inputTokens,
      cachedTokens,
      cachedShare: cachedShare({ inputTokens, cachedTokens }),
      savedUsd,
    });
    expect(describeCache(figures(12_400, 7_688, 0.41))).toBe("62% of input cached · saved $0.41");
    expect(describeCache(figures(12_400, 7_688, 0.41), { short: true })).toBe("62% · saved $0.41");
    expect(describeCache(figures(12_400, 7_688, 0))).toBe("62% of input cached");
    expect(describeCache(figures(12_400, 0, 0))).toBe("none cached");
    expect(describeCache(figures(0, 0, 0))).toBeNull();
    expect(formatShare(0.004)).toBe("<1%");
    expect(formatShare(0.996)).toBe(">99%");
    expect(formatShare(1)).toBe("100%");
    expect(formatShare(0)).toBe("0%");
  });

  it("price calls at the price their rows kept, else at today's", () => {
    const prices = new PriceTable([
      { model: "gpt-4.1", inputUsdPerMtok: 5, cachedInputUsdPerMtok: null, outputUsdPerMtok: 20 },
    ]);
    const tokens = { inputTokens: 1_000_000, cachedTokens: 0, outputTokens: 0 };
    expect(prices.costOf("gpt-4.1", tokens, BUILT_IN_PRICES["gpt-4.1"])).toBe(2);
    expect(prices.costOf("gpt-4.1", tokens, null)).toBe(5);
    expect(prices.costOf("gpt-4.1", tokens)).toBe(5);
    expect(prices.costOf("llama3.1:8b", tokens, null)).toBeNull();
  });

  it("round dollars to the micro-dollar", () => {
    expect(roundUsd(0.000015100000000000001 + 0.0003168 + 0.0000015000000000000002)).toBe(0.000333);
    expect(roundUsd(0.0000004)).toBe(0);
    expect(roundUsd(12.3456785)).toBe(12.345679);
    expect(String(roundUsd(0.1 + 0.2))).toBe("0.3");
  });

  it("list built-in and custom prices together", () => {
    const list = priceList([
      { model: "gpt-4o", inputUsdPerMtok: 3, cachedInputUsdPerMtok: null, outputUsdPerMtok: 12 },
      { model: "Mistral-Large", inputUsdPerMtok: 2, cachedInputUsdPerMtok: null, outputUsdPerMtok: 6 },
    ]);
    expect(list.find((entry) => entry.model === "gpt-4o")).toMatchObject({
      builtIn: BUILT_IN_PRICES["gpt-4o"],
      custom: { inputUsdPerMtok: 3 },
    });
    expect(list.find((entry) => entry.model === "mistral-large")).toMatchObject({
      builtIn: null,
      custom: { outputUsdPerMtok: 6 },
    });
    expect(list.find((entry) => entry.model === "gpt-5")).toMatchObject({ custom: null });
  });

  it("format money so that a fraction of a cent does not read as free", () => {
    expect(formatUsd(0)).toBe("$0.00");
    expect(formatUsd(0.00123)).toBe("$0.0012");
    expect(formatUsd(0.00001)).toBe("<$0.0001");
    expect(formatUsd(0.04)).toBe("$0.04");
    expect(formatUsd(0.045)).toBe("$0.045");
    expect(formatUsd(0.5)).toBe("$0.50");
    expect(formatUsd(1234.5)).toBe("$1,234.50");
  });
});
