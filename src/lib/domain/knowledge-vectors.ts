import "server-only";
// Recall by meaning without reading every vector from Postgres for each search: each process
// (the web server, each worker) keeps the vectors of the agents it searched in memory, a byte a
// dimension, and asks Postgres only what changed since (knowledge_vector_changes, counted by
// triggers): nothing, a few new vectors, or, after anything was removed, all of them again.
// Why, how fast and at what memory: docs/decisions/2026-11-27-knowledge-vectors-in-memory.md.
import { is } from "drizzle-orm";
import { PgTransaction } from "drizzle-orm/pg-core";
import type { Db } from "@/lib/db/client";
import {
  compactVectorChanges,
  readAgentVectors,
  readVectorVersions,
  uuidText,
  vectorTypeCode,
  type VectorRow,
  type VectorSpace,
  type VectorVersion,
} from "@/lib/db/queries/knowledge-embeddings";
import { knowledgeIdsReportedBy, type KnowledgeFilter } from "@/lib/db/queries/knowledge-items";
import { env } from "@/lib/env";
import { dot, type Embedding } from "@/lib/llm/embeddings";
import { int8Codes, int8Query, int8Similarities, strideOf, type Int8Query } from "@/lib/llm/int8-similarity";
import { logError } from "@/lib/telemetry/log";

/** What a kept vector costs beside its codes (a byte a dimension): its id (16 bytes), its scale (4) and its type (1). */
const BYTES_BESIDE_CODES = 21;

/** How many change rows an agent's vectors may have before a search sums them into one. */
const COMPACT_AFTER = 64;

/**
 * One agent's vectors in one space, as of a version of them (knowledge_vector_changes' sums).
 * Each vector is kept as a byte a dimension and a scale (int8: its largest component ±127; a
 * similarity is then off by about 0.001, at most a few hundredths in theory), compared by the
 * WebAssembly kernel (llm/int8-similarity.ts): ranking and thresholds hold (the tests compare
 * with the exact similarities).
 */
class AgentVectors {
  count = 0;
  /** When the newest vector was made (µs since 2000): what to read after, when only more were added. */
  newest = Number.NEGATIVE_INFINITY;
  /** The bytes a vector's codes take: its dimensions, padded to the kernel's groups of 16. */
  private readonly stride: number;
  private ids: Uint8Array;
  private types: Uint8Array;
  private scales: Float32Array;
  private codes: Int8Array;

  constructor(
    readonly dimensions: number,
    public version: VectorVersion,
    capacity: number,
  ) {
    this.stride = strideOf(dimensions);
    const size = Math.max(capacity, 1);
    this.ids = new Uint8Array(size * 16);
    this.types = new Uint8Array(size);
    this.scales = new Float32Array(size);
    this.codes = new Int8Array(size * this.stride);
  }

  /** The memory `count` vectors of `dimensions` take. */
  static bytesFor(count: number, dimensions: number): number {
    return count * (strideOf(dimensions) + BYTES_BESIDE_CODES);
  }

  /** The memory it holds. */
  get bytes(): number {
    return AgentVectors.bytesFor(this.scales.length, this.dimensions);
  }

  /** The memory it would hold with `more` vectors added. */
  bytesWith(more: number): number {
    return AgentVectors.bytesFor(Math.max(this.scales.length, this.count + more), this.dimensions);
  }

  add(row: VectorRow): void {
    if (this.count === this.scales.length) this.grow(Math.ceil(this.count * 1.25) + 16);
    const i = this.count++;
    row.bytes.copy(this.ids, i * 16, row.idAt, row.idAt + 16);
    this.types[i] = row.type;
    this.newest = Math.max(this.newest, row.embeddedAt);
    this.scales[i] = int8Codes(row.vector, this.codes, i * this.stride);
  }

  /** Adds every vector of `other` (the same space), in one step: a search sees them all or none. */
  append(other: AgentVectors): void {
    if (this.count + other.count > this.scales.length) this.grow(this.count + other.count);
    this.ids.set(other.ids.subarray(0, other.count * 16), this.count * 16);
    this.types.set(other.types.subarray(0, other.count), this.count);
    this.scales.set(other.scales.subarray(0, other.count), this.count);
    this.codes.set(other.codes.subarray(0, other.count * this.stride), this.count * this.stride);
    this.count += other.count;
    this.newest = Math.max(this.newest, other.newest);
  }

  private grow(capacity: number): void {
    const ids = new Uint8Array(capacity * 16);
    ids.set(this.ids.subarray(0, this.count * 16));
    const types = new Uint8Array(capacity);
    types.set(this.types.subarray(0, this.count));
    const scales = new Float32Array(capacity);
    scales.set(this.scales.subarray(0, this.count));
    const codes = new Int8Array(capacity * this.stride);
    codes.set(this.codes.subarray(0, this.count * this.stride));
    Object.assign(this, { ids, types, scales, codes });
  }

  /**
   * Offers `best` each vector at least `floor` similar to the query, of `type` when not 0,
   * among `reported` when given; an id is made text only for a vector `best` takes.
   */
  scan(query: Int8Query, floor: number, type: number, reported: Set<string> | null, best: Best): void {
    const { types, ids } = this;
    int8Similarities(
      query,
      this.codes,
      this.scales,
      this.count,
      (i) => type !== 0 && types[i] !== type,
      (i, similarity) => {
        if (similarity < floor || !best.takes(similarity)) return;
        const id = uuidText(ids, i * 16);
        if (!reported || reported.has(id)) best.offer(id, similarity);
      },
    );
  }
}

/** The `size` most similar of what is offered. */
class Best {
  private readonly items: { id: string; similarity: number }[] = [];
  private floor = Number.NEGATIVE_INFINITY;

  constructor(private readonly size: number) {}

  /** Whether an item this similar would be kept (so its id is made only then). */
  takes(similarity: number): boolean {
    return similarity > this.floor || this.items.length < this.size;
  }

  offer(id: string, similarity: number): void {
    if (!this.takes(similarity)) return;
    this.items.push({ id, similarity });
    if (this.items.length >= this.size * 2) this.trim();
  }

  private trim(): void {
    this.items.sort((a, b) => b.similarity - a.similarity);
    this.items.length = Math.min(this.items.length, this.size);
    if (this.items.length >= this.size) this.floor = this.items.at(-1)!.similarity;
  }

  sorted(): { id: string; similarity: number }[] {
    this.trim();
    return this.items;
  }
}

/** How the kept vectors served the searches: what the tests and the bench look at. */
export type VectorCacheCounts = {
  /** An agent's vectors found as they were. */
  kept: number;
  /** Only new vectors read (after a save or the embedding job). */
  added: number;
  /** All of an agent's vectors read (the first search, or after anything was removed). */
  reloaded: number;
  /** Read from Postgres and ranked as they came, not kept: too many for the memory, or not committed yet. */
  streamed: number;
  /** Let go to make room for others. */
  evicted: number;
};

/**
 * The vectors one process keeps, by agent and space, within `maxBytes`: the least recently
 * searched let go first. A search takes an agent's vectors only as of the version it read or
 * later (the sums only grow), so it never sees less than Postgres had committed when it asked.
 */
export class KnowledgeVectorCache {
  private readonly kept = new Map<string, AgentVectors>();
  private readonly loading = new Map<string, Promise<AgentVectors | null>>();
  /** Memory promised to reads under way. */
  private reserved = 0;
  readonly counts: VectorCacheCounts = { kept: 0, added: 0, reloaded: 0, streamed: 0, evicted: 0 };

  constructor(public maxBytes: number) {}

  /** The memory the kept vectors hold, with what reads under way will add. */
  get bytes(): number {
    let sum = this.reserved;
    for (const vectors of this.kept.values()) sum += vectors.bytes;
    return sum;
  }

  /** Lets every kept vector go (a process that starts again has none). */
  clear(): void {
    this.kept.clear();
  }

  /**
   * An agent's vectors in `space`, as of `version` or later, made current when they were not;
   * null when they are not to be kept (more than the memory allows, or changed by the
   * transaction asking, which nobody else may see): the caller reads them from Postgres.
   * `using`: what the asking search holds already, not let go to make room.
   */
  async vectorsOf(
    db: Db,
    agentId: string,
    space: VectorSpace,
    version: VectorVersion,
    using: Set<string>,
  ): Promise<AgentVectors | null> {
    if (version.own) {
      this.counts.streamed++;
      return null;
    }
    const key = `${agentId} ${space.dimensions} ${space.model}`;
    // Another search reading them already: wait for it, then look again (once for each read).
    let waited: Promise<AgentVectors | null> | undefined;
    for (;;) {
      const kept = this.kept.get(key);
      if (kept && kept.version.added >= version.added && kept.version.removed >= version.removed) {
        this.kept.delete(key); // most recently used last
        this.kept.set(key, kept);
        using.add(key);
        this.counts.kept++;
        return kept;
      }
      const pending = this.loading.get(key);
      if (!pending || pending === waited) break;
      waited = pending;
      await pending.catch(() => null);
    }
    const load = this.refresh(db, key, agentId, space, version, using);
    this.loading.set(key, load);
    try {
      return await load;
    } finally {
      if (this.loading.get(key) === load) this.loading.delete(key);
    }
  }

  private async refresh(
    db: Db,
    key: string,
    agentId: string,
    space: VectorSpace,
    version: VectorVersion,
    using: Set<string>,
  ): Promise<AgentVectors | null> {
    const kept = this.kept.get(key);
    if (kept && kept.version.removed === version.removed && kept.version.added < version.added) {
      // Only added since: read what was embedded after the newest kept. All of them, when as
      // many came as were counted (a vector committed late, made before the newest, is not
      // among them: then everything is read again).
      const more = new AgentVectors(space.dimensions, version, version.added - kept.version.added);
      const read = await readAgentVectors(db, agentId, space, kept.newest, (row) => more.add(row));
      if (
        !read.own &&
        read.removed === kept.version.removed &&
        more.count === read.added - kept.version.added &&
        this.kept.get(key) === kept &&
        this.makeRoom(kept.bytesWith(more.count) - kept.bytes, using, key)
      ) {
        kept.append(more);
        kept.version = read;
        using.add(key);
        this.counts.added++;
        return kept;
      }
    }
    if (kept) this.kept.delete(key);
    const count = Math.max(version.added - version.removed, 0);
    const bytes = AgentVectors.bytesFor(count, space.dimensions);
    if (!this.makeRoom(bytes, using, key)) {
      this.counts.streamed++;
      return null;
    }
    this.reserved += bytes;
    let vectors: AgentVectors;
    try {
      vectors = new AgentVectors(space.dimensions, version, count);
      vectors.version = await readAgentVectors(db, agentId, space, null, (row) => vectors.add(row));
    } finally {
      this.reserved -= bytes;
    }
    this.counts.reloaded++;
    // Read within a transaction that changed them: right for this search, for nobody else.
    if (vectors.version.own) return vectors;
    if (this.makeRoom(vectors.bytes, using, key)) {
      this.kept.set(key, vectors);
      using.add(key);
    }
    return vectors;
  }

  /** Lets the least recently searched vectors go until `bytes` more fit; false when they cannot. */
  private makeRoom(bytes: number, using: Set<string>, key: string): boolean {
    if (bytes > this.maxBytes) return false;
    let total = this.bytes;
    for (const [other, vectors] of this.kept) {
      if (total + bytes <= this.maxBytes) break;
      if (using.has(other) || other === key) continue;
      this.kept.delete(other);
      total -= vectors.bytes;
      this.counts.evicted++;
    }
    return total + bytes <= this.maxBytes;
  }
}

// One per process (on globalThis: Next's bundles may hold two copies of this module).
const holder = globalThis as typeof globalThis & { cadreKnowledgeVectors?: KnowledgeVectorCache };

/** The process's kept vectors, within KNOWLEDGE_VECTOR_CACHE_MB. */
export function knowledgeVectorCache(): KnowledgeVectorCache {
  holder.cadreKnowledgeVectors ??= new KnowledgeVectorCache(env().KNOWLEDGE_VECTOR_CACHE_MB * 1024 * 1024);
  return holder.cadreKnowledgeVectors;
}

/**
 * The `depth` items closest in meaning to `query` (at least `floor`), best first: every vector
 * the filter selects in the query's space is compared (no index, nothing skipped): the kept
 * copy (knowledgeVectorCache, int8: similarities within about 0.001), made current first, or,
 * for what is not kept, the stored float32 vectors as they stream from Postgres. Items without
 * a vector in that space are not among them: they are found by words. In a transaction that
 * changed an agent's vectors, that agent's are read in the transaction, so a fact it saved is found.
 */
export async function rankKnowledgeByMeaning(
  db: Db,
  filter: KnowledgeFilter,
  query: Embedding,
  options: { depth: number; floor: number },
  cache: KnowledgeVectorCache = knowledgeVectorCache(),
): Promise<{ id: string; similarity: number }[]> {
  const space = { model: query.model, dimensions: query.dimensions };
  const versions = await readVectorVersions(db, filter, space);
  const reported = filter.agentId ? await knowledgeIdsReportedBy(db, filter.agentId) : null;
  const type = filter.type ? vectorTypeCode(filter.type) : 0;
  const best = new Best(options.depth);
  const using = new Set<string>();
  const found: AgentVectors[] = [];
  for (const version of versions) {
    if (version.added <= version.removed) continue; // none in this space
    if (version.entries > COMPACT_AFTER && !is(db, PgTransaction))
      await compactVectorChanges(db, version.agentId, space).catch((error: unknown) =>
        logError(`[recall] could not sum the vector changes of agent ${version.agentId}; searches go on`, error),
      );
    const vectors = await cache.vectorsOf(db, version.agentId, space, version, using);
    if (vectors) {
      found.push(vectors);
      continue;
    }
    await readAgentVectors(db, version.agentId, space, null, (row) => {
      if (type !== 0 && row.type !== type) return;
      const similarity = dot(query.vector, row.vector);
      if (similarity < options.floor || !best.takes(similarity)) return;
      const id = uuidText(row.bytes, row.idAt);
      if (!reported || reported.has(id)) best.offer(id, similarity);
    });
  }
  if (found.length > 0) {
    const kernelQuery = int8Query(query.vector);
    for (const vectors of found) vectors.scan(kernelQuery, options.floor, type, reported, best);
  }
  return best.sorted();
}
