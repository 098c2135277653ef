// The eval's web: the pages in eval/corpus/<site>/<page>.md and a search over them that ranks
// the same way on every run (BM25 over title and text), so a team's score depends on what it
// does with the results, not on the luck of the search.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";

export type Page = {
  /** The page's address on the eval's web server, without the origin: "/site/page". */
  path: string;
  title: string;
  site: string;
  published: string;
  /** The page's text in Markdown, without its front matter. */
  body: string;
};

const CORPUS_DIR = path.join(import.meta.dirname, "..", "corpus");

/** Every page of the corpus, in the order of their paths. */
export async function loadCorpus(dir = CORPUS_DIR): Promise<Page[]> {
  const files = (await readdir(dir, { recursive: true })).filter((file) => file.endsWith(".md")).sort();
  return Promise.all(
    files.map(async (file) =>
      parsePage(`/${file.replace(/\\/g, "/").replace(/\.md$/, "")}`, await readFile(path.join(dir, file), "utf8")),
    ),
  );
}

/** "---\ntitle: …\nsite: …\npublished: …\n---\nbody" → a page; a field missing is an error that names the page. */
function parsePage(pagePath: string, text: string): Page {
  const match = /^---\n([\s\S]*?)\n---\n([\s\S]*)$/.exec(text);
  if (!match) throw new Error(`eval/corpus${pagePath}.md has no front matter (--- title/site/published ---)`);
  const fields = new Map(
    match[1]!.split("\n").map((line) => {
      const colon = line.indexOf(":");
      return [
        line.slice(0, colon).trim(),
        line
          .slice(colon + 1)
          .trim()
          .replace(/^"(.*)"$/, "$1"),
      ] as const;
    }),
  );
  const field = (name: string) => {
    const value = fields.get(name);
    if (!value) throw new Error(`eval/corpus${pagePath}.md has no "${name}" in its front matter`);
    return value;
  };
  return {
    path: pagePath,
    title: field("title"),
    site: field("site"),
    published: field("published"),
    body: match[2]!.trim(),
  };
}

/** The page as a reader gets it: its title, a byline (its site and date), its text. */
export function pageMarkdown(page: Page): string {
  return `# ${page.title}\n\n### ${page.site} · ${page.published}\n\n${page.body}\n`;
}

const STOPWORDS = new Set(
  "a an and are as at be by did do does for from has have how in is it its of on or the this to was what when where which who why will with".split(
    " ",
  ),
);

function terms(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+(?:\.\d+)?/gu) ?? [])
    .filter((word) => !STOPWORDS.has(word))
    .map((word) => (word.length > 4 && word.endsWith("s") && !word.endsWith("ss") ? word.slice(0, -1) : word));
}

export type SearchHit = { page: Page; score: number; snippet: string };

/**
 * BM25 (k1 1.2, b 0.75) over each page's title, counted three times, and its text; ties go to
 * the earlier path. The snippet is the two sentences that share the most terms with the query.
 */
export function searchCorpus(pages: readonly Page[], query: string, limit: number): SearchHit[] {
  const docs = pages.map((page) => {
    const words = [...terms(page.title), ...terms(page.title), ...terms(page.title), ...terms(page.body)];
    const counts = new Map<string, number>();
    for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
    return { page, counts, length: words.length };
  });
  const averageLength = docs.reduce((sum, doc) => sum + doc.length, 0) / Math.max(1, docs.length);
  const wanted = [...new Set(terms(query))];
  const hits = docs.map((doc) => {
    let score = 0;
    for (const term of wanted) {
      const count = doc.counts.get(term) ?? 0;
      if (count === 0) continue;
      const having = docs.filter((other) => other.counts.has(term)).length;
      const idf = Math.log(1 + (docs.length - having + 0.5) / (having + 0.5));
      score += (idf * count * 2.2) / (count + 1.2 * (0.25 + (0.75 * doc.length) / averageLength));
    }
    return { page: doc.page, score };
  });
  return hits
    .filter((hit) => hit.score > 0)
    .sort((a, b) => b.score - a.score || a.page.path.localeCompare(b.page.path))
    .slice(0, limit)
    .map((hit) => ({ ...hit, snippet: snippet(hit.page, wanted) }));
}

function snippet(page: Page, wanted: readonly string[]): string {
  const sentences = page.body
    .replace(/\n+/g, " ")
    .split(/(?<=[.!?])\s+/)
    .map((sentence, index) => {
      const words = new Set(terms(sentence));
      return { sentence, index, shared: wanted.filter((term) => words.has(term)).length };
    });
  const best = [...sentences]
    .sort((a, b) => b.shared - a.shared || a.index - b.index)
    .slice(0, 2)
    .sort((a, b) => a.index - b.index);
  return best.map((entry) => entry.sentence).join(" … ");
}
