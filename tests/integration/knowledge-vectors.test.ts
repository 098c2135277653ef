// Recall by meaning from vectors kept in memory (domain/knowledge-vectors.ts): a search never
// sees less than Postgres has committed. A fact saved a moment ago is found by the next search,
// one deleted is gone, one edited or embedded again by another model is not found by its old
// vector; a search reads only what changed (a few new vectors, or everything after a removal);
// a transaction finds what it saved itself and nobody else does; memory stays within its limit.
// The offline embedding stands in for a model.
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { editKnowledgeItem, recordKnowledge } from "@/lib/domain/knowledge-items";
import { recallKnowledge } from "@/lib/domain/knowledge-recall";
import {
  KnowledgeVectorCache,
  knowledgeVectorCache,
  rankKnowledgeByMeaning,
  type VectorCacheCounts,
} from "@/lib/domain/knowledge-vectors";
import type { Db } from "@/lib/db/client";
import { compactVectorChanges, storeKnowledgeEmbeddings } from "@/lib/db/queries/knowledge-embeddings";
import { createKnowledgeItem, deleteKnowledgeItem, type KnowledgeFilter } from "@/lib/db/queries/knowledge-items";
import type { Agent } from "@/lib/db/schema";
import { embeddingOf, offlineEmbeddingChoice, vectorBytes, type Embedding } from "@/lib/llm/embeddings";
import { offlineEmbedding } from "@/lib/llm/offline-model";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTeamFixture } from "../support/fixtures";

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

const offline = offlineEmbeddingChoice();
const vectorOf = (text: string): Embedding => embeddingOf(offline, offlineEmbedding(text));
// The embedding job's queue, as far as these tests need it: an edit of the words queues it.
const noJobs = { embedKnowledge: async () => {} };

async function save(db: Db, teamId: string, agent: Agent, content: string, type: "fact" | "lesson" = "fact") {
  const { item, merged } = await recordKnowledge(db, noJobs, {
    teamId,
    agentId: agent.id,
    type,
    content,
    confidence: 0.7,
    conversationId: null,
    embedding: vectorOf(content),
  });
  return { id: item.id, merged };
}

/** An item with its vector, without the near-duplicate check (facts that read alike on purpose). */
const plant = (agent: Agent, content: string) =>
  createKnowledgeItem(database.db, { agentId: agent.id, type: "fact", content, embedding: vectorOf(content) });

/** The ids ranked by meaning for `query` (offline: at least 0.25 similar), as recall asks. */
async function closest(
  filter: KnowledgeFilter,
  query: string,
  options: { db?: Db; cache?: KnowledgeVectorCache } = {},
) {
  const ranked = await rankKnowledgeByMeaning(
    options.db ?? database.db,
    filter,
    vectorOf(query),
    { depth: 50, floor: 0.25 },
    options.cache,
  );
  return ranked.map((each) => each.id);
}

/** What the process's kept vectors did during `work`. */
async function countsDuring(work: () => Promise<unknown>): Promise<Partial<VectorCacheCounts>> {
  const cache = knowledgeVectorCache();
  const before = { ...cache.counts };
  await work();
  const changed: Partial<VectorCacheCounts> = {};
  for (const key of Object.keys(before) as (keyof VectorCacheCounts)[])
    if (cache.counts[key] !== before[key]) changed[key] = cache.counts[key] - before[key];
  return changed;
}

const BATTERY = "Pilot battery cells reached 500 Wh/kg, a record density.";
const CONTRACTS = "Analyzing the supplier's contract terms showed late-delivery penalties.";
const DISTRACTORS = [
  "Solar module prices fell 12% in 2025.",
  "Wind turbine blades grew to 120 m in length.",
  "The lead prefers briefings before 9 am.",
];
const BATTERY_SEARCH = "energy density of prototype batteries";
const CONTRACTS_SEARCH = "analysis of supplier contracts";

describe("vectors kept in memory", () => {
  it("find a fact saved a moment ago, and no longer one deleted, edited, or embedded again by another model", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const mine = { teamId: team.id };
    for (const fact of DISTRACTORS) await plant(lead, fact);
    const battery = await plant(lead, BATTERY);

    // The first search reads the team's vectors; the next finds them kept.
    expect(await countsDuring(async () => expect(await closest(mine, BATTERY_SEARCH)).toEqual([battery.id]))).toEqual({
      reloaded: 1,
    });
    expect(await countsDuring(async () => expect(await closest(mine, BATTERY_SEARCH)).toEqual([battery.id]))).toEqual({
      kept: 1,
    });

    // Saved (its near-duplicate check found the kept vectors current), then searched at once:
    // found, by reading only the new vector.
    const contracts = await save(database.db, team.id, lead, CONTRACTS);
    expect(
      await countsDuring(async () => expect(await closest(mine, CONTRACTS_SEARCH)).toEqual([contracts.id])),
    ).toEqual({ added: 1 });
    // As the knowledge page shows it.
    const page = await recallKnowledge(
      { db: database.db, model: offline, agentId: null, teamId: null },
      { teamId: team.id, q: CONTRACTS_SEARCH },
    );
    expect(page.map((item) => [item.content, item.matched])).toEqual([[CONTRACTS, { words: false, meaning: true }]]);

    // Deleted: gone from the ranking itself, and everything read again.
    expect(await deleteKnowledgeItem(database.db, battery.id)).toBe(true);
    expect(await countsDuring(async () => expect(await closest(mine, BATTERY_SEARCH)).toEqual([]))).toEqual({
      reloaded: 1,
    });

    // Edited: the old words' vector is dropped, so the old meaning no longer finds it.
    await editKnowledgeItem(database.db, noJobs, contracts.id, { content: "Contracts: nothing to report." });
    expect(await closest(mine, CONTRACTS_SEARCH)).toEqual([]);

    // Embedded again by another model: the offline search does not use the old vector.
    const solar = await save(database.db, team.id, lead, "Rooftop solar installs doubled in Spain.");
    expect(await closest(mine, "rooftop solar installations")).toContain(solar.id);
    const other = {
      vector: vectorOf("Rooftop solar installs doubled in Spain.").vector,
      model: "another-model",
      dimensions: 256,
    };
    expect(
      await storeKnowledgeEmbeddings(
        database.db,
        [{ id: solar.id, content: "Rooftop solar installs doubled in Spain." }],
        [other],
      ),
    ).toEqual([solar.id]);
    expect(await closest(mine, "rooftop solar installations")).not.toContain(solar.id);
    const otherQuery = { ...vectorOf("rooftop solar installations"), model: "another-model" };
    expect(
      (await rankKnowledgeByMeaning(database.db, mine, otherQuery, { depth: 10, floor: 0.25 })).map((each) => each.id),
    ).toEqual([solar.id]);
  });

  it("see an item's new type, a vector made before the newest one but committed after it, and an item passed to another agent", async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const [scout] = subordinates as [Agent];
    const battery = await save(database.db, team.id, lead, BATTERY);
    await save(database.db, team.id, lead, DISTRACTORS[0]!);
    expect(await closest({ teamId: team.id, type: "lesson" }, BATTERY_SEARCH)).toEqual([]);
    await editKnowledgeItem(database.db, noJobs, battery.id, { type: "lesson" });
    expect(await closest({ teamId: team.id, type: "lesson" }, BATTERY_SEARCH)).toEqual([battery.id]);

    // Made an hour before the newest vector read, committed after it: reading only what is
    // newer would miss it; the count of what was added says so, and everything is read again.
    const [late] = await database.db.execute<{ id: string }>(sql`
      insert into knowledge_items (agent_id, type, content, embedding, embedding_model, embedding_dimensions, embedded_at)
      values (${lead.id}, 'fact', ${CONTRACTS}, ${vectorBytes(vectorOf(CONTRACTS).vector)}, 'offline', 256, now() - interval '1 hour')
      returning id`);
    expect(
      await countsDuring(async () => expect(await closest({ teamId: team.id }, CONTRACTS_SEARCH)).toEqual([late!.id])),
    ).toEqual({
      reloaded: 1,
    });

    // An item handed over to another agent (as when its first reporter is removed).
    expect(await closest({ agentIds: [lead.id] }, BATTERY_SEARCH)).toEqual([battery.id]);
    expect(await closest({ agentIds: [scout.id] }, BATTERY_SEARCH)).toEqual([]);
    await database.db.execute(sql`update knowledge_items set agent_id = ${scout.id} where id = ${battery.id}`);
    expect(await closest({ agentIds: [lead.id] }, BATTERY_SEARCH)).toEqual([]);
    expect(await closest({ agentIds: [scout.id] }, BATTERY_SEARCH)).toEqual([battery.id]);
    expect(await closest({ teamId: team.id }, BATTERY_SEARCH)).toEqual([battery.id]);

    // The knowledge page's agent filter: the items the agent reported, first or again.
    expect(await closest({ agentId: lead.id }, BATTERY_SEARCH)).toEqual([battery.id]);
    expect(await closest({ agentId: lead.id }, CONTRACTS_SEARCH)).toEqual([]); // written by SQL: no source
    expect(await closest({ agentId: scout.id }, BATTERY_SEARCH)).toEqual([]); // passed over, never reported
  });

  it("in a transaction that saved a fact, find it there and nowhere else, and keep nothing of it", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await save(database.db, team.id, lead, DISTRACTORS[0]!);
    expect(await closest({ teamId: team.id }, BATTERY_SEARCH)).toEqual([]);
    await expect(
      database.db.transaction(async (tx) => {
        const saved = await save(tx, team.id, lead, BATTERY);
        // Read in the transaction: its own fact is there.
        expect(
          await countsDuring(async () =>
            expect(await closest({ teamId: team.id }, BATTERY_SEARCH, { db: tx })).toEqual([saved.id]),
          ),
        ).toEqual({ streamed: 1 });
        // A restatement in other words saved in the same transaction is known: the near-duplicate
        // check compares meaning with what the transaction saved too.
        const first = await save(tx, team.id, lead, "Pilot cells reached 500 Wh/kg.");
        expect(
          await save(tx, team.id, lead, "The pilot battery cells reached an energy density of 500 Wh/kg."),
        ).toEqual({
          id: first.id,
          merged: true,
        });
        // Outside it, not yet.
        expect(await closest({ teamId: team.id }, BATTERY_SEARCH)).toEqual([]);
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(
      await countsDuring(async () => expect(await closest({ teamId: team.id }, BATTERY_SEARCH)).toEqual([])),
    ).toEqual({
      kept: 1,
    });

    // A transaction that changed nothing yet uses the kept vectors, and a committed save is found after it.
    const committed = await database.db.transaction(async (tx) => {
      expect(await countsDuring(() => closest({ teamId: team.id }, BATTERY_SEARCH, { db: tx }))).toEqual({ kept: 1 });
      return save(tx, team.id, lead, BATTERY);
    });
    expect(await closest({ teamId: team.id }, BATTERY_SEARCH)).toEqual([committed.id]);
  });

  it("read a cold team's vectors once for searches that come together", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const battery = await save(database.db, team.id, lead, BATTERY);
    const counts = await countsDuring(async () => {
      const found = await Promise.all([1, 2, 3].map(() => closest({ teamId: team.id }, BATTERY_SEARCH)));
      expect(found).toEqual([[battery.id], [battery.id], [battery.id]]);
    });
    expect(counts).toEqual({ reloaded: 1, kept: 2 });
  });

  it("rank as the exact vectors do: the same items, similarities within 0.005", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const subjects = [
      "solar module prices",
      "battery cell density",
      "wind turbine orders",
      "supplier contract penalties",
    ];
    const changes = ["fell", "rose", "doubled", "stalled", "recovered"];
    let n = 0;
    for (const subject of subjects)
      for (const change of changes)
        for (const region of ["Spain", "Texas", "Gujarat"])
          await plant(lead, `Finding ${++n}: ${subject} in ${region} ${change} ${n % 17}% in ${2020 + (n % 6)}.`);
    const exact = new KnowledgeVectorCache(0); // keeps nothing: every vector as stored
    for (const query of [BATTERY_SEARCH, "solar prices", "supplier contract penalties region 12", "Texas wind"]) {
      const kept = await rankKnowledgeByMeaning(database.db, { teamId: team.id }, vectorOf(query), {
        depth: 20,
        floor: 0.25,
      });
      const streamed = await rankKnowledgeByMeaning(
        database.db,
        { teamId: team.id },
        vectorOf(query),
        { depth: 20, floor: 0.25 },
        exact,
      );
      expect(streamed.length).toBeGreaterThan(0);
      const exactById = new Map(streamed.map((each) => [each.id, each.similarity]));
      // The same items, but for one at the edge that ties within the rounding.
      const last = streamed.at(-1)!.similarity;
      for (const each of kept) {
        if (!exactById.has(each.id)) expect(Math.abs(each.similarity - last)).toBeLessThan(0.005);
        else expect(Math.abs(each.similarity - exactById.get(each.id)!)).toBeLessThan(0.005);
      }
      expect(kept.length).toBe(streamed.length);
    }
    expect(exact.counts).toMatchObject({ streamed: 4, reloaded: 0, kept: 0 });
  });

  it("stay within their memory: the least recently searched let go, a team too large read as it streams", async () => {
    const teams = [];
    for (const size of [6, 6, 20]) {
      const { team, lead } = await createTeamFixture(database.db);
      const ids = [];
      for (let i = 0; i < size; i++) ids.push((await plant(lead, `${BATTERY} Cell ${i}.`)).id);
      teams.push({ team, ids });
    }
    const [a, b, large] = teams as [(typeof teams)[0], (typeof teams)[0], (typeof teams)[0]];
    const perVector = 256 + 21;
    const cache = new KnowledgeVectorCache(10 * perVector); // one small team's at a time
    const search = async (teamId: string) => (await closest({ teamId }, BATTERY_SEARCH, { cache })).sort();

    expect(await search(a.team.id)).toEqual([...a.ids].sort());
    expect(cache.bytes).toBe(6 * perVector);
    expect(await search(b.team.id)).toEqual([...b.ids].sort());
    expect(cache.counts).toMatchObject({ reloaded: 2, evicted: 1 });
    expect(cache.bytes).toBeLessThanOrEqual(cache.maxBytes);
    expect(await search(a.team.id)).toEqual([...a.ids].sort());
    expect(cache.counts).toMatchObject({ reloaded: 3, evicted: 2, kept: 0 });

    // Twenty vectors do not fit in ten: read from Postgres for each search, the small team kept meanwhile.
    expect(await search(large.team.id)).toEqual([...large.ids].sort());
    expect(await search(large.team.id)).toEqual([...large.ids].sort());
    expect(cache.counts).toMatchObject({ streamed: 2, evicted: 2 });
    expect(await search(a.team.id)).toEqual([...a.ids].sort());
    expect(cache.counts).toMatchObject({ kept: 1 });
    expect(cache.bytes).toBeLessThanOrEqual(cache.maxBytes);
  });

  it("are counted by the triggers exactly: the sums are what is stored, and stay so once summed", async () => {
    // After every test above: saves, deletes, edits, a type changed, another model, an owner changed, a rollback.
    const counted = async () =>
      database.db.execute<{
        agent_id: string;
        model: string;
        dimensions: number;
        counted: number;
        stored: number;
        rows: number;
      }>(sql`
        with counted as (
          select agent_id, embedding_model as model, embedding_dimensions as dimensions,
                 (sum(added) - sum(removed))::int as counted, count(*)::int as rows
            from knowledge_vector_changes group by 1, 2, 3
        ), stored as (
          select agent_id, embedding_model as model, embedding_dimensions as dimensions, count(*)::int as stored
            from knowledge_items where embedding is not null group by 1, 2, 3
        )
        select agent_id, model, dimensions, coalesce(c.counted, 0) as counted, coalesce(s.stored, 0) as stored,
               coalesce(c.rows, 0) as rows
          from counted c full join stored s using (agent_id, model, dimensions)
         order by rows desc`);
    const before = await counted();
    expect(before.length).toBeGreaterThan(5);
    expect(before.filter((row) => row.counted !== row.stored)).toEqual([]);
    const busiest = before[0]!;
    expect(busiest.rows).toBeGreaterThan(1);
    await compactVectorChanges(database.db, busiest.agent_id, { model: busiest.model, dimensions: busiest.dimensions });
    const after = await counted();
    expect(after.filter((row) => row.counted !== row.stored)).toEqual([]);
    expect(after.find((row) => row.agent_id === busiest.agent_id && row.model === busiest.model)?.rows).toBe(1);

    // A team deleted takes its agents' counts with it.
    const { team, lead } = await createTeamFixture(database.db);
    await save(database.db, team.id, lead, BATTERY);
    await database.db.execute(sql`delete from teams where id = ${team.id}`);
    const [left] = await database.db.execute<{ count: number }>(
      sql`select count(*)::int as count from knowledge_vector_changes where agent_id = ${lead.id}`,
    );
    expect(left!.count).toBe(0);
  });
});
