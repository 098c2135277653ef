import "server-only";
// Where a knowledge item's facts came from: the pages and search results the agent saw in
// this turn (a tool set lives for one turn), so addKnowledgeItem can name its source even when
// the model does not pass one.

type Seen =
  | { kind: "page"; url: string }
  | { kind: "search"; results: { url: string; title: string; content: string }[] };

const words = (text: string) => new Set(text.toLowerCase().match(/[\p{L}\p{N}]{4,}/gu) ?? []);

/** The http(s) address given, cleaned; null (dropped, not an error) for anything else. */
export function webSourceUrl(raw: string | null | undefined): string | null {
  if (!raw) return null;
  try {
    const url = new URL(raw.trim());
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

/**
 * The first http(s) address a fact names in its text ("… (https://example.com/report).");
 * punctuation closing the sentence around it is not part of it. Null when it names none.
 */
export function urlNamedIn(text: string): string | null {
  for (const [found] of text.matchAll(/https?:\/\/[^\s<>"'`]+/gi)) {
    let candidate = found.replace(/[.,;:!?]+$/, "");
    // A closing bracket belongs to the address only when it opened one too (Wikipedia's "(band)").
    while (
      /[)\]}]$/.test(candidate) &&
      count(candidate, "([{"[")]}".indexOf(candidate.at(-1)!)]!) < count(candidate, candidate.at(-1)!)
    ) {
      candidate = candidate.slice(0, -1).replace(/[.,;:!?]+$/, "");
    }
    const url = webSourceUrl(candidate);
    if (url) return url;
  }
  return null;
}

const count = (text: string, char: string) => text.split(char).length - 1;

export class TurnSources {
  private last: Seen | null = null;

  pageRead(url: string): void {
    const checked = webSourceUrl(url);
    if (checked) this.last = { kind: "page", url: checked };
  }

  searched(results: { url: string; title: string; content: string }[]): void {
    this.last = { kind: "search", results };
  }

  /**
   * The source of a fact just learned: the page read last, or — after a search — the result
   * that shares the most words (at least three of four letters or more) with the fact. Null
   * when nothing this turn plausibly said it.
   */
  sourceOf(fact: string): string | null {
    if (!this.last) return null;
    if (this.last.kind === "page") return this.last.url;
    const factWords = words(fact);
    let best: { url: string; shared: number } | null = null;
    for (const result of this.last.results) {
      const resultWords = words(`${result.title} ${result.content}`);
      const shared = [...factWords].filter((word) => resultWords.has(word)).length;
      if (shared >= 3 && (!best || shared > best.shared)) best = { url: result.url, shared };
    }
    return best ? webSourceUrl(best.url) : null;
  }
}
