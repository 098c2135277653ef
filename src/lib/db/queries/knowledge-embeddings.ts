import "server-only";
// The vectors of knowledge items (recall by meaning): stored with the model and length they
// were made with, read out for ranking (kept by each process, or streamed), found when missing or
// of another model; the counts of their changes that tell a process its kept ones are current.
import { and, asc, eq, is, isNull, sql, type SQL } from "drizzle-orm";
import { PgTransaction } from "drizzle-orm/pg-core";
import { PostgresJsSession } from "drizzle-orm/postgres-js";
import type postgres from "postgres";
import type { Db } from "../client";
import { knowledgeItems, knowledgeItemTypes, type KnowledgeItemType } from "../schema";
import { isUuid } from "@/lib/util/ids";
import { vectorBytes, vectorReader, type Embedding } from "@/lib/llm/embeddings";
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

/** A vector space for certain: a model and the length its vectors have. */
export type VectorSpace = { model: string; dimensions: number };

/**
 * Where an agent's vectors in a space stand: how many were ever added and removed (the sums
 * of knowledge_vector_changes, see schema.ts), and whether the transaction reading them
 * changed some itself (`own`: what it sees is not committed yet, so no other search may share it).
 */
export type VectorVersion = { added: number; removed: number; own: boolean };

/** Whether this transaction (or a savepoint in it) wrote one of the change rows. */
const writtenHere = (writtenBy: string) =>
  `coalesce(bool_or(${writtenBy} = pg_current_xact_id_if_assigned()::text::bigint), false)`;

/**
 * The version of each agent's vectors in `space`, for the agents whose items `filter` can
 * select (a team's, some agents', the owners of items an agent reported; every agent without
 * one), and how many change rows each has (`entries`: compactVectorChanges when they pile up).
 * One statement, so what it says of each agent is of one moment.
 */
export async function readVectorVersions(
  db: Db,
  filter: KnowledgeFilter,
  space: VectorSpace,
): Promise<(VectorVersion & { agentId: string; entries: number })[]> {
  const scope: SQL[] = [];
  if (filter.teamId) scope.push(sql`a.team_id = ${filter.teamId}`);
  if (filter.agentIds) scope.push(sql`a.id = any(${sql.param(filter.agentIds)}::uuid[])`);
  if (filter.agentId)
    scope.push(sql`a.id in (select k.agent_id from knowledge_sources s join knowledge_items k on k.id = s.knowledge_item_id
                             where s.agent_id = ${filter.agentId})`);
  const rows = await db.execute<{
    agent_id: string;
    added: string;
    removed: string;
    entries: number;
    own: boolean;
  }>(sql`
    select a.id as agent_id, coalesce(sum(c.added), 0)::text as added, coalesce(sum(c.removed), 0)::text as removed,
           count(c.agent_id)::int as entries, ${sql.raw(writtenHere("c.written_by"))} as own
      from agents a
      left join knowledge_vector_changes c
        on c.agent_id = a.id and c.embedding_model = ${space.model} and c.embedding_dimensions = ${space.dimensions}
     ${scope.length ? sql`where ${sql.join(scope, sql` and `)}` : sql``}
     group by a.id`);
  return rows.map((row) => ({
    agentId: row.agent_id,
    added: Number(row.added),
    removed: Number(row.removed),
    entries: row.entries,
    own: row.own,
  }));
}

/**
 * Sums an agent's change rows in `space` into one (the sums stay what they were, so a version
 * read before and after is the same). Two at once are harmless: what one deleted, the other
 * no longer finds. Not for a transaction that waits for anything: it locks the rows it sums.
 */
export async function compactVectorChanges(db: Db, agentId: string, space: VectorSpace): Promise<void> {
  await db.execute(sql`
    with gone as (
      delete from knowledge_vector_changes
       where agent_id = ${agentId} and embedding_model = ${space.model} and embedding_dimensions = ${space.dimensions}
      returning added, removed
    )
    insert into knowledge_vector_changes (agent_id, embedding_model, embedding_dimensions, added, removed)
    select ${agentId}, ${space.model}, ${space.dimensions}, sum(added), sum(removed) from gone
    having count(*) > 0 and exists (select 1 from agents where id = ${agentId})`);
}

/**
 * One vector read off the wire, handed to the visitor of readAgentVectors and reused for the
 * next (copy what you keep): the item's id as 16 bytes at `idAt` of `bytes`, its type (1 + its
 * place in knowledgeItemTypes), when it was embedded (µs since 2000, Postgres' own clock) and
 * the vector.
 */
export type VectorRow = { bytes: Buffer; idAt: number; type: number; embeddedAt: number; vector: Float32Array };

/** The number a knowledge item type has in a VectorRow. */
export function vectorTypeCode(type: KnowledgeItemType): number {
  return knowledgeItemTypes.indexOf(type) + 1;
}

/**
 * Calls `visit` with each vector of one agent's items in `space` (those embedded after
 * `since`, µs since 2000, when given), and returns the version of the agent's vectors at the
 * same moment: one statement, streamed from Postgres as binary COPY, which moves the vectors
 * several times faster than a SELECT of the same bytes (docs/decisions/2026-11-27-recall-by-meaning.md).
 *
 * COPY takes no parameters, so the statement carries its values itself: the id checked to be a
 * uuid, numbers checked to be whole, the model id as hex (no text of anyone's reaches the
 * statement as written).
 */
export async function readAgentVectors(
  db: Db,
  agentId: string,
  space: VectorSpace,
  since: number | null,
  visit: (row: VectorRow) => void,
): Promise<VectorVersion> {
  if (!isUuid(agentId)) throw new Error(`Not a uuid: ${JSON.stringify(agentId)}`);
  if (!Number.isInteger(space.dimensions) || space.dimensions <= 0)
    throw new Error(`Not a vector length: ${space.dimensions}`);
  if (since !== null && !Number.isSafeInteger(since)) throw new Error(`Not a moment: ${since}`);
  const model = `convert_from(decode('${Buffer.from(space.model, "utf8").toString("hex")}', 'hex'), 'UTF8')`;
  const types = `array[${knowledgeItemTypes.map((type) => `'${type}'`).join(", ")}]::text[]`;
  const statement = `copy (
    with version as (
      select coalesce(sum(added), 0)::int8 as added, coalesce(sum(removed), 0)::int8 as removed, ${writtenHere("written_by")} as own
        from knowledge_vector_changes
       where agent_id = '${agentId}'::uuid and embedding_model = ${model} and embedding_dimensions = ${space.dimensions}
    )
    select v.added, v.removed, v.own, k.id, array_position(${types}, k.type)::int2, k.embedded_at, k.embedding
      from version v
      left join knowledge_items k
        on k.agent_id = '${agentId}'::uuid and k.embedding is not null
       and k.embedding_model = ${model} and k.embedding_dimensions = ${space.dimensions}${
         since === null
           ? ""
           : ` and k.embedded_at > timestamptz '2000-01-01 00:00:00+00' + interval '1 microsecond' * ${since}`
       }
  ) to stdout with (format binary)`;
  // A connection of its own (a transaction has one already): postgres.js sends a query to a
  // busy connection when the pool is full, and one sent to a connection in COPY fails.
  const inTransaction = is(db, PgTransaction);
  const pool = clientOf(db);
  const connection = inTransaction ? pool : await pool.reserve();
  try {
    const stream = await connection.unsafe(statement).readable();
    const reader = new VectorCopyReader(space.dimensions, visit);
    let failure: unknown;
    // Postgres sends a row a message, and postgres.js a message a chunk: by 'data' events, not
    // an async iterator (a promise a row made reading 100 000 vectors half again as slow).
    // Read to the end whatever happens, so the connection goes back out of COPY.
    await new Promise<void>((resolve, reject) => {
      stream.on("data", (chunk: Buffer) => {
        if (failure !== undefined) return;
        try {
          reader.push(chunk);
        } catch (error) {
          failure = error;
        }
      });
      stream.once("end", resolve);
      stream.once("error", reject);
    });
    if (failure !== undefined) throw failure;
    return reader.end();
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

const NOTHING = Buffer.alloc(0);

/** A row's fields: added, removed, own (the version), then the item's id, type, embedded_at and vector (null without items). */
const FIELDS = 7;
/** The bytes of a row without an item: its field count, three fields, four null lengths. */
const VERSION_ROW_BYTES = 2 + (4 + 8) + (4 + 8) + (4 + 1) + 4 * 4;

/**
 * Reads readAgentVectors' rows from a binary COPY stream as it arrives: each row is 2 bytes of
 * field count, then each field's 4-byte length (-1: null) and its bytes; a field count of -1
 * ends it. Rows are read where they lie in each chunk; only a row cut between two chunks is
 * copied.
 */
class VectorCopyReader {
  private headerDone = false;
  private head: Buffer = NOTHING;
  private carry: Buffer = NOTHING;
  private ended = false;
  private version: VectorVersion | null = null;
  private readonly row: VectorRow;
  private readonly readVector: (bytes: Buffer, offset: number) => Float32Array;
  private readonly itemRowBytes: number;

  constructor(
    private readonly dimensions: number,
    private readonly visit: (row: VectorRow) => void,
  ) {
    this.row = { bytes: NOTHING, idAt: 0, type: 0, embeddedAt: 0, vector: new Float32Array(dimensions) };
    this.readVector = vectorReader(this.row.vector);
    this.itemRowBytes = VERSION_ROW_BYTES - 4 * 4 + (4 + 16) + (4 + 2) + (4 + 8) + (4 + dimensions * 4);
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
      this.head = NOTHING;
      this.headerDone = true;
    }
    let at = 0;
    if (this.carry.length > 0) {
      // The row cut at the end of the last chunk, completed from this one (at most one row).
      const joined = Buffer.concat([this.carry, chunk.subarray(0, this.itemRowBytes - this.carry.length)]);
      const used = this.rows(joined, 0);
      if (used === 0) {
        this.carry = joined;
        return;
      }
      at = used - this.carry.length;
    }
    const stopped = this.rows(chunk, at);
    this.carry = stopped === chunk.length ? NOTHING : Buffer.from(chunk.subarray(stopped));
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
      if (fields !== FIELDS) throw new Error(`A row of ${fields} fields in a stream of vectors`);
      if (buffer.length - at < VERSION_ROW_BYTES) break;
      const idLength = buffer.readInt32BE(at + 2 + 12 + 12 + 5);
      const rowBytes = idLength === -1 ? VERSION_ROW_BYTES : this.itemRowBytes;
      if (buffer.length - at < rowBytes) break;
      this.version ??= {
        added: int64(buffer, at + 2 + 4),
        removed: int64(buffer, at + 2 + 12 + 4),
        own: buffer[at + 2 + 24 + 4] === 1,
      };
      if (idLength !== -1) {
        const idAt = at + 2 + 29 + 4;
        if (
          idLength !== 16 ||
          buffer.readInt32BE(idAt + 16) !== 2 ||
          buffer.readInt32BE(idAt + 22) !== 8 ||
          buffer.readInt32BE(idAt + 34) !== this.dimensions * 4
        )
          throw new Error("A vector of another length in a binary COPY stream");
        const row = this.row;
        row.bytes = buffer;
        row.idAt = idAt;
        row.type = buffer.readInt16BE(idAt + 20);
        row.embeddedAt = int64(buffer, idAt + 26);
        this.readVector(buffer, idAt + 38);
        this.visit(row);
      }
      at += rowBytes;
    }
    return at;
  }

  end(): VectorVersion {
    if (!this.ended || this.carry.length > 0 || !this.version) throw new Error("The binary COPY stream ended early");
    return this.version;
  }
}

/** A signed 64-bit big-endian integer as a number (exact below 2^53: counts, µs since 2000). */
function int64(buffer: Buffer, at: number): number {
  return buffer.readInt32BE(at) * 4_294_967_296 + buffer.readUInt32BE(at + 4);
}

/** A uuid's 16 bytes as its text. */
export function uuidText(bytes: Uint8Array, at: number): string {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset + at, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
