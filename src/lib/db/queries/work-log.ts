import "server-only";
import { sql } from "drizzle-orm";
import type { Db } from "../client";
import type { UsagePurpose, WorkSessionStatus } from "../schema";

export type LogSessionRow = {
  id: string;
  status: WorkSessionStatus;
  steps: number;
  error: string | null;
  startedAt: string;
  endedAt: string | null;
  /** Where its messages stop: its end (and a second for the closing marker), the next session's start, or never while it runs. */
  windowEnd: string | null;
  inputTokens: number;
  /** Of the input, tokens served from the provider's prompt cache. */
  cachedTokens: number;
  outputTokens: number;
  modelMs: number;
};

export type LogCallRow = {
  sessionId: string;
  purpose: UsagePurpose;
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
  durationMs: number;
  createdAt: string;
};

const iso = (expression: string) => sql.raw(`to_jsonb(${expression}) #>> '{}'`);

/**
 * The agent's work sessions that overlap [from, to] (a page of its work log), oldest first,
 * each with its window (as session-trace.ts draws it) and token totals.
 */
export function listSessionsBetween(db: Db, agentId: string, from: Date, to: Date): Promise<LogSessionRow[]> {
  return db.execute<LogSessionRow>(sql`
    select s.id, s.status, s.steps, s.error, ${iso("s.started_at")} as "startedAt", ${iso("s.ended_at")} as "endedAt", ${iso("w.window_end")} as "windowEnd",
           coalesce(u.input_tokens, 0)::int as "inputTokens", coalesce(u.cached_tokens, 0)::int as "cachedTokens",
           coalesce(u.output_tokens, 0)::int as "outputTokens", coalesce(u.model_ms, 0)::int as "modelMs"
      from work_sessions s
      cross join lateral (
        select least(s.ended_at + interval '1 second',
                     (select min(n.started_at) from work_sessions n where n.agent_id = s.agent_id and n.started_at > s.started_at)) as window_end
      ) w
      left join lateral (
        select sum(input_tokens) as input_tokens, sum(cached_tokens) as cached_tokens, sum(output_tokens) as output_tokens, sum(duration_ms) as model_ms
          from usage where work_session_id = s.id
      ) u on true
     where s.agent_id = ${agentId}
       and s.started_at <= ${to.toISOString()}::timestamptz
       and (w.window_end is null or w.window_end >= ${from.toISOString()}::timestamptz)
     order by s.started_at, s.id`);
}

/** The model calls of those sessions that make a step of the log (work turns, a lead's briefing decision), oldest first. */
export function listSessionCalls(db: Db, sessionIds: readonly string[]): Promise<LogCallRow[]> {
  if (sessionIds.length === 0) return Promise.resolve([]);
  return db.execute<LogCallRow>(sql`
    select work_session_id as "sessionId", purpose, input_tokens as "inputTokens", cached_tokens as "cachedTokens", output_tokens as "outputTokens", duration_ms as "durationMs",
           ${iso("created_at")} as "createdAt"
      from usage
     where work_session_id = any(${`{${sessionIds.join(",")}}`}::uuid[])
       and purpose in ('work', 'briefing')
     order by created_at, id`);
}
