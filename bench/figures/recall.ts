import { existsSync } from "node:fs";
import { embedWaitingKnowledge } from "../../src/lib/domain/knowledge-embedding";
import { rankKnowledgeByMeaning, recallKnowledge } from "../../src/lib/domain/knowledge-recall";
import { rankKnowledgeByWords } from "../../src/lib/db/queries/knowledge-items";
import { createTeamWithLead } from "../../src/lib/db/queries/teams";
import { dot, embeddingOf, offlineEmbeddingChoice, readVector } from "../../src/lib/llm/embeddings";
import { offlineEmbedding } from "../../src/lib/llm/offline-model";
import type { BenchDatabase } from "../lib/postgres";
import { formatCount, formatMs, now, summarize } from "../lib/stats";
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

/**
 * Recall by meaning at scale: teams of `sizes` items (the largest 100 000), embedded by the
 * backfill with the offline embedding (256 dimensions); then a hybrid search as the knowledge
 * page and searchKnowledge make it (full text and exact vector ranking, fused), its two halves
 * apart, and the two other ways to rank exactly that the decision weighed (a SELECT of the
 * vectors ranked in process; ranking in SQL over real[]). Last, the knowledge page itself
 * (production build) listing and searching the largest team.
 */
export async function recallFigure(database: BenchDatabase, options: RecallOptions): Promise<FigureResult> {
  const rows: Row[] = [];
  const notes: string[] = [];
  const embedding = offlineEmbeddingChoice();
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
    figure: "recall",
    measure: `backfill, ${formatCount(run.embedded)} items (offline embedding)`,
    p50: `${backfillSeconds.toFixed(1)} s`,
    p95: "–",
    ratio: `${formatCount(run.embedded / backfillSeconds)} items/s, ${run.batches} batches`,
    goal: "",
    pass: null,
  });

  const call = { db: database.db, model: embedding, agentId: null, teamId: null };
  for (const team of teams) {
    const times = await timeQueries(options.samples, (q) =>
      recallKnowledge(call, { teamId: team.teamId, q, limit: 200 }),
    );
    const summary = summarize(times);
    rows.push({
      figure: "recall",
      measure: `hybrid search, a team of ${formatCount(team.size)} items`,
      p50: formatMs(summary.p50),
      p95: formatMs(summary.p95),
      ratio: "words + meaning, fused, 200 shown",
      goal: "p95 ≤ 300 ms",
      pass: summary.p95 <= 300,
    });
  }

  const largest = teams.at(-1)!;
  const query = embeddingOf(embedding, offlineEmbedding(QUERIES[0]!));
  const words = summarize(
    await timeQueries(options.samples, (q) =>
      rankKnowledgeByWords(database.db, { teamId: largest.teamId }, q, { depth: 200 }),
    ),
  );
  rows.push({
    figure: "recall",
    measure: `its words half (full text), ${formatCount(largest.size)} items`,
    p50: formatMs(words.p50),
    p95: formatMs(words.p95),
    ratio: "ts_rank over the GIN index's matches",
    goal: "",
    pass: null,
  });
  for (const team of teams) {
    const meaning = summarize(
      await timeQueries(options.samples, () =>
        rankKnowledgeByMeaning(database.db, { teamId: team.teamId }, query, { depth: 200, floor: 0.25 }),
      ),
    );
    rows.push({
      figure: "recall",
      measure: `its meaning half (COPY, exact, in process), ${formatCount(team.size)} items`,
      p50: formatMs(meaning.p50),
      p95: formatMs(meaning.p95),
      ratio: `${((meaning.p50 * 1000) / team.size).toFixed(2)} µs an item`,
      goal: "",
      pass: null,
    });
  }

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
  const select = summarize(selectTimes);
  rows.push({
    figure: "recall",
    measure: `alternative: SELECT of the vectors, in process, ${formatCount(largest.size)} items`,
    p50: formatMs(select.p50),
    p95: formatMs(select.p95),
    ratio: "bytea as hex text, parsed row by row",
    goal: "",
    pass: null,
  });
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
    rows.push({
      figure: "recall",
      measure: `alternative: in SQL (unnest over real[]), ${formatCount(size)} items`,
      p50: formatMs(summary.p50),
      p95: formatMs(summary.p95),
      ratio: `${((summary.p50 * 1000) / size).toFixed(1)} µs an item`,
      goal: "",
      pass: null,
    });
  }
  await database.sql.unsafe("drop table bench_sql_vectors");

  if (existsSync(buildId)) {
    const web = await startWeb(database);
    try {
      const pages: [string, (q: string) => string][] = [
        [`knowledge page, all ${formatCount(total)} items, vectors stored`, () => "/knowledge"],
        [
          `knowledge page, search in a team of ${formatCount(largest.size)}`,
          (q) => `/knowledge?teamId=${largest.teamId}&q=${encodeURIComponent(q)}`,
        ],
      ];
      for (const [measure, path] of pages) {
        const times = await timeQueries(options.samples, (q) => timeGet(`${web.url}${path(q)}`));
        const summary = summarize(times);
        rows.push({
          figure: "recall",
          measure,
          p50: formatMs(summary.p50),
          p95: formatMs(summary.p95),
          ratio: "GET to the last byte, production build",
          goal: "p95 ≤ 300 ms",
          pass: summary.p95 <= 300,
        });
      }
    } finally {
      await web.stop();
    }
  } else notes.push("recall: the knowledge page was not measured: no production build (.next/BUILD_ID).");
  // Its teams go (their items with them): the pages figure lists every team's knowledge.
  for (const team of teams) await database.sql`delete from teams where id = ${team.teamId}`;

  notes.unshift(
    `recall: teams of ${options.sizes.map(formatCount).join(", ")} knowledge items (written by SQL in ${loadSeconds.toFixed(1)} s; ${SUBJECTS.length} subjects × 40 regions × ${VERBS.length} changes), embedded by the backfill with the offline embedding (256 dimensions, 1 KB a vector); ${options.samples} timings of each search after a warm-up, over the searches ${QUERIES.map((q) => JSON.stringify(q)).join(", ")}. A hybrid search is recallKnowledge as the page calls it (limit 200): full text and exact ranking of every vector of the team in process, fused by reciprocal rank. The SQL alternative ranks a table of random 256-dimension real[] vectors.`,
  );
  return { rows, notes };
}
