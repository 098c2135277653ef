import "server-only";
// The vectors of knowledge items (recall by meaning): stored with the model and length they
// were made with, streamed out for exact ranking, found when missing or of another model.
import { and, asc, eq, is, isNull, sql } from "drizzle-orm";
import { PgTransaction } from "drizzle-orm/pg-core";
import { PostgresJsSession } from "drizzle-orm/postgres-js";
import type postgres from "postgres";
import type { Db } from "../client";
import { agents, knowledgeItems } from "../schema";
import { isUuid } from "@/lib/util/ids";
import { readVector, vectorBytes, type Embedding } from "@/lib/llm/embeddings";
import type { KnowledgeFilter } from "./knowledge-items";

/** The columns that store a vector, for an insert or an update. */
export function storedEmbedding(embedding: Embedding) {
  return {
    embedding: vectorBytes(embedding.vector),
    embeddingModel: embedding.model,
    embeddingDimensions: embedding.dimensions,
    embeddedAt: sql`clock_timestamp()`,
  };
}

/** The vectors one model makes: its id, and the length asked for (null: whatever length it makes). */
export type EmbeddingSpace = { model: string; dimensions: number | null };

/** An item to embed: its content as it read when it was listed. */
export type UnembeddedItem = { id: string; agentId: string; content: string };

/**
 * Up to `limit` items of one agent (the agent of the oldest item waiting) that have no vector
 * in `space`: never embedded, edited since, or embedded by another model or at another length.
 * One agent's, so the call that embeds them is that agent's (its usage row and its team's budget).
 */
export async function listUnembeddedKnowledge(db: Db, space: EmbeddingSpace, limit: number): Promise<UnembeddedItem[]> {
  // Never embedded, by the partial index, before those of another model (a scan; only after a change of model).
  const otherSpace = sql`${knowledgeItems.embedding} is not null and (${knowledgeItems.embeddingModel} <> ${space.model}${
    space.dimensions === null ? sql`` : sql` or ${knowledgeItems.embeddingDimensions} <> ${space.dimensions}`
  })`;
  for (const waiting of [isNull(knowledgeItems.embedding), otherSpace]) {
    const [oldest] = await db
      .select({ agentId: knowledgeItems.agentId })
      .from(knowledgeItems)
      .where(waiting)
      .orderBy(asc(knowledgeItems.createdAt), asc(knowledgeItems.id))
      .limit(1);
    if (!oldest) continue;
    return db
      .select({ id: knowledgeItems.id, agentId: knowledgeItems.agentId, content: knowledgeItems.content })
      .from(knowledgeItems)
      .where(and(waiting, eq(knowledgeItems.agentId, oldest.agentId)))
      .orderBy(asc(knowledgeItems.createdAt), asc(knowledgeItems.id))
      .limit(limit);
  }
  return [];
}

/**
 * Stores the vectors of `items` (in their order), each only if the item still says what was
 * embedded: an item edited meanwhile waits for its own turn. One statement, so a batch is
 * stored whole or not at all. Returns the ids stored.
 */
export async function storeKnowledgeEmbeddings(
  db: Db,
  items: readonly { id: string; content: string }[],
  embeddings: readonly Embedding[],
): Promise<string[]> {
  const [first] = embeddings;
  if (!first || items.length !== embeddings.length)
    throw new Error(`${embeddings.length} vectors for ${items.length} knowledge items`);
  if (embeddings.some((each) => each.dimensions !== first.dimensions || each.model !== first.model))
    throw new Error("The vectors of one batch differ in model or length");
  const size = first.dimensions * 4;
  const blob = Buffer.concat(embeddings.map((each) => vectorBytes(each.vector)));
  const rows = await db.execute<{ id: string }>(sql`
    update knowledge_items k
       set embedding = substring(${blob}::bytea from ((v.n - 1) * ${size} + 1)::int for ${size}),
           embedding_model = ${first.model}, embedding_dimensions = ${first.dimensions}, embedded_at = clock_timestamp()
      from unnest(${sql.param(items.map((item) => item.id))}::uuid[], ${sql.param(items.map((item) => item.content))}::text[])
           with ordinality as v(id, content, n)
     where k.id = v.id and k.content = v.content
    returning k.id`);
  return rows.map((row) => row.id);
}

/** How many items have no vector in `space` (the backfill's progress). */
export async function countUnembeddedKnowledge(db: Db, space: EmbeddingSpace): Promise<number> {
  const [row] = await db.execute<{ count: number }>(sql`
    select count(*)::int as count from knowledge_items
     where embedding is null or embedding_model <> ${space.model}${
       space.dimensions === null ? sql`` : sql` or embedding_dimensions <> ${space.dimensions}`
     }`);
  return row?.count ?? 0;
}

/**
 * Calls `visit` with each vector in `space` (a model and a length) of the items `filter`
 * selects, streamed from Postgres as binary COPY: recall ranks them all, exactly, in process,
 * and COPY moves them several times faster than a SELECT of the same bytes
 * (docs/decisions/2026-11-27-recall-by-meaning.md). The vector handed to `visit` is reused
 * for the next one (copy it to keep it); `id()` makes the item's id, for the vectors kept.
 *
 * COPY takes no parameters, so the statement carries its values itself: ids checked to be
 * uuids, the type checked against the vocabulary, the model id as hex (no text of anyone's
 * reaches the statement as written).
 */
export async function forEachKnowledgeVector(
  db: Db,
  filter: KnowledgeFilter,
  space: { model: string; dimensions: number },
  visit: (id: () => string, vector: Float32Array) => void,
): Promise<void> {
  const uuid = (value: string) => {
    if (!isUuid(value)) throw new Error(`Not a uuid: ${JSON.stringify(value)}`);
    return `'${value}'::uuid`;
  };
  if (!Number.isInteger(space.dimensions) || space.dimensions <= 0)
    throw new Error(`Not a vector length: ${space.dimensions}`);
  const conditions = [
    `k.embedding_model = convert_from(decode('${Buffer.from(space.model, "utf8").toString("hex")}', 'hex'), 'UTF8')`,
    `k.embedding_dimensions = ${space.dimensions}`,
  ];
  if (filter.agentId)
    conditions.push(
      `exists (select 1 from knowledge_sources s where s.knowledge_item_id = k.id and s.agent_id = ${uuid(filter.agentId)})`,
    );
  if (filter.agentIds) conditions.push(`k.agent_id in (${["null", ...filter.agentIds.map(uuid)].join(", ")})`);
  if (filter.teamId) {
    // The team's agents as values, not a subquery: the planner then reads a small team's rows
    // by the agent index instead of scanning every team's vectors.
    const members = await db.select({ id: agents.id }).from(agents).where(eq(agents.teamId, filter.teamId));
    conditions.push(`k.agent_id in (${["null", ...members.map((member) => uuid(member.id))].join(", ")})`);
  }
  if (filter.type) {
    if (!/^[a-z]+$/.test(filter.type)) throw new Error(`Not a knowledge type: ${JSON.stringify(filter.type)}`);
    conditions.push(`k.type = '${filter.type}'`);
  }
  const statement = `copy (select k.id, k.embedding from knowledge_items k where ${conditions.join(" and ")}) to stdout with (format binary)`;
  // A connection of its own (a transaction has one already): postgres.js sends a query to a
  // busy connection when the pool is full, and one sent to a connection in COPY fails.
  const inTransaction = is(db, PgTransaction);
  const pool = clientOf(db);
  const connection = inTransaction ? pool : await pool.reserve();
  try {
    const stream = await connection.unsafe(statement).readable();
    const reader = new CopyRows(space.dimensions, visit);
    let failure: unknown;
    // Read to the end whatever happens, so the connection goes back out of COPY.
    for await (const chunk of stream) {
      if (failure !== undefined) continue;
      try {
        reader.push(chunk as Buffer);
      } catch (error) {
        failure = error;
      }
    }
    if (failure !== undefined) throw failure;
    reader.end();
  } finally {
    if (!inTransaction) (connection as postgres.ReservedSql).release();
  }
}

/**
 * The postgres.js client under a drizzle handle or transaction: what COPY needs (drizzle has no
 * COPY). By drizzle's `is`, not instanceof: a bundle (Next's) may hold two copies of its classes.
 */
function clientOf(db: Db): postgres.Sql {
  const session = db._.session;
  if (!is(session, PostgresJsSession)) throw new Error("Not a postgres.js database handle");
  return session.client as postgres.Sql;
}

/** The signature, flags and header extension length that open a binary COPY stream. */
const COPY_SIGNATURE = Buffer.from("PGCOPY\n\xff\r\n\0", "latin1");
const COPY_HEADER_BYTES = COPY_SIGNATURE.length + 8;

/**
 * Reads the rows (uuid, bytea) of a binary COPY stream as it arrives: each row is 2 bytes of
 * field count, then each field's 4-byte length and its bytes; a field count of -1 ends it. Rows
 * are read where they lie in each chunk; only a row cut between two chunks is copied. The id is
 * made text only when the visitor asks (most vectors are not kept).
 */
class CopyRows {
  private headerDone = false;
  private head: Buffer = Buffer.alloc(0);
  private carry: Buffer = Buffer.alloc(0);
  private ended = false;
  private readonly vector: Float32Array;
  private readonly rowBytes: number;
  private row: { buffer: Buffer; at: number } = { buffer: Buffer.alloc(0), at: 0 };
  private readonly readId = () => uuidText(this.row.buffer, this.row.at + 6);

  constructor(
    private readonly dimensions: number,
    private readonly visit: (id: () => string, vector: Float32Array) => void,
  ) {
    this.vector = new Float32Array(dimensions);
    this.rowBytes = 2 + 4 + 16 + 4 + dimensions * 4;
  }

  push(input: Buffer): void {
    let chunk = input;
    if (!this.headerDone) {
      this.head = Buffer.concat([this.head, chunk]);
      if (this.head.length < COPY_HEADER_BYTES) return;
      if (!this.head.subarray(0, COPY_SIGNATURE.length).equals(COPY_SIGNATURE))
        throw new Error("Not a binary COPY stream");
      const start = COPY_HEADER_BYTES + this.head.readInt32BE(COPY_SIGNATURE.length + 4);
      if (this.head.length < start) return;
      chunk = this.head.subarray(start);
      this.head = Buffer.alloc(0);
      this.headerDone = true;
    }
    let at = 0;
    if (this.carry.length > 0) {
      // The row cut at the end of the last chunk, completed from this one (at most one row).
      const joined = Buffer.concat([this.carry, chunk.subarray(0, this.rowBytes - this.carry.length)]);
      const used = this.rows(joined, 0);
      if (used === 0) {
        this.carry = joined;
        return;
      }
      at = used - this.carry.length;
    }
    const stopped = this.rows(chunk, at);
    this.carry = Buffer.from(chunk.subarray(stopped));
  }

  /** Visits the whole rows of `buffer` from `from`; where it stopped (a row cut short, or the end). */
  private rows(buffer: Buffer, from: number): number {
    let at = from;
    while (buffer.length - at >= 2) {
      if (this.ended) throw new Error("Bytes after the end of a binary COPY stream");
      const fields = buffer.readInt16BE(at);
      if (fields === -1) {
        this.ended = true;
        at += 2;
        continue;
      }
      if (buffer.length - at < this.rowBytes) break;
      if (fields !== 2 || buffer.readInt32BE(at + 2) !== 16 || buffer.readInt32BE(at + 22) !== this.dimensions * 4)
        throw new Error("A vector of another length in a binary COPY stream");
      this.row = { buffer, at };
      this.visit(this.readId, readVector(buffer, at + 26, this.vector));
      at += this.rowBytes;
    }
    return at;
  }

  end(): void {
    if (!this.ended || this.carry.length > 0) throw new Error("The binary COPY stream ended early");
  }
}

function uuidText(buffer: Buffer, at: number): string {
  const hex = buffer.toString("hex", at, at + 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
