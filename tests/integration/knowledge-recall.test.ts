// Memory that recalls by meaning: a team's knowledge is found by its words and by its meaning
// together (reciprocal rank fusion). A search that shares only part of a fact's words finds it
// where full-text search (every word must match) does not; a name searched for still comes first;
// a fact restated in other words is recognised as known; an item saved while the embedding model
// is down is found by words and embedded later through its job (the outbox), and every
// embedding call is a priced usage row. The offline embedding stands in for a model, and the fake
// OpenAI server's /embeddings for a provider (the SDK's own client runs against it).
import { inArray, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { editKnowledgeItem, isNearDuplicate, recordKnowledge } from "@/lib/domain/knowledge-items";
import { embedWaitingKnowledge } from "@/lib/domain/knowledge-embedding";
import { embedOrNot, readSearch, recallKnowledge } from "@/lib/domain/knowledge-recall";
import type { ToolContext } from "@/lib/engine/tools";
import { knowledgeTools } from "@/lib/engine/tools/knowledge-tools";
import type { Db } from "@/lib/db/client";
import { getBackgroundConversation } from "@/lib/db/queries/conversations";
import { countUnembeddedKnowledge } from "@/lib/db/queries/knowledge-embeddings";
import { createKnowledgeItem, searchKnowledgeItems, withKnowledgeSources } from "@/lib/db/queries/knowledge-items";
import { type Agent, knowledgeItems, type Team } from "@/lib/db/schema";
import { JobQueue } from "@/lib/jobs/job-queue";
import { KNOWLEDGE_EMBEDDING_QUEUE } from "@/lib/jobs/queues";
import { chooseEmbeddingModel, offlineEmbeddingChoice, type EmbeddingChoice } from "@/lib/llm/embeddings";
import { embedModelValues } from "@/lib/llm/model-call";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeOpenAI, type FakeEmbeddingReply, type FakeOpenAI } from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../support/worker-process";

let database: TestDatabase;
let jobs: JobQueue;
let openai: FakeOpenAI;
beforeAll(async () => {
  database = await createTestDatabase();
  jobs = await JobQueue.start(database.url, "web", { quiet: true });
  openai = await startFakeOpenAI();
});
afterAll(async () => {
  await jobs?.stop({ graceful: false, timeoutMs: 1000 });
  await openai?.close();
  await database?.drop();
});

const logs: string[] = [];
const log = (message: string, error?: unknown) => logs.push(`${message}${error ? ` ${String(error)}` : ""}`);

/** The embedding model on the fake server, as EMBEDDING_MODEL / EMBEDDING_DIMENSIONS choose it. */
const providerEmbedding = (dimensions?: number): EmbeddingChoice =>
  chooseEmbeddingModel({
    OPENAI_BASE_URL: openai.url,
    OPENAI_API_KEY: undefined,
    EMBEDDING_MODEL: "text-embedding-3-small",
    EMBEDDING_DIMENSIONS: dimensions,
  });

/** An agent's knowledge tools as a turn runs them; each write in a transaction of its own (as runEffect does). */
async function toolsOf(team: Team, agent: Agent, embedding: EmbeddingChoice = offlineEmbeddingChoice()) {
  const conversation = await getBackgroundConversation(database.db, agent.id);
  const context: ToolContext = {
    db: database.db,
    jobs,
    agent,
    team,
    conversationId: conversation.id,
    workSessionId: null,
    embedding,
    search: {},
    focusTaskId: () => null,
    effect: <T>(_id: string, write: (tx: Db) => Promise<T>) => database.db.transaction((tx) => write(tx)),
  };
  const tools = knowledgeTools(context);
  const options = (toolCallId: string) => ({ toolCallId, messages: [], context: {} });
  return {
    save: async (content: string) =>
      (await tools.addKnowledgeItem.execute!({ type: "fact", content }, options(`call-${crypto.randomUUID()}`))) as {
        id: string;
        note?: string;
      },
    search: async (query: string) => {
      const found = (await tools.searchKnowledge.execute!({ query }, options(`call-${crypto.randomUUID()}`))) as
        | string
        | { items: { content: string }[] };
      return typeof found === "string" ? [] : found.items.map((item) => item.content);
    },
  };
}

/** What the knowledge page shows for a search: each item's words and why it was found. */
async function pageSearch(q: string, filter: { teamId?: string } = {}, embedding = offlineEmbeddingChoice()) {
  const found = await recallKnowledge(
    { db: database.db, model: embedding, agentId: null, teamId: null, log },
    {
      ...filter,
      q,
      limit: 200,
    },
  );
  return found.map(({ content, matched }) => ({ content, matched }));
}

const BATTERY = "Pilot battery cells reached 500 Wh/kg, a record density.";
const CONTRACTS = "Analyzing the supplier's contract terms showed late-delivery penalties.";
const DISTRACTORS = [
  "Solar module prices fell 12% in 2025.",
  "Wind turbine blades grew to 120 m in length.",
  "The lead prefers briefings before 9 am.",
  "Hydrogen electrolyser orders doubled in Germany.",
];

describe("recall by meaning", () => {
  it("finds a fact by a search that shares only part of its words, which full-text search misses, and says why", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const agent = await toolsOf(team, lead);
    for (const fact of [BATTERY, CONTRACTS, ...DISTRACTORS]) await agent.save(fact);

    for (const [query, planted] of [
      ["energy density of prototype batteries", BATTERY],
      ["analysis of supplier contracts", CONTRACTS],
    ] as const) {
      // Full text wants every word: it finds nothing.
      expect(await searchKnowledgeItems(database.db, { teamId: team.id, q: query })).toEqual([]);
      // Words and meaning together: the planted fact, and none of the others.
      expect(await agent.search(query)).toEqual([planted]);
      expect(await pageSearch(query, { teamId: team.id })).toEqual([
        { content: planted, matched: { words: false, meaning: true } },
      ]);
    }
    // A search by the fact's own words matches both ways.
    expect(await pageSearch("pilot battery cells", { teamId: team.id })).toEqual([
      { content: BATTERY, matched: { words: true, meaning: true } },
    ]);
    // Another team's search does not see this team's knowledge.
    const other = await createTeamFixture(database.db);
    expect(await (await toolsOf(other.team, other.lead)).search("energy density of prototype batteries")).toEqual([]);
  });

  it("ranks an exact name first, above facts that read alike", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const agent = await toolsOf(team, lead);
    const named = "The Kestrel-9 cell line ships in March.";
    // Look-alikes closer in meaning to the bare name than the fact that names it.
    const lookAlikes = [
      "Kestrel cells: the Kestrel line of Kestrel batteries.",
      "The Kestrel-7 cell line was cancelled.",
      "Kestrels nest on cliffs.",
    ];
    for (const fact of [...lookAlikes, named, ...DISTRACTORS]) await agent.save(fact);

    const found = await pageSearch("Kestrel-9", { teamId: team.id });
    expect(found[0]).toEqual({ content: named, matched: { words: true, meaning: true } });
    expect(
      found
        .slice(1)
        .map((item) => item.content)
        .sort(),
    ).toEqual([...lookAlikes].sort());
    expect(found.slice(1).every((item) => !item.matched.words && item.matched.meaning)).toBe(true);
    expect((await agent.search("Kestrel-9"))[0]).toBe(named);
  });

  it("reads the page's search syntax: an excluded word keeps its items out of both rankings", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const agent = await toolsOf(team, lead);
    await agent.save(BATTERY);
    await agent.save("Prototype battery packs passed the crush test.");
    expect(readSearch('battery density -"crush test" OR cells')).toEqual({
      meaning: "battery density cells",
      excluding: '"crush test"',
    });
    expect((await pageSearch("prototype battery", { teamId: team.id })).map((item) => item.content).sort()).toEqual(
      [BATTERY, "Prototype battery packs passed the crush test."].sort(),
    );
    expect(await pageSearch("prototype battery -crush", { teamId: team.id })).toEqual([
      { content: BATTERY, matched: { words: false, meaning: true } },
    ]);
  });

  it("finds an item not yet embedded by its words", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await createKnowledgeItem(database.db, { agentId: lead.id, type: "fact", content: BATTERY });
    expect(await pageSearch("battery cells", { teamId: team.id })).toEqual([
      { content: BATTERY, matched: { words: true, meaning: false } },
    ]);
    const [vector] = await embedOrNot(
      { db: database.db, model: offlineEmbeddingChoice(), agentId: lead.id, teamId: team.id },
      ["battery cells"],
    );
    expect(vector?.dimensions).toBe(256);
  });
});

describe("the near-duplicate check", () => {
  it("knows a fact restated in other words, and keeps a fact with other figures apart", async () => {
    const { team, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout", "Analyst"] });
    const [scout, analyst] = subordinates as [Agent, Agent];
    const first = await (await toolsOf(team, scout)).save("Pilot cells reached 500 Wh/kg.");
    const paraphrase = "The pilot battery cells reached an energy density of 500 Wh/kg.";
    // Not the same by words alone: the old check would have made a second item.
    expect(isNearDuplicate("Pilot cells reached 500 Wh/kg.", paraphrase)).toBe(false);

    const again = await (await toolsOf(team, analyst)).save(paraphrase);
    expect(again.id).toBe(first.id);
    expect(again.note).toMatch(/already knew/);
    const other = await (await toolsOf(team, analyst)).save("Pilot cells reached 400 Wh/kg.");
    expect(other.id).not.toBe(first.id);
    expect(other.note).toBeUndefined();

    // Alike but for a word swapped in place: a different claim, kept apart (the approvals crash test's
    // "finding one …" / "finding two …" were merged, and an approved fact read as lost).
    const rose = await (await toolsOf(team, scout)).save("Cell output rose in pilot line 7.");
    const fell = await (await toolsOf(team, analyst)).save("Cell output fell in pilot line 7.");
    expect(fell.id).not.toBe(rose.id);
    await database.db.delete(knowledgeItems).where(inArray(knowledgeItems.id, [rose.id, fell.id]));

    const items = await withKnowledgeSources(database.db, await searchKnowledgeItems(database.db, { teamId: team.id }));
    expect(items.map((item) => [item.content, item.sources.map((source) => source.agentName)])).toEqual([
      ["Pilot cells reached 400 Wh/kg.", ["Analyst"]],
      ["Pilot cells reached 500 Wh/kg.", ["Scout", "Analyst"]],
    ]);
  });
});

describe("embedding through the outbox", () => {
  it("saves a fact while the model is down, finds it by words, and embeds it through the job queued with it", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const embedding = providerEmbedding();
    openai.setEmbeddingHandler(() => ({ fault: "status", status: 503 }));
    const queued = async () =>
      Number(
        (
          await database.db.execute<{ count: number }>(
            sql`select count(*)::int as count from pgboss.job where name = ${KNOWLEDGE_EMBEDDING_QUEUE} and state = 'created'`,
          )
        )[0]!.count,
      );
    try {
      // A save rolled back takes its job with it: the job commits with the item or not at all.
      await expect(
        database.db.transaction(async (tx) => {
          await recordKnowledge(tx, jobs, {
            teamId: team.id,
            agentId: lead.id,
            type: "fact",
            content: "A fact that never was.",
            confidence: 0.5,
            conversationId: null,
            embedding: null,
          });
          throw new Error("rolled back");
        }),
      ).rejects.toThrow("rolled back");
      expect(await queued()).toBe(0);

      const saved = await (await toolsOf(team, lead, embedding)).save(BATTERY);
      expect(await queued()).toBe(1);
      expect(await hasVector(saved.id)).toBe(false);
      // Found by its words meanwhile; not by meaning (the model rests after failing).
      expect(await pageSearch("pilot battery", { teamId: team.id }, embedding)).toEqual([
        { content: BATTERY, matched: { words: true, meaning: false } },
      ]);
      expect(await pageSearch("energy density of prototype batteries", { teamId: team.id }, embedding)).toEqual([]);

      // The model is back: the job's run embeds it, once.
      openai.setEmbeddingHandler(() => ({}));
      // (It embeds the other tests' items too: they have only the offline embedding's vectors.)
      const run = await embedWaitingKnowledge({ db: database.db, embedding, log });
      expect(run.embedded).toBeGreaterThanOrEqual(1);
      expect(await hasVector(saved.id)).toBe(true);
      expect(await embedWaitingKnowledge({ db: database.db, embedding, log })).toEqual({ embedded: 0, batches: 0 });
      const fresh = providerEmbedding(); // no rest after the old one's failure
      expect(await pageSearch("energy density of prototype batteries", { teamId: team.id }, fresh)).toEqual([
        { content: BATTERY, matched: { words: false, meaning: true } },
      ]);

      // The person's edit drops the old words' vector and queues the job in its transaction.
      const before = await queued();
      const edited = await editKnowledgeItem(database.db, jobs, saved.id, {
        content: "Pilot battery cells reached 520 Wh/kg.",
      });
      expect(edited?.content).toBe("Pilot battery cells reached 520 Wh/kg.");
      expect(await queued()).toBeGreaterThanOrEqual(Math.min(before + 1, 1));
      expect(await pageSearch("energy density of prototype batteries", { teamId: team.id }, fresh)).toEqual([]);
      expect(await embedWaitingKnowledge({ db: database.db, embedding: fresh, log })).toEqual({
        embedded: 1,
        batches: 1,
      });
      // An edit that changes only the type keeps the vector: nothing to embed again.
      await editKnowledgeItem(database.db, jobs, saved.id, { type: "lesson" });
      expect(await embedWaitingKnowledge({ db: database.db, embedding: fresh, log })).toEqual({
        embedded: 0,
        batches: 0,
      });
    } finally {
      openai.setEmbeddingHandler(() => ({}));
      logs.length = 0;
      await database.db.execute(sql`delete from pgboss.job where name = ${KNOWLEDGE_EMBEDDING_QUEUE}`);
    }
  });

  it("embeds again what another model embedded, and compares meaning only within one model's vectors", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await (await toolsOf(team, lead)).save(BATTERY); // the offline embedding's vector
    const provider = providerEmbedding();
    // The provider's search does not compare with the offline vector: words only, until it is embedded again.
    expect(await pageSearch("battery density", { teamId: team.id }, provider)).toEqual([
      { content: BATTERY, matched: { words: true, meaning: false } },
    ]);
    const waiting = await countUnembeddedKnowledge(database.db, { model: "text-embedding-3-small", dimensions: null });
    expect(waiting).toBeGreaterThanOrEqual(1);
    const run = await embedWaitingKnowledge({ db: database.db, embedding: provider, log });
    expect(run.embedded).toBe(waiting);
    expect(await pageSearch("energy density of prototype batteries", { teamId: team.id }, provider)).toEqual([
      { content: BATTERY, matched: { words: false, meaning: true } },
    ]);
    // A shorter length asked for is another space: every item waits to be embedded again at that length.
    const [all] = await database.db.execute<{ count: number }>(sql`select count(*)::int as count from knowledge_items`);
    expect(await countUnembeddedKnowledge(database.db, { model: "text-embedding-3-small", dimensions: 64 })).toBe(
      all!.count,
    );
  });
});

describe("an embedding call", () => {
  it("goes through the SDK's OpenAI client to the provider and writes one priced usage row per call", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const embedding = providerEmbedding(64);
    const requestsBefore = openai.embeddingRequests.length;
    const vectors = await embedModelValues(
      { db: database.db, model: embedding, agentId: lead.id, teamId: team.id, log },
      ["Pilot cells reached 500 Wh/kg.", "Solar module prices fell 12% in 2025."],
    );
    expect(vectors.map((each) => [each.model, each.dimensions, each.vector.length])).toEqual([
      ["text-embedding-3-small", 64, 64],
      ["text-embedding-3-small", 64, 64],
    ]);
    const request = openai.embeddingRequests.at(-1)!;
    expect(openai.embeddingRequests.length).toBe(requestsBefore + 1);
    expect(request).toMatchObject({
      model: "text-embedding-3-small",
      input: ["Pilot cells reached 500 Wh/kg.", "Solar module prices fell 12% in 2025."],
      dimensions: 64,
      encoding_format: "float",
    });
    const rows = await usageRows(lead.id);
    expect(rows).toEqual([
      {
        purpose: "embedding",
        model: "text-embedding-3-small",
        team_id: team.id,
        input_tokens: Math.ceil(30 / 4) + Math.ceil(37 / 4),
        output_tokens: 0,
        estimated: false,
        input_usd_per_mtok: "0.0200",
      },
    ]);

    // A failed attempt is retried; the attempt that failed before any answer bills nothing and leaves no row.
    let calls = 0;
    openai.setEmbeddingHandler((): FakeEmbeddingReply => (++calls === 1 ? { fault: "status", status: 500 } : {}));
    try {
      await embedModelValues({ db: database.db, model: embedding, agentId: lead.id, teamId: team.id, log }, ["x y"]);
    } finally {
      openai.setEmbeddingHandler(() => ({}));
    }
    expect(calls).toBe(2);
    expect(await usageRows(lead.id)).toHaveLength(2);

    // An agent's search pays for its query's vector in its own name.
    const searcher = await toolsOf(team, lead, providerEmbedding(32));
    await searcher.search("pilot cells");
    expect((await usageRows(lead.id)).at(-1)).toMatchObject({ purpose: "embedding", team_id: team.id });
    expect(await usageRows(lead.id)).toHaveLength(3);
  });
});

async function hasVector(itemId: string): Promise<boolean> {
  const [row] = await database.db.execute<{ embedded: boolean }>(
    sql`select embedding is not null as embedded from knowledge_items where id = ${itemId}`,
  );
  return row!.embedded;
}

async function usageRows(agentId: string) {
  return database.db.execute<{
    purpose: string;
    model: string;
    team_id: string | null;
    input_tokens: number;
    output_tokens: number;
    estimated: boolean;
    input_usd_per_mtok: string | null;
  }>(sql`
    select purpose, model, team_id, input_tokens, output_tokens, estimated, input_usd_per_mtok::text
      from usage where agent_id = ${agentId} order by created_at`);
}

describe("the backfill", () => {
  it("embeds what waits in a worker; killed mid-way, the next worker finishes, each item embedded once", {
    timeout: 180_000,
  }, async () => {
    // A database of its own: the worker embeds every item that waits, the other tests' too.
    const own = await createTestDatabase();
    const { lead } = await createTeamFixture(own.db);
    const total = 640;
    await own.db.execute(sql`
        insert into knowledge_items (agent_id, type, content, created_at)
        select ${lead.id}, 'fact', 'Backfill finding ' || n || ': module prices in region ' || n || ' fell.',
               timestamptz '2026-01-01' + n * interval '1 minute'
          from generate_series(1, ${total}) n`);
    const space = { model: "text-embedding-3-small", dimensions: null };
    // Slow answers, so the kill lands mid-way.
    openai.setEmbeddingHandler(() => ({ delayMs: 250 }));
    const env = {
      DATABASE_URL: own.url,
      OPENAI_BASE_URL: openai.url,
      LLM_MODEL: "fake-model",
      EMBEDDING_MODEL: "text-embedding-3-small",
    };
    const sentBefore = openai.embeddingRequests.length;
    let worker: WorkerProcess | undefined = startWorkerProcess(env);
    try {
      await waitFor(async () => (await countUnembeddedKnowledge(own.db, space)) <= total - 128, {
        timeoutMs: 60_000,
        what: "two batches embedded",
      });
      await worker.stop("SIGKILL");
      const atKill = await embeddedItems(own.db);
      expect(atKill.size).toBeGreaterThanOrEqual(128);
      expect(atKill.size).toBeLessThan(total);
      const sentAtKill = openai.embeddingRequests.length;

      worker = startWorkerProcess(env);
      await waitFor(async () => (await countUnembeddedKnowledge(own.db, space)) === 0, {
        timeoutMs: 120_000,
        what: "the backfill to finish",
      });
      const done = await embeddedItems(own.db);
      expect(done.size).toBe(total);
      // What was stored before the kill was not embedded again.
      for (const [id, at] of atKill) expect(done.get(id)).toBe(at);
      // The next worker asked for exactly what was left, each item once.
      const askedAfter = openai.embeddingRequests.slice(sentAtKill).flatMap((request) => request.input);
      const left = (
        await contentsOf(
          own.db,
          [...done.keys()].filter((id) => !atKill.has(id)),
        )
      ).sort();
      expect([...askedAfter].sort()).toEqual(left);
      // Before the kill each item was asked for once (the batch in flight at the kill, never stored, too).
      const askedBefore = openai.embeddingRequests.slice(sentBefore, sentAtKill).flatMap((request) => request.input);
      expect(new Set(askedBefore).size).toBe(askedBefore.length);
      console.log(
        `[recall] backfill: ${total} items, ${atKill.size} stored before the kill -9, ${askedAfter.length} embedded by the next worker; ${askedBefore.length - atKill.size} asked for in the batch cut off`,
      );
    } finally {
      await worker?.stop();
      openai.setEmbeddingHandler(() => ({}));
      await own.drop();
    }
  });
});

/** Each embedded item of the test's space and when it was embedded. */
async function embeddedItems(db: Db): Promise<Map<string, string>> {
  const rows = await db.execute<{ id: string; embedded_at: string }>(sql`
    select id, embedded_at::text from knowledge_items
     where embedding_model = 'text-embedding-3-small' and content like 'Backfill finding %'`);
  return new Map(rows.map((row) => [row.id, row.embedded_at]));
}

async function contentsOf(db: Db, ids: string[]): Promise<string[]> {
  const rows = await db.execute<{ content: string }>(
    sql`select content from knowledge_items where id = any(${sql.param(ids)}::uuid[])`,
  );
  return rows.map((row) => row.content);
}
