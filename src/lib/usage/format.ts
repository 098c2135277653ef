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

const trim = (value: number) => (value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1).replace(/\.0$/, "") : value.toFixed(2).replace(/\.?0+$/, ""));

/**
 * US dollars: cents from a dollar up, up to four decimals below (a day of a small model costs
 * fractions of a cent, and $0.00 would read as free).
 */
export function formatUsd(value: number): string {
  if (value === 0) return "$0.00";
  if (Math.abs(value) >= 1) return `$${value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
  if (Math.abs(value) < 0.0001) return "<$0.0001";
  return `$${value.toFixed(4).replace(/0{1,2}$/, "")}`;
}
