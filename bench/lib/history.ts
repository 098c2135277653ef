import { eq } from "drizzle-orm";
import { createSubordinate } from "../../src/lib/db/queries/agents";
import { createTeamWithLead } from "../../src/lib/db/queries/teams";
import { conversations } from "../../src/lib/db/schema";
import type { BenchDatabase } from "./postgres";

/**
 * Long histories, written straight in SQL (`insert … select generate_series`): a million
 * messages in well under a minute instead of an hour of appends.
 *
 * Each conversation is a valid chain, the shape a work log takes: a task, then rounds
 * of (assistant tool call, tool result of ~1.2 kB, assistant note), and — where
 * `summaries` is on — a compaction summary every 200 messages, placed so that every
 * conversation whose length is a multiple of 200 ends 100 messages after its last
 * summary (the context the model sees is then summary + 100 messages, at any length).
 *
 * Ids are md5(ordinal:position) cast to uuid: as random as gen_random_uuid() for the
 * indexes, but computable, so each row can name its predecessor in the same statement.
 */
export type HistorySpec = {
  key: string;
  length: number;
  summaries: boolean;
  /** In a team of its own (a lead and this agent), as a measured agent should be; else in a shared "Archive" team. */
  ownTeam?: boolean;
  /** Specs with the same key share one team of their own (the timeline reads a whole team). */
  teamKey?: string;
};
export type LoadedHistory = HistorySpec & { agentId: string; conversationId: string };

const SUMMARY_EVERY = 200;

const roleCase = (summaries: boolean) => {
  // r: the message's place in its compaction period; 0 is a task, 199 a summary.
  const r = summaries ? `((n + 100) % ${SUMMARY_EVERY})` : `(n % ${SUMMARY_EVERY - 1})`;
  return `case when ${r} = ${SUMMARY_EVERY - 1} then 'summary'
               when ${r} = 0 then 'user'
               when (${r} - 1) % 3 = 0 then 'call'
               when (${r} - 1) % 3 = 1 then 'tool'
               else 'note' end`;
};

function insertStatement(ord: number, conversationId: string, spec: HistorySpec): string {
  const id = (position: string) => `md5('${ord}:' || (${position}))::uuid`;
  return `
    insert into messages (id, conversation_id, role, content, tool_calls, tool_call_id, previous_message_id, created_at)
    select ${id("n")}, '${conversationId}'::uuid,
           case kind when 'call' then 'assistant' when 'note' then 'assistant' else kind end,
           case kind
             when 'user' then 'Task from your lead (task id: t-' || n || '): look into item ' || n || '. ' || repeat('Find what changed and why it matters. ', 3)
             when 'call' then ''
             when 'tool' then '{"query":"topic ' || (n - 1) || '","results":[' ||
                  repeat('{"title":"A result about topic ' || (n - 1) || '","url":"https://example.com/' || n || '","content":"' || repeat('An excerpt of the page, as the search API returns it. ', 3) || '"},', 5) || '{}]}'
             when 'note' then 'Step ' || n || ': ' || repeat('Noted the finding and moved on to the next source. ', 4)
             else 'Summary of the work so far (through message ' || n || '): ' || repeat('Facts with their sources, decisions made, open questions, what is awaited. ', 24)
           end,
           case kind when 'call' then jsonb_build_array(jsonb_build_object('toolCallId', 'history_call_' || n, 'toolName', 'tavilySearch', 'args', jsonb_build_object('query', 'topic ' || n))) end,
           case kind when 'tool' then 'history_call_' || (n - 1) end,
           case when n = 0 then null else ${id("n - 1")} end,
           timestamptz '2026-01-01' + n * interval '2 seconds'
      from (select n, ${roleCase(spec.summaries)} as kind from generate_series(0, ${spec.length - 1}) as n) as plan`;
}

/**
 * Creates one subordinate per spec (the filler ones share a team, so worker start-up
 * does not schedule a hundred leads) and fills its background conversation.
 */
export async function loadHistories(
  database: BenchDatabase,
  specs: readonly HistorySpec[],
  log: (line: string) => void,
): Promise<Map<string, LoadedHistory>> {
  const { db, sql } = database;
  const archive = await createTeamWithLead(db, { name: "Archive", mission: "Hold long histories for the benchmarks." });
  const loaded = new Map<string, LoadedHistory>();
  const targets: (LoadedHistory & { ord: number })[] = [];
  const shared = new Map<string, Awaited<ReturnType<typeof createTeamWithLead>>>();
  for (const [ord, spec] of specs.entries()) {
    if (spec.teamKey && !shared.has(spec.teamKey)) {
      shared.set(
        spec.teamKey,
        await createTeamWithLead(db, { name: `History ${spec.teamKey}`, mission: "Keep long work logs." }),
      );
    }
    const { team } = spec.teamKey
      ? shared.get(spec.teamKey)!
      : spec.ownTeam
        ? await createTeamWithLead(db, { name: `History ${spec.key}`, mission: "Keep a long work log." })
        : archive;
    const agent = await createSubordinate(db, team.id, {
      name: `Archivist ${spec.key}`,
      instructions: "You keep a long work log.",
    });
    const [conversation] = await db.select().from(conversations).where(eq(conversations.agentId, agent.id));
    targets.push({ ...spec, ord, agentId: agent.id, conversationId: conversation!.id });
  }

  const total = specs.reduce((sum, spec) => sum + spec.length, 0);
  const started = performance.now();
  await sql.begin(async (tx) => {
    // The rows are valid by construction (checked below); skipping the per-row FK checks
    // and the live-update NOTIFY trigger makes the load ~3× faster.
    await tx.unsafe("set local session_replication_role = replica");
    let written = 0;
    let lastReport = performance.now();
    for (const target of targets) {
      await tx.unsafe(insertStatement(target.ord, target.conversationId, target));
      await tx.unsafe(
        `update conversations set last_message_id = md5('${target.ord}:${target.length - 1}')::uuid where id = '${target.conversationId}'`,
      );
      written += target.length;
      if (performance.now() - lastReport > 10_000) {
        log(`  … ${written.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} messages`);
        lastReport = performance.now();
      }
    }
  });
  log(
    `  ${total.toLocaleString("en-US")} messages written in ${((performance.now() - started) / 1000).toFixed(1)} s; checking the chains …`,
  );

  // What the skipped FK checks would have caught: every predecessor exists in the same conversation.
  const [broken] = (await sql`
    select count(*)::int as count from messages m
     where m.previous_message_id is not null
       and not exists (select 1 from messages p where p.id = m.previous_message_id and p.conversation_id = m.conversation_id)`) as unknown as [
    { count: number },
  ];
  if (broken!.count > 0) throw new Error(`The bulk load left ${broken!.count} messages without their predecessor.`);
  // Settled as autovacuum would leave them a while later, so its vacuum of a million new rows
  // does not run on the other core while the first figures are timed.
  const settling = performance.now();
  await sql`vacuum (analyze) messages`;
  await sql`vacuum (analyze) conversations`;
  log(`  vacuumed and analyzed in ${((performance.now() - settling) / 1000).toFixed(1)} s`);
  for (const target of targets) loaded.set(target.key, target);
  return loaded;
}
