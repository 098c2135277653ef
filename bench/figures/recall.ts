import { existsSync } from "node:fs";
import { embedWaitingKnowledge } from "../../src/lib/domain/knowledge-embedding";
import { recordKnowledge } from "../../src/lib/domain/knowledge-items";
import { recallKnowledge } from "../../src/lib/domain/knowledge-recall";
import { knowledgeVectorCache, rankKnowledgeByMeaning } from "../../src/lib/domain/knowledge-vectors";
import { deleteKnowledgeItem, rankKnowledgeByWords } from "../../src/lib/db/queries/knowledge-items";
import { createTeamWithLead } from "../../src/lib/db/queries/teams";
import { dot, embeddingOf, offlineEmbeddingChoice, readVector } from "../../src/lib/llm/embeddings";
import { offlineEmbedding } from "../../src/lib/llm/offline-model";
import type { BenchDatabase } from "../lib/postgres";
import { treeUsage } from "../lib/fleet";
import { formatCount, formatMs, now, summarize, type Summary } from "../lib/stats";
import type { FigureResult, Row } from "../lib/table";
import { buildId, startWeb } from "./ttfb";

export type RecallOptions = { sizes: number[]; samples: number };

/** The searches timed: a paraphrase, a common pair of words, a rarer one with a number, a name. */
const QUERIES = [
  "energy density of prototype batteries",
  "solar prices",
  "supplier contract penalties region 12",
  "Kestrel-9",
];

/** What the generated facts are about: enough subjects that meaning has something to tell apart. */
const SUBJECTS = [
  "solar module prices",
  "battery cell energy density",
  "wind turbine orders",
  "hydrogen electrolyser costs",
  "supplier contract penalties",
  "grid storage tenders",
  "polysilicon supply",
  "heat pump sales",
  "charging station rollouts",
  "lithium carbonate prices",
  "offshore wind auctions",
  "transformer lead times",
  "rooftop solar installs",
  "pilot cell yields",
  "copper cable costs",
  "Kestrel-9 cell line deliveries",
];
const VERBS = ["fell", "rose", "doubled", "stalled", "recovered", "slipped", "held steady", "beat forecasts"];

/**
 * A team whose agent recorded `count` facts, written straight in SQL (its vectors are the
 * backfill's work, timed apart): each names a subject, a region, a change and a year.
 */
async function fillTeam(database: BenchDatabase, count: number): Promise<{ teamId: string; agentId: string }> {
  const { team, lead } = await createTeamWithLead(database.db, {
    name: `Recall ${formatCount(count)}`,
    mission: "Track the energy transition.",
  });
  const subjects = `array[${SUBJECTS.map((subject) => `'${subject}'`).join(",")}]`;
  const verbs = `array[${VERBS.map((verb) => `'${verb}'`).join(",")}]`;
  await database.sql.begin(async (tx) => {
    await tx.unsafe("set local session_replication_role = replica"); // no live-event NOTIFY per row
    await tx.unsafe(`
      insert into knowledge_items (agent_id, type, content, confidence, created_at)
      select '${lead.id}', (array['fact','technique','pattern','lesson'])[1 + n % 4],
             'Finding ' || n || ': ' || (${subjects})[1 + n % ${SUBJECTS.length}] || ' in region ' || (n % 40) || ' '
               || (${verbs})[1 + (n / 7) % ${VERBS.length}] || ' ' || (n % 17) || '% in ' || (2020 + n % 6) || '.',
             0.5 + (n % 5) / 10.0, timestamptz '2026-01-01' + n * interval '1 minute'
        from generate_series(1, ${count}) n`);
    await tx.unsafe(`
      insert into knowledge_sources (knowledge_item_id, agent_id, created_at)
      select id, agent_id, created_at from knowledge_items where agent_id = '${lead.id}'`);
  });
  return { teamId: team.id, agentId: lead.id };
}

async function time<T>(work: () => Promise<T>): Promise<number> {
  const started = now();
  await work();
  return now() - started;
}

/** `samples` timings of `work` over the queries in turn, after one warm-up of each. */
async function timeQueries(samples: number, work: (query: string) => Promise<unknown>): Promise<number[]> {
  for (const query of QUERIES) await work(query);
  const times: number[] = [];
  for (let i = 0; i < samples; i++) times.push(await time(() => work(QUERIES[i % QUERIES.length]!)));
  return times;
}

/** A GET timed to its last byte; a page without knowledge rows (an error page answers 200 too) is a failure. */
async function timeGet(url: string): Promise<number> {
  const started = now();
  const response = await fetch(url);
  const body = await response.text();
  const elapsed = now() - started;
  if (response.status !== 200 || !body.includes('class="knowledge-row'))
    throw new Error(`GET ${url} answered ${response.status} without knowledge rows: ${body.slice(0, 300)}`);
  return elapsed;
}

/** A row of this figure. */
function row(measure: string, summary: Summary | null, ratio: string, goal?: number): Row {
  return {
    figure: "recall",
    measure,
    p50: summary ? formatMs(summary.p50) : "–",
    p95: summary ? formatMs(summary.p95) : "–",
    ratio,
    goal: goal === undefined ? "" : `p95 ≤ ${goal} ms`,
    pass: goal === undefined || !summary ? null : summary.p95 <= goal,
  };
}

/** How many times a cold measure is taken: each one reads a whole team's vectors again. */
const COLD_SAMPLES = 5;

/**
 * Recall by meaning at scale: teams of `sizes` items (the largest 100 000), embedded by the
 * backfill with the offline embedding (256 dimensions); then a hybrid search as the knowledge
 * page and searchKnowledge make it (full text and exact ranking of the vectors kept in memory,
 * fused): warm (the team's vectors kept), cold (the first search after a start: all of them
 * read), right after a save (the new vector read) and after a delete (all read again); its two
 * halves apart; the two other ways to rank exactly that the first decision weighed (a SELECT of
 * the vectors ranked in process; ranking in SQL over real[]). Last, the knowledge page itself
 * (production build) listing, and searching the largest team cold and warm.
 */
export async function recallFigure(database: BenchDatabase, options: RecallOptions): Promise<FigureResult> {
  const rows: Row[] = [];
  const notes: string[] = [];
  const embedding = offlineEmbeddingChoice();
  const cache = knowledgeVectorCache();
  const loadStarted = now();
  const teams: { size: number; teamId: string; agentId: string }[] = [];
  for (const size of options.sizes) teams.push({ size, ...(await fillTeam(database, size)) });
  await database.sql.unsafe("analyze knowledge_items");
  const loadSeconds = (now() - loadStarted) / 1000;
  const total = options.sizes.reduce((sum, size) => sum + size, 0);

  const backfillStarted = now();
  const run = await embedWaitingKnowledge({ db: database.db, embedding, log: () => {} }, { batchSize: 1000 });
  const backfillSeconds = (now() - backfillStarted) / 1000;
  await database.sql.unsafe("vacuum analyze knowledge_items");
  rows.push({
    ...row(`backfill, ${formatCount(run.embedded)} items (offline embedding)`, null, ""),
    p50: `${backfillSeconds.toFixed(1)} s`,
    ratio: `${formatCount(run.embedded / backfillSeconds)} items/s, ${run.batches} batches`,
  });

  const call = { db: database.db, model: embedding, agentId: null, teamId: null };
  const search = (teamId: string, q: string) => recallKnowledge(call, { teamId, q, limit: 200 });
  /** `samples` timings, each the first search after the process let every kept vector go. */
  const cold = async (samples: number, work: (q: string) => Promise<unknown>) => {
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      cache.clear();
      times.push(await time(() => work(QUERIES[i % QUERIES.length]!)));
    }
    return summarize(times);
  };
  for (const team of teams) {
    const warm = summarize(await timeQueries(options.samples, (q) => search(team.teamId, q)));
    rows.push(
      row(
        `hybrid search, a team of ${formatCount(team.size)} items, warm`,
        warm,
        "words + meaning, fused, 200 shown",
        300,
      ),
    );
    const first = await cold(COLD_SAMPLES, (q) => search(team.teamId, q));
    rows.push(
      row(
        `hybrid search, a team of ${formatCount(team.size)} items, cold`,
        first,
        `first after a start: its ${formatCount(team.size)} vectors read`,
      ),
    );
  }
  const keptBytes = cache.bytes;

  // The largest team as it changes: a fact saved (its near-duplicate check ranks the team's
  // vectors under the team's lock), then searched at once; an item deleted, then searched.
  const largest = teams.at(-1)!;
  await search(largest.teamId, QUERIES[0]!);
  const saves: number[] = [];
  const afterSave: number[] = [];
  for (let i = 0; i < options.samples; i++) {
    const content = `Bench fact ${i}: pilot cell yields in region ${i} reached ${90 + (i % 9)}% in 2026.`;
    saves.push(
      await time(() =>
        recordKnowledge(
          database.db,
          { embedKnowledge: async () => {} },
          {
            teamId: largest.teamId,
            agentId: largest.agentId,
            type: "fact",
            content,
            confidence: 0.7,
            conversationId: null,
            embedding: embeddingOf(embedding, offlineEmbedding(content)),
          },
        ),
      ),
    );
    afterSave.push(await time(() => search(largest.teamId, QUERIES[i % QUERIES.length]!)));
  }
  rows.push(
    row(
      `a save in the team of ${formatCount(largest.size)} (near-duplicate check)`,
      summarize(saves),
      "words + meaning ranked under the team's lock",
    ),
  );
  rows.push(
    row(
      `hybrid search right after a save, ${formatCount(largest.size)} items`,
      summarize(afterSave),
      "the new vector read, the rest kept",
      300,
    ),
  );
  const afterDelete: number[] = [];
  for (let i = 0; i < COLD_SAMPLES; i++) {
    const [victim] = await database.sql<{ id: string }[]>`
      select id from knowledge_items where agent_id = ${largest.agentId} and content like 'Bench fact%' limit 1`;
    if (victim) await deleteKnowledgeItem(database.db, victim.id);
    afterDelete.push(await time(() => search(largest.teamId, QUERIES[i % QUERIES.length]!)));
  }
  rows.push(
    row(
      `hybrid search right after a delete, ${formatCount(largest.size)} items`,
      summarize(afterDelete),
      "all the agent's vectors read again",
    ),
  );

  const query = embeddingOf(embedding, offlineEmbedding(QUERIES[0]!));
  const words = summarize(
    await timeQueries(options.samples, (q) =>
      rankKnowledgeByWords(database.db, { teamId: largest.teamId }, q, { depth: 200 }),
    ),
  );
  rows.push(
    row(
      `its words half (full text), ${formatCount(largest.size)} items`,
      words,
      "ts_rank over the GIN index's matches",
    ),
  );
  for (const team of teams) {
    const meaning = () =>
      rankKnowledgeByMeaning(database.db, { teamId: team.teamId }, query, { depth: 200, floor: 0.25 });
    const warm = summarize(await timeQueries(options.samples, meaning));
    rows.push(
      row(
        `its meaning half, warm (kept, int8 SIMD), ${formatCount(team.size)} items`,
        warm,
        `${((warm.p50 * 1000) / team.size).toFixed(2)} µs an item`,
      ),
    );
    const first = await cold(COLD_SAMPLES, meaning);
    rows.push(
      row(
        `its meaning half, cold (binary COPY, kept), ${formatCount(team.size)} items`,
        first,
        `${((first.p50 * 1000) / team.size).toFixed(2)} µs an item`,
      ),
    );
  }
  rows.push({
    ...row(`vectors kept in memory, all ${formatCount(total)} items`, null, "256 dimensions, a byte each + 21 bytes"),
    p50: `${(keptBytes / 1024 / 1024).toFixed(1)} MiB`,
  });

  // The ways not taken, on the largest team: a SELECT of the same vectors, ranked in process …
  const selectTimes: number[] = [];
  for (let i = 0; i < Math.max(3, Math.ceil(options.samples / 4)); i++) {
    selectTimes.push(
      await time(async () => {
        const found = await database.sql<{ id: string; embedding: Buffer }[]>`
          select id, embedding from knowledge_items
           where agent_id = ${largest.agentId} and embedding_model = 'offline' and embedding_dimensions = 256`;
        const vector = new Float32Array(256);
        let best = -1;
        for (const row of found) best = Math.max(best, dot(query.vector, readVector(row.embedding, 0, vector)));
        return best;
      }),
    );
  }
  rows.push(
    row(
      `alternative: SELECT of the vectors, in process, ${formatCount(largest.size)} items`,
      summarize(selectTimes),
      "bytea as hex text, parsed row by row",
    ),
  );
  // … and ranking in SQL, a dot product over real[] (unnest), on a table of random vectors of the same length.
  await database.sql.unsafe(`
    create table bench_sql_vectors as
    select n, (select array_agg((random() - 0.5)::real) from generate_series(1, 256) where n > 0) as v
      from generate_series(1, ${largest.size}) n`);
  await database.sql.unsafe("analyze bench_sql_vectors");
  const probe = `array[${Array.from(query.vector).join(",")}]::real[]`;
  for (const size of [options.sizes[0]!, largest.size]) {
    const times: number[] = [];
    for (let i = 0; i < (size === largest.size ? 2 : 5); i++)
      times.push(
        await time(() =>
          database.sql.unsafe(`
            select n from bench_sql_vectors where n <= ${size}
             order by (select sum(a * b) from unnest(v, ${probe}) as t(a, b)) desc limit 200`),
        ),
      );
    const summary = summarize(times);
    rows.push(
      row(
        `alternative: in SQL (unnest over real[]), ${formatCount(size)} items`,
        summary,
        `${((summary.p50 * 1000) / size).toFixed(1)} µs an item`,
      ),
    );
  }
  await database.sql.unsafe("drop table bench_sql_vectors");

  if (existsSync(buildId)) {
    const searchPath = (q: string) => `/knowledge?teamId=${largest.teamId}&q=${encodeURIComponent(q)}`;
    // Cold: the first search of a web server just started (a start of its own for each), after
    // one listing of the page, so what is timed is the search, not the server's first page.
    const coldTimes: number[] = [];
    for (let i = 0; i < 3; i++) {
      const web = await startWeb(database);
      try {
        await timeGet(`${web.url}/knowledge`);
        coldTimes.push(await timeGet(`${web.url}${searchPath(QUERIES[i % QUERIES.length]!)}`));
      } finally {
        await web.stop();
      }
    }
    const web = await startWeb(database);
    try {
      await timeGet(`${web.url}/knowledge`);
      const rssBefore = treeUsage(web.pid).rssMiB;
      const pages: [string, (q: string) => string][] = [
        [`knowledge page, all ${formatCount(total)} items, vectors stored`, () => "/knowledge"],
        [`knowledge page, search in a team of ${formatCount(largest.size)}, warm`, searchPath],
      ];
      for (const [measure, path] of pages) {
        const times = await timeQueries(options.samples, (q) => timeGet(`${web.url}${path(q)}`));
        rows.push(row(measure, summarize(times), "GET to the last byte, production build", 300));
      }
      rows.push(
        row(
          `knowledge page, search in a team of ${formatCount(largest.size)}, cold`,
          summarize(coldTimes),
          `first search of a server just started (${coldTimes.length} starts; the page listed once before)`,
        ),
      );
      rows.push({
        ...row("web server's memory, before and after its searches", null, "RSS of the process tree"),
        p50: `${rssBefore.toFixed(0)} MiB`,
        p95: `${treeUsage(web.pid).rssMiB.toFixed(0)} MiB`,
      });
    } finally {
      await web.stop();
    }
  } else notes.push("recall: the knowledge page was not measured: no production build (.next/BUILD_ID).");
  // Its teams go (their items with them): the pages figure lists every team's knowledge.
  for (const team of teams) await database.sql`delete from teams where id = ${team.teamId}`;
  cache.clear();

  notes.unshift(
    `recall: teams of ${options.sizes.map(formatCount).join(", ")} knowledge items (written by SQL in ${loadSeconds.toFixed(1)} s; ${SUBJECTS.length} subjects × 40 regions × ${VERBS.length} changes), embedded by the backfill with the offline embedding (256 dimensions, 1 KB a vector stored, 277 bytes kept); ${options.samples} timings of each warm search after a warm-up, ${COLD_SAMPLES} of each cold one (the process's kept vectors let go before each), over the searches ${QUERIES.map((q) => JSON.stringify(q)).join(", ")}. A hybrid search is recallKnowledge as the page calls it (limit 200): full text and exact ranking of every vector of the team (kept in memory, made current first), fused by reciprocal rank. The SQL alternative ranks a table of random 256-dimension real[] vectors.`,
  );
  return { rows, notes };
}
