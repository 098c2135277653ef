import "server-only";
// Embedding the knowledge that waits for its vector: the embedding job's work (the outbox of
// recordKnowledge and of an edit) and the backfill a worker queues as it starts.
import type { Db } from "@/lib/db/client";
import { listUnembeddedKnowledge, storeKnowledgeEmbeddings } from "@/lib/db/queries/knowledge-embeddings";
import type { EmbeddingChoice } from "@/lib/llm/embeddings";
import { embedModelValues } from "@/lib/llm/model-call";

/** How many items one embedding call takes (and one statement stores). */
const EMBEDDING_BATCH = 64;

export type EmbeddingRun = { embedded: number; batches: number };

/**
 * Embeds every knowledge item that has no vector of `embedding`'s model and length (saved
 * without one, edited since, or embedded by another model), the oldest first, a batch of one
 * agent's items at a time (its call is that agent's: its usage row, its team's budget). Each
 * batch is stored as one statement as soon as it is embedded, and only for items that still say
 * what was embedded: a run killed mid-way loses at most the batch in flight, and the next run
 * (a retry of the job, or the backfill of the next worker to start) takes up exactly what is
 * left. Stops between batches once `signal` aborts.
 */
export async function embedWaitingKnowledge(
  deps: {
    db: Db;
    embedding: EmbeddingChoice;
    log: (message: string, error?: unknown) => void;
    /** Each embedding call's time limit; MODEL_TIMEOUT_MS when not given. */
    timeoutMs?: number;
  },
  options: { signal?: AbortSignal; batchSize?: number } = {},
): Promise<EmbeddingRun> {
  const { db, embedding } = deps;
  const space = { model: embedding.modelId, dimensions: embedding.dimensions };
  const run: EmbeddingRun = { embedded: 0, batches: 0 };
  while (!options.signal?.aborted) {
    const items = await listUnembeddedKnowledge(db, space, options.batchSize ?? EMBEDDING_BATCH);
    if (items.length === 0) break;
    const vectors = await embedModelValues(
      {
        db,
        model: embedding,
        agentId: items[0]!.agentId,
        teamId: null,
        abortSignal: options.signal,
        timeoutMs: deps.timeoutMs,
        log: deps.log,
      },
      items.map((item) => item.content),
    );
    run.embedded += (await storeKnowledgeEmbeddings(db, items, vectors)).length;
    run.batches += 1;
  }
  return run;
}
