import { existsSync } from "node:fs";
import { createSubordinate } from "../../src/lib/db/queries/agents";
import { createTeamWithLead, requireTeam } from "../../src/lib/db/queries/teams";
import { requireAgent } from "../../src/lib/db/queries/agents";
import type { LoadedHistory } from "../lib/history";
import type { BenchDatabase } from "../lib/postgres";
import { formatCount, formatMs, now, summarize } from "../lib/stats";
import type { FigureResult, Row } from "../lib/table";
import { buildId, startWeb } from "./ttfb";

export type PagesOptions = { tasks: number; knowledgeItems: number; inboxItems: number; samples: number };

/**
 * Writes the rows of a long-lived team straight in SQL: tasks on the agent, knowledge items
 * it recorded, inbox items of its team (briefings and alerts, a tenth unread).
 */
async function fillTeam(database: BenchDatabase, history: LoadedHistory, options: PagesOptions): Promise<void> {
  const agent = await requireAgent(database.db, history.agentId);
  await database.sql.begin(async (tx) => {
    await tx.unsafe("set local session_replication_role = replica"); // no live-event NOTIFY per row
    await tx.unsafe(`
      insert into tasks (agent_id, source, title, description, status, result, created_at, updated_at, started_at, completed_at)
      select '${agent.id}', 'lead', 'Look into item ' || n, 'Find what changed about item ' || n || ' and why it matters.',
             case when n % 50 = 0 then 'failed' when n > ${options.tasks} - 3 then 'pending' else 'completed' end,
             'Item ' || n || ' changed because the supplier moved.', t, t, t, t + interval '1 minute'
        from generate_series(1, ${options.tasks}) n, lateral (select timestamptz '2026-01-01' + n * interval '5 minutes' as t) at`);
    await tx.unsafe(`
      insert into knowledge_items (agent_id, type, content, confidence, source_conversation_id, created_at)
      select '${agent.id}', (array['fact','technique','pattern','lesson'])[1 + n % 4],
             'Finding ' || n || ': solar module prices in region ' || (n % 40) || ' fell ' || (n % 17) || '% as supply of polysilicon grew.',
             0.5 + (n % 5) / 10.0, '${history.conversationId}', timestamptz '2026-01-01' + n * interval '1 minute'
        from generate_series(1, ${options.knowledgeItems}) n`);
    // Every item has its source (its reporter), as every item saved since sources exist has.
    await tx.unsafe(`
      insert into knowledge_sources (knowledge_item_id, agent_id, conversation_id, created_at)
      select id, agent_id, source_conversation_id, created_at from knowledge_items where agent_id = '${agent.id}'`);
    await tx.unsafe(`
      insert into inbox_items (team_id, agent_id, type, title, summary, content, read_at, created_at)
      select '${agent.teamId}', '${agent.id}', case when n % 10 = 0 then 'alert' else 'briefing' end,
             'Briefing ' || n, 'What changed this morning (' || n || ').', '## Briefing ' || n || E'\\n' || repeat('A paragraph of findings with their sources. ', 8),
             case when n % 10 = 0 then null else timestamptz '2026-01-01' + n * interval '3 minutes' end,
             timestamptz '2026-01-01' + n * interval '2 minutes'
        from generate_series(1, ${options.inboxItems}) n`);
  });
  for (const table of ["tasks", "knowledge_items", "knowledge_sources", "inbox_items"])
    await database.sql.unsafe(`analyze ${table}`);
}

async function timeGet(url: string): Promise<number> {
  const started = now();
  const response = await fetch(url);
  const body = await response.text();
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${body.slice(0, 300)}`);
  return now() - started;
}

/**
 * Server render time (request → last byte of the HTML, production build) of the team,
 * agent, inbox and knowledge pages for a team with a long life behind it — its agent's
 * work log of 100 000 messages, 10 000 tasks, 100 000 knowledge items, 50 000 inbox
 * items — against the same pages of a new team with nothing in it.
 */
export async function pagesFigure(
  database: BenchDatabase,
  history: LoadedHistory,
  options: PagesOptions,
): Promise<FigureResult> {
  if (!existsSync(buildId)) {
    return {
      rows: [
        {
          figure: "pages",
          measure: "server render, big team",
          p50: "–",
          p95: "–",
          ratio: "no production build",
          goal: "",
          pass: false,
        },
      ],
      notes: ["pages: not measured: no .next/BUILD_ID"],
    };
  }
  const loadStarted = now();
  await fillTeam(database, history, options);
  const loadSeconds = (now() - loadStarted) / 1000;
  const big = {
    team: await requireTeam(database.db, (await requireAgent(database.db, history.agentId)).teamId),
    agentId: history.agentId,
  };
  const small = await createTeamWithLead(database.db, { name: "Small", mission: "Nothing yet." });
  const smallAgent = await createSubordinate(database.db, small.team.id, { name: "Newcomer", instructions: "" });
  const web = await startWeb(database);
  const rows: Row[] = [];
  const details: string[] = [];
  try {
    const pages: [string, string, string][] = [
      ["team", `/teams/${big.team.id}`, `/teams/${small.team.id}`],
      ["agent", `/agents/${big.agentId}`, `/agents/${smallAgent.id}`],
      // The timeline's stories: its 10 000 tasks are 10 000 stories, paged newest first.
      ["stories", `/teams/${big.team.id}/timeline`, `/teams/${small.team.id}/timeline`],
      ["inbox", "/inbox", "/inbox"],
      ["knowledge", "/knowledge", "/knowledge"],
    ];
    // The inbox and knowledge pages list every team's items: they have no small reference.
    for (const [name, bigPath, smallPath] of pages) {
      const bigTimes: number[] = [];
      const smallTimes: number[] = [];
      for (let i = 0; i < options.samples + 3; i++) {
        const b = await timeGet(`${web.url}${bigPath}`);
        const s = bigPath === smallPath ? Number.NaN : await timeGet(`${web.url}${smallPath}`);
        if (i >= 3) {
          bigTimes.push(b);
          smallTimes.push(s);
        }
      }
      const summary = summarize(bigTimes);
      const reference = summarize(smallTimes.filter(Number.isFinite));
      rows.push({
        figure: "pages",
        measure: `${name} page, big team`,
        p50: formatMs(summary.p50),
        p95: formatMs(summary.p95),
        ratio: Number.isFinite(reference.p50)
          ? `${(summary.p50 / reference.p50).toFixed(2)}× a new team's (${formatMs(reference.p50)})`
          : "all teams' rows on one page",
        goal: "p95 ≤ 300 ms",
        pass: summary.p95 <= 300,
      });
      details.push(`${name} ${formatMs(summary.p50)}`);
    }
  } finally {
    await web.stop();
  }
  return {
    rows,
    notes: [
      `pages: GET to the last byte of the HTML, production build, ${options.samples} requests per page after 3 warm-ups, one at a time; the big team's agent has a work log of ${formatCount(history.length)} messages, ${formatCount(options.tasks)} tasks, ${formatCount(options.knowledgeItems)} knowledge items and its team ${formatCount(options.inboxItems)} inbox items (written by SQL in ${loadSeconds.toFixed(1)} s).`,
    ],
  };
}
