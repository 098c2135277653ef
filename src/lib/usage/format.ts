// How tokens and money read on the pages (client-safe).

export function formatTokens(value: number): string {
  return value.toLocaleString("en-US");
}

/** Tokens in short: 1.2k, 3.4M. */
export function formatTokensShort(value: number): string {
  if (value >= 1_000_000) return `${trim(value / 1_000_000)}M`;
  if (value >= 1_000) return `${trim(value / 1_000)}k`;
  return String(value);
}

const trim = (value: number) =>
  value >= 100
    ? value.toFixed(0)
    : value >= 10
      ? value.toFixed(1).replace(/\.0$/, "")
      : value.toFixed(2).replace(/\.?0+$/, "");

/**
 * US dollars: cents from a dollar up, up to four decimals below (a day of a small model costs
 * fractions of a cent, and $0.00 would read as free).
 */
export function formatUsd(value: number): string {
  if (value === 0) return "$0.00";
  if (Math.abs(value) >= 1)
    return `$${value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
  if (Math.abs(value) < 0.0001) return "<$0.0001";
  return `$${value.toFixed(4).replace(/0{1,2}$/, "")}`;
}

/** A share as a whole percentage that never rounds a little to nothing or most to all: <1%, 62%, >99%. */
export function formatShare(share: number): string {
  if (share <= 0) return "0%";
  if (share >= 1) return "100%";
  const percent = Math.round(share * 100);
  if (percent < 1) return "<1%";
  if (percent > 99) return ">99%";
  return `${percent}%`;
}

/** The cache's part of some usage: its input, how much of it was cached, and what that saved. */
export type CacheFigures = { inputTokens: number; cachedTokens: number; cachedShare: number; savedUsd: number };

/**
 * The cache in words: "62% of input cached · saved $0.41", "62% of input cached" (the model has
 * no cheaper cached rate, or no price), "none cached", or null when there was no input to cache.
 * `short` leaves out "of input" where a heading already says it.
 */
export function describeCache(figures: CacheFigures, options: { short?: boolean } = {}): string | null {
  if (figures.inputTokens <= 0) return null;
  if (figures.cachedTokens <= 0) return options.short ? "none" : "none cached";
  const share = options.short
    ? formatShare(figures.cachedShare)
    : `${formatShare(figures.cachedShare)} of input cached`;
  return figures.savedUsd > 0 ? `${share} · saved ${formatUsd(figures.savedUsd)}` : share;
}

/** A model call's tokens as a trace and the work log show them: "12,400 in (11,008 cached) · 310 out". */
export function formatTokensInOut(tokens: { inputTokens: number; cachedTokens: number; outputTokens: number }): string {
  const cached = tokens.cachedTokens > 0 ? ` (${formatTokens(tokens.cachedTokens)} cached)` : "";
  return `${formatTokens(tokens.inputTokens)} in${cached} · ${formatTokens(tokens.outputTokens)} out`;
}
