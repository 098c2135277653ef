import "server-only";
// Recall: finding what a team knows by its words and by its meaning together. The knowledge
// page, the searchKnowledge tool and the near-duplicate check (knowledge-items.ts) rank here.
import type { Db } from "@/lib/db/client";
import { getKnowledgeItemsById, rankKnowledgeByWords, type KnowledgeFilter } from "@/lib/db/queries/knowledge-items";
import type { KnowledgeItem } from "@/lib/db/schema";
import { offlineEmbeddingChoice, type Embedding, type EmbeddingChoice } from "@/lib/llm/embeddings";
import { embedModelValues, type EmbeddingCall } from "@/lib/llm/model-call";
import { logError } from "@/lib/telemetry/log";
import { rankKnowledgeByMeaning } from "./knowledge-vectors";

/**
 * From what similarity an item is about the search ("similar meaning"), and from what
 * similarity two facts say the same (with the same figures, see sameFigures). The offline
 * embedding's similarities run lower than a provider's (it knows no synonyms). A provider's:
 * OpenAI's text-embedding-3 scale, where unrelated texts score about 0.1 and a restatement 0.9.
 */
const SIMILARITY = {
  offline: { related: 0.25, same: 0.75 },
  provider: { related: 0.3, same: 0.9 },
} as const;

/** The scale of a model's similarities: the offline embedding's, or a provider's. */
function similarityScale(modelId: string) {
  return modelId === offlineEmbeddingChoice().modelId ? SIMILARITY.offline : SIMILARITY.provider;
}

/** Reciprocal rank fusion's constant: an item's score is the sum over the rankings of 1 / (60 + its place). */
const RRF_K = 60;

/** How deep each ranking is read before fusing: at least this, at most 500. */
const MIN_DEPTH = 50;
const MAX_DEPTH = 500;

/** How long a search waits for its query's vector before it goes on by words only. */
const RECALL_EMBEDDING_TIMEOUT_MS = 10_000;

/** How long recall by meaning rests after its model failed, so searches do not each wait for a model that is down. */
const REST_AFTER_FAILURE_MS = 60_000;

/** Why an item was found: it shares the search's words, its meaning is close, or both. */
export type RecallMatch = { words: boolean; meaning: boolean };

export type RecalledItem = KnowledgeItem & {
  matched: RecallMatch;
  /** Cosine similarity to the search's meaning; null when it was not compared (no vector yet, or below the floor). */
  similarity: number | null;
};

/** One place in the fused ranking. */
type Fused = { id: string; score: number; wordsRank: number | null; similarity: number | null };

/**
 * Two rankings fused by reciprocal rank (RRF, k = 60): what both find comes first, then what
 * one finds high. On a tie, what matched the words first (a name searched for beats a look-alike).
 */
function fuse(words: readonly string[], meaning: readonly { id: string; similarity: number }[]): Fused[] {
  const byId = new Map<string, Fused>();
  const entry = (id: string) => {
    let found = byId.get(id);
    if (!found) {
      found = { id, score: 0, wordsRank: null, similarity: null };
      byId.set(id, found);
    }
    return found;
  };
  words.forEach((id, rank) => {
    const found = entry(id);
    found.score += 1 / (RRF_K + rank + 1);
    found.wordsRank = rank;
  });
  meaning.forEach(({ id, similarity }, rank) => {
    const found = entry(id);
    found.score += 1 / (RRF_K + rank + 1);
    found.similarity = similarity;
  });
  return [...byId.values()].sort(
    (a, b) =>
      b.score - a.score ||
      Number(b.wordsRank !== null) - Number(a.wordsRank !== null) ||
      (b.similarity ?? 0) - (a.similarity ?? 0),
  );
}

/** What recall by meaning remembers per embedding model: query vectors, and a recent failure. */
type QueryMemory = { vectors: Map<string, Embedding>; restUntil: number };
const memories = new WeakMap<EmbeddingChoice, QueryMemory>();
const REMEMBERED_TEXTS = 256;

function memoryOf(choice: EmbeddingChoice): QueryMemory {
  let memory = memories.get(choice);
  if (!memory) {
    memory = { vectors: new Map(), restUntil: 0 };
    memories.set(choice, memory);
  }
  return memory;
}

/**
 * The vectors of `texts`, or nulls when the model could not make them in time: a search goes on
 * by words, a fact is saved without one and embedded later (said once in the log, and the model
 * rests a minute before it is asked again). A text searched again (a page refreshed live) reuses
 * its vector; only a model call costs.
 */
export async function embedOrNot(call: EmbeddingCall, texts: readonly string[]): Promise<(Embedding | null)[]> {
  const memory = memoryOf(call.model);
  const missing = [...new Set(texts.filter((text) => !memory.vectors.has(text)))];
  if (missing.length > 0 && Date.now() >= memory.restUntil) {
    try {
      const vectors = await embedModelValues(
        {
          ...call,
          timeoutMs: Math.min(call.timeoutMs ?? RECALL_EMBEDDING_TIMEOUT_MS, RECALL_EMBEDDING_TIMEOUT_MS),
          retries: call.retries ?? 1,
        },
        missing,
      );
      for (const [i, text] of missing.entries()) memory.vectors.set(text, vectors[i]!);
    } catch (error) {
      if (call.abortSignal?.aborted) throw error;
      memory.restUntil = Date.now() + REST_AFTER_FAILURE_MS;
      (call.log ?? logError)(
        `[recall] the embedding model ${call.model.modelId} did not answer; knowledge is found by words only for the next ${REST_AFTER_FAILURE_MS / 1000} s`,
        error,
      );
    }
  }
  const found = texts.map((text) => {
    const vector = memory.vectors.get(text);
    if (!vector) return null;
    // Most recently used last: the first key is the one to forget.
    memory.vectors.delete(text);
    memory.vectors.set(text, vector);
    return vector;
  });
  while (memory.vectors.size > REMEMBERED_TEXTS) memory.vectors.delete(memory.vectors.keys().next().value!);
  return found;
}

/**
 * A knowledge page search in two parts: what to match by meaning (the words, without websearch's
 * quotes, OR and exclusions) and what it excludes (`-word`, `-"some words"`).
 */
export function readSearch(q: string): { meaning: string; excluding: string | null } {
  const excluded: string[] = [];
  const meaning = q
    .replace(/(^|\s)-("[^"]*"?|\S+)/g, (_match, _space: string, term: string) => {
      excluded.push(term.replaceAll('"', "").trim());
      return " ";
    })
    .replace(/\bOR\b/g, " ")
    .replaceAll('"', " ")
    .replace(/\s+/g, " ")
    .trim();
  const excluding = excluded.filter(Boolean);
  return { meaning, excluding: excluding.length ? excluding.map((term) => `"${term}"`).join(" OR ") : null };
}

/**
 * The items that match the search `q` by words (websearch syntax, as before) or by meaning,
 * fused by reciprocal rank, each saying why it matched. Items not yet embedded are found by
 * words; without an answer from the embedding model, everything is. `call`: who the query's
 * vector is made for (its usage row): an agent searching, or nobody (the person, on the page).
 */
export async function recallKnowledge(
  call: EmbeddingCall,
  search: KnowledgeFilter & { q: string; limit?: number },
): Promise<RecalledItem[]> {
  const { q: raw, limit: wanted, ...filter } = search;
  const q = raw.trim();
  if (!q) return [];
  const limit = Math.min(Math.max(wanted ?? 100, 1), MAX_DEPTH);
  const depth = Math.min(Math.max(limit, MIN_DEPTH), MAX_DEPTH);
  const { meaning, excluding } = readSearch(q);
  const scale = similarityScale(call.model.modelId);
  const [words, close] = await Promise.all([
    rankKnowledgeByWords(call.db, filter, q, { depth }),
    meaning
      ? embedOrNot(call, [meaning]).then(([vector]) =>
          vector ? rankKnowledgeByMeaning(call.db, filter, vector, { depth, floor: scale.related }) : [],
        )
      : [],
  ]);
  const fused = fuse(words, close);
  const items = new Map(
    (
      await getKnowledgeItemsById(
        call.db,
        fused.map((each) => each.id),
        { excluding: excluding ?? undefined },
      )
    ).map((item) => [item.id, item]),
  );
  return fused
    .flatMap((each) => {
      const item = items.get(each.id);
      if (!item) return [];
      return [
        {
          ...item,
          matched: { words: each.wordsRank !== null, meaning: each.similarity !== null },
          similarity: each.similarity,
        },
      ];
    })
    .slice(0, limit);
}

/** The numbers a fact states ("20%", "2025", "3.5"): two facts with different figures are different facts. */
function figures(text: string): string {
  return [...new Set(text.match(/\d+(?:[.,]\d+)*/g) ?? [])].sort().join(" ");
}

/** Whether two facts state the same figures (none at all counts as the same). */
export function sameFigures(a: string, b: string): boolean {
  return figures(a) === figures(b);
}

/** How many candidates of each ranking the near-duplicate check looks at. */
const SAME_DEPTH = 20;

/**
 * The candidates for "the team knows this already": the team's items sharing most of the
 * fact's words, and those whose meaning is as close as a restatement's (`closeInMeaning`, when
 * the fact has a vector), fused by reciprocal rank, best first. Run one after the other: in
 * the caller's transaction one connection serves both.
 */
export async function sameKnowledgeCandidates(
  db: Db,
  teamId: string,
  content: string,
  embedding: Embedding | null,
): Promise<{ item: KnowledgeItem; closeInMeaning: boolean }[]> {
  const words = await rankKnowledgeByWords(db, { teamId }, content, { depth: SAME_DEPTH, anyWord: true });
  const close = embedding
    ? await rankKnowledgeByMeaning(db, { teamId }, embedding, {
        depth: SAME_DEPTH,
        floor: similarityScale(embedding.model).same,
      })
    : [];
  const fused = fuse(words, close);
  const items = new Map(
    (
      await getKnowledgeItemsById(
        db,
        fused.map((each) => each.id),
      )
    ).map((item) => [item.id, item]),
  );
  return fused.flatMap((each) => {
    const item = items.get(each.id);
    return item ? [{ item, closeInMeaning: each.similarity !== null }] : [];
  });
}
