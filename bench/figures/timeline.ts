import { sql as drizzleSql } from "drizzle-orm";
import { timelineRowsStatement } from "../../src/lib/db/queries/timeline";
import { decodeCursor, encodeCursor, getTeamTimeline } from "../../src/lib/views/timeline";
import type { LoadedHistory } from "../lib/history";
import type { BenchDatabase } from "../lib/postgres";
import { formatMs, now, summarize } from "../lib/stats";
import type { FigureResult } from "../lib/table";

/** The histories of one team whose timeline is read: 5 agents × 20k messages. */
export const TIMELINE_AGENTS = 5;
export const TIMELINE_MESSAGES_PER_AGENT = 20_000;
// Where bench/lib/history.ts starts every log (in the server's time zone), one message every 2 s.
const HISTORY_START = "2026-01-01";
const SPAN_SECONDS = TIMELINE_MESSAGES_PER_AGENT * 2;

/**
 * The team timeline (getTeamTimeline, what GET /api/teams/:id/timeline answers: the merged
 * page and its links — tool results, tasks, sessions) of a team with 100 000 messages in five
 * work logs, 2 000 tasks, 2 000 work sessions and 400 inbox items over the same ~11 hours, in
 * a database of over a million messages. The first page against a page 90% of the way back,
 * and the same two with a filter by kind (tasks: one log message in 200, plus the task rows).
 */
export async function timelineFigure(database: BenchDatabase, histories: LoadedHistory[]): Promise<FigureResult> {
  const { db, sql } = database;
  const agentIds = histories.map((history) => history.agentId);
  const [{ team_id: teamId }] = (await sql`select team_id from agents where id = ${agentIds[0]!}`) as unknown as [
    { team_id: string },
  ];

  // Tasks, sessions and inbox items beside the logs, spread over the same hours.
  await sql`
    insert into tasks (agent_id, source, title, status, result, created_at, updated_at, started_at, completed_at)
    select a.id, 'lead', 'Look into item ' || n, case when n % 10 = 0 then 'failed' else 'completed' end, 'Findings for item ' || n,
           ts, ts, ts + interval '5 seconds', ts + interval '80 seconds'
      from unnest(${agentIds}::uuid[]) as a(id), generate_series(0, 399) as n,
           lateral (select ${HISTORY_START}::timestamptz + n * interval '100 seconds' as ts) t`;
  await sql`
    insert into work_sessions (agent_id, status, worker, steps, started_at, heartbeat_at, ended_at)
    select a.id, 'completed', 'bench', 12, ts, ts + interval '90 seconds', ts + interval '90 seconds'
      from unnest(${agentIds}::uuid[]) as a(id), generate_series(0, 399) as n,
           lateral (select ${HISTORY_START}::timestamptz + n * interval '100 seconds' + interval '3 seconds' as ts) t`;
  await sql`
    insert into inbox_items (team_id, agent_id, type, title, summary, content, created_at)
    select ${teamId}, ${agentIds[0]!}, (array['briefing', 'alert', 'question', 'approval'])[1 + n % 4], 'Item ' || n, 'What happened.', 'What happened, in full.',
           ${HISTORY_START}::timestamptz + n * interval '100 seconds' + interval '85 seconds'
      from generate_series(0, 399) as n`;
  await sql`analyze tasks`;
  await sql`analyze work_sessions`;
  await sql`analyze inbox_items`;

  // 90% of the way back: a cursor just after the first tenth of the history.
  const [{ micros }] = (await sql`
    select (extract(epoch from ${HISTORY_START}::timestamptz + ${SPAN_SECONDS / 10} * interval '1 second') * 1000000)::bigint::text as micros`) as unknown as [
    { micros: string },
  ];
  const deep = encodeCursor({ atMicros: BigInt(micros), id: "ffffffff-ffff-ffff-ffff-ffffffffffff" });
  const cases = [
    { key: "first", filter: {} },
    { key: "deep", filter: { before: deep } },
    { key: "first-task", filter: { kind: "task" as const } },
    { key: "deep-task", filter: { kind: "task" as const, before: deep } },
  ];
  for (const { key, filter } of cases) {
    const page = await getTeamTimeline(db, teamId, filter);
    if (page.entries.length !== 50 || !page.nextCursor)
      throw new Error(`The ${key} timeline page should hold 50 entries and a cursor, not ${page.entries.length}`);
    if (new Set(page.entries.map((entry) => entry.agent.id)).size < 2)
      throw new Error(`The ${key} page should merge several agents' work`);
  }

  // What the deep page's plan reads: each source through its index, never a scan of the team's messages.
  type PlanNode = {
    "Node Type": string;
    "Relation Name"?: string;
    "Index Name"?: string;
    "Actual Rows"?: number;
    "Actual Loops"?: number;
    Plans?: PlanNode[];
  };
  const [explained] = (await db.execute(
    drizzleSql`explain (analyze, buffers, format json) ${timelineRowsStatement({ teamId, before: decodeCursor(deep), limit: 51 })!}`,
  )) as unknown as [
    {
      "QUERY PLAN": [
        { Plan: PlanNode & { "Shared Hit Blocks": number; "Shared Read Blocks": number }; "Execution Time": number },
      ];
    },
  ];
  const plan = explained["QUERY PLAN"][0];
  const nodes: PlanNode[] = [];
  const visit = (node: PlanNode) => {
    nodes.push(node);
    node.Plans?.forEach(visit);
  };
  visit(plan.Plan);
  const scans = nodes
    .filter((node) => node["Relation Name"])
    .map(
      (node) =>
        `${node["Node Type"]} on ${node["Relation Name"]}${node["Index Name"] ? ` (${node["Index Name"]})` : ""}`,
    );
  const messageRowsRead = nodes
    .filter((node) => node["Relation Name"] === "messages")
    .reduce((sum, node) => sum + (node["Actual Rows"] ?? 0) * (node["Actual Loops"] ?? 1), 0);
  if (scans.some((scan) => scan.startsWith("Seq Scan on messages")))
    throw new Error(`The timeline scans the messages table: ${scans.join("; ")}`);

  const timings = new Map<string, number[]>(cases.map(({ key }) => [key, []]));
  const rounds = 200;
  // Interleaved, so drift on a shared machine hits every case alike.
  for (let round = 0; round < rounds + 10; round++) {
    for (const { key, filter } of cases) {
      const started = now();
      await getTeamTimeline(db, teamId, filter);
      if (round >= 10) timings.get(key)!.push(now() - started);
    }
  }
  const [first, deepPage, firstTask, deepTask] = cases.map(({ key }) => summarize(timings.get(key)!));
  const ratio = (value: number) => `${(value / first!.p50).toFixed(2)}× first page`;
  return {
    rows: [
      {
        figure: "timeline",
        measure: "first page, 100k messages in the team",
        p50: formatMs(first!.p50),
        p95: formatMs(first!.p95),
        ratio: "1.00× first page",
        goal: "p50 ≤ 50 ms",
        pass: first!.p50 <= 50,
      },
      {
        figure: "timeline",
        measure: "a page 90% back in history",
        p50: formatMs(deepPage!.p50),
        p95: formatMs(deepPage!.p95),
        ratio: ratio(deepPage!.p50),
        goal: "≤ 1.5× first page",
        pass: deepPage!.p50 <= 1.5 * first!.p50,
      },
      {
        figure: "timeline",
        measure: "first page, kind = task (1 log message in 200)",
        p50: formatMs(firstTask!.p50),
        p95: formatMs(firstTask!.p95),
        ratio: ratio(firstTask!.p50),
        goal: "",
        pass: null,
      },
      {
        figure: "timeline",
        measure: "kind = task, 90% back",
        p50: formatMs(deepTask!.p50),
        p95: formatMs(deepTask!.p95),
        ratio: ratio(deepTask!.p50),
        goal: "",
        pass: null,
      },
    ],
    notes: [
      `timeline: getTeamTimeline (50 entries with their tool results, tasks and sessions linked) on a team of ${TIMELINE_AGENTS} agents × ${TIMELINE_MESSAGES_PER_AGENT.toLocaleString("en-US")} messages, 2,000 tasks, 2,000 sessions and 400 inbox items; ${rounds} interleaved calls per case after 10 warm-up calls. EXPLAIN ANALYZE of the deep page: ${[...new Set(scans)].join("; ")}; ${messageRowsRead} message rows read; ${plan.Plan["Shared Hit Blocks"] + plan.Plan["Shared Read Blocks"]} buffers; ${plan["Execution Time"].toFixed(1)} ms.`,
    ],
  };
}
