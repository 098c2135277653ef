import { describe, expect, it } from "vitest";
import { formatUsd } from "./format";
import { BUILT_IN_PRICES, costOf, PriceTable, priceCandidates, priceList } from "./prices";

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
    const custom = (model: string, input: number) => ({ model, inputUsdPerMtok: input, cachedInputUsdPerMtok: null, outputUsdPerMtok: 1 });
    const prices = new PriceTable([custom("gpt-4o", 3), custom("gpt-4o-2024-05-13", 5), custom("llama3.1:8b", 0)]);
    expect(prices.priceOf("gpt-4o")).toMatchObject({ source: "custom", price: { inputUsdPerMtok: 3 } });
    expect(prices.priceOf("gpt-4o-2024-08-06")).toMatchObject({ source: "custom", matched: "gpt-4o" });
    expect(prices.priceOf("gpt-4o-2024-05-13")).toMatchObject({ source: "custom", price: { inputUsdPerMtok: 5 } });
    expect(prices.priceOf("gpt-4.1")).toMatchObject({ source: "built-in" });
    // A local model priced by the person: $0 input, $1 per million output tokens.
    expect(prices.costOf("llama3.1:8b", { inputTokens: 1000, outputTokens: 1000, cachedTokens: 0 })).toBeCloseTo(0.001, 12);
  });

  it("charge cached input at the cached rate, and at the input rate when there is none", () => {
    const price = { inputUsdPerMtok: 2, cachedInputUsdPerMtok: 0.5, outputUsdPerMtok: 8 };
    // 1M input of which 400k cached, 100k output: 600k × $2 + 400k × $0.5 + 100k × $8.
    expect(costOf(price, { inputTokens: 1_000_000, cachedTokens: 400_000, outputTokens: 100_000 })).toBeCloseTo(1.2 + 0.2 + 0.8, 10);
    expect(costOf({ ...price, cachedInputUsdPerMtok: null }, { inputTokens: 1_000_000, cachedTokens: 400_000, outputTokens: 0 })).toBeCloseTo(2, 10);
    // A provider reporting more cached than input tokens does not make the cost negative.
    expect(costOf(price, { inputTokens: 10, cachedTokens: 50, outputTokens: 0 })).toBeCloseTo(5e-6, 12);
  });

  it("list built-in and custom prices together", () => {
    const list = priceList([{ model: "gpt-4o", inputUsdPerMtok: 3, cachedInputUsdPerMtok: null, outputUsdPerMtok: 12 }, { model: "Mistral-Large", inputUsdPerMtok: 2, cachedInputUsdPerMtok: null, outputUsdPerMtok: 6 }]);
    expect(list.find((entry) => entry.model === "gpt-4o")).toMatchObject({ builtIn: BUILT_IN_PRICES["gpt-4o"], custom: { inputUsdPerMtok: 3 } });
    expect(list.find((entry) => entry.model === "mistral-large")).toMatchObject({ builtIn: null, custom: { outputUsdPerMtok: 6 } });
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
