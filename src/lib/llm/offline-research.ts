import "server-only";
// How the offline model researches a task that lists its questions: the words of a question,
// the sentences of a page that answer it best. Pure text, so the choices are the same on
// every run and the eval's scores of the offline model mean something
// (docs/decisions/2026-11-27-evals.md).

/** How many of a question's search results the offline model reads. */
export const PAGES_PER_QUESTION = 2;
/** How many sentences of a page it keeps as the page's finding. */
const SENTENCES_PER_PAGE = 2;

const QUESTION_LINE = /^\s*(?:[-*•]|\d+[.)])\s+(.+?)\s*$/;

/** The questions a task lists, one per bullet or numbered line ("- How many …?"). */
export function questionsOf(text: string): string[] {
  return text
    .split("\n")
    .map((line) => QUESTION_LINE.exec(line)?.[1] ?? "")
    .filter((question) => question.length > 0);
}

/** Questions dealt out round-robin to `people`, in order: [[q1, q3], [q2]]. */
export function dealQuestions(questions: readonly string[], people: number): string[][] {
  const shares: string[][] = Array.from({ length: Math.min(people, questions.length) }, () => []);
  for (const [i, question] of questions.entries()) shares[i % shares.length]!.push(question);
  return shares;
}

const STOPWORDS = new Set(
  (
    "a an and are as at be by did do does for from has have how in is it its new of on or the their this to was " +
    "what when where which who whom why will with would much many about after before into than that these those " +
    "there been being can could should may might me my our your you they them we us i"
  ).split(" "),
);

/** The words that carry a text's meaning, lower-cased, with a plural's s dropped. */
function keywords(text: string): Set<string> {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+(?:\.\d+)?/gu) ?? [];
  return new Set(
    words
      .filter((word) => !STOPWORDS.has(word) && (word.length > 2 || /\d/.test(word)))
      .map((word) => (word.length > 4 && word.endsWith("s") && !word.endsWith("ss") ? word.slice(0, -1) : word)),
  );
}

/** A page's text as sentences: headings left out (they name a topic, they answer nothing), bullets and line breaks undone. */
function sentencesOf(content: string): string[] {
  const text = content
    .split("\n")
    .filter((line) => !/^\s*#/.test(line))
    .map((line) => line.replace(/^\s*(?:[-*•]|>)\s*/, "").trim())
    .filter(Boolean)
    .map((line) => (/[.!?:]$/.test(line) ? line : `${line}.`))
    .join(" ");
  return text
    .split(/(?<=[.!?])\s+(?=[\p{Lu}\p{N}"“(])/u)
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence.length > 0);
}

/**
 * The sentences of a page that answer a question best, in the page's order: those sharing the
 * most of the question's words, a figure counting as two more (questions ask for numbers);
 * none when no sentence shares two words with it. A naive reader: it believes what it reads,
 * decoys included.
 */
export function answeringSentences(content: string, question: string): string[] {
  const wanted = keywords(question);
  const scored = sentencesOf(content).map((sentence, index) => {
    const words = keywords(sentence);
    const shared = [...wanted].filter((word) => words.has(word)).length;
    return { sentence, index, shared, score: shared + (/\d/.test(sentence) ? 2 : 0) };
  });
  return scored
    .filter((entry) => entry.shared >= 2)
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, SENTENCES_PER_PAGE)
    .sort((a, b) => a.index - b.index)
    .map((entry) => entry.sentence);
}
