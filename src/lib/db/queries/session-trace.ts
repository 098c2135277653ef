import "server-only";
// The rows a work session's trace is drawn from (views/session-trace.ts): the session with its
// agent and team, its model calls, its messages and the facts it saved, all in its time window.
import { sql } from "drizzle-orm";
import type { Db } from "@/lib/db/client";
import type { AgentRole, StoredToolCall, UsagePurpose, WorkSessionStatus } from "@/lib/db/schema";

export type TraceSessionRow = {
  id: string;
  status: WorkSessionStatus;
  steps: number;
  error: string | null;
  worker: string;
  started_at: string;
  ended_at: string | null;
  stop_requested_at: string | null;
  /** Where its messages stop: its end (and a second for the closing marker), or the next session's start, or now. */
  window_end: string;
  now: string;
  agent_id: string;
  agent_name: string;
  agent_role: AgentRole;
  team_id: string;
  team_name: string;
  conversation_id: string | null;
};

const iso = (column: string) => sql.raw(`to_jsonb(${column}) #>> '{}'`);

export async function getTraceSession(db: Db, sessionId: string): Promise<TraceSessionRow | undefined> {
  const [session] = await db.execute<TraceSessionRow>(sql`
    select s.id, s.status, s.steps, s.error, s.worker,
           ${iso("s.started_at")} as started_at, ${iso("s.ended_at")} as ended_at, ${iso("s.stop_requested_at")} as stop_requested_at,
           ${iso(`least(coalesce(s.ended_at + interval '1 second', clock_timestamp()),
                         coalesce((select min(n.started_at) from work_sessions n where n.agent_id = s.agent_id and n.started_at > s.started_at), 'infinity'))`)} as window_end,
           ${iso("clock_timestamp()")} as now,
           a.id as agent_id, a.name as agent_name, a.role as agent_role, t.id as team_id, t.name as team_name,
           (select c.id from conversations c where c.agent_id = a.id and c.mode = 'background') as conversation_id
      from work_sessions s join agents a on a.id = s.agent_id join teams t on t.id = a.team_id
     where s.id = ${sessionId}`);
  return session;
}

export function listTraceUsage(db: Db, sessionId: string) {
  return db.execute<{
    id: string;
    purpose: UsagePurpose;
    model: string;
    input_tokens: number;
    output_tokens: number;
    cached_tokens: number;
    duration_ms: number;
    finish_reason: string | null;
    estimated: boolean;
    input_usd_per_mtok: string | null;
    cached_input_usd_per_mtok: string | null;
    output_usd_per_mtok: string | null;
    created_at: string;
  }>(sql`
      select id, purpose, model, input_tokens, output_tokens, cached_tokens, duration_ms, finish_reason, estimated,
             input_usd_per_mtok, cached_input_usd_per_mtok, output_usd_per_mtok, ${iso("created_at")} as created_at
        from usage where work_session_id = ${sessionId} order by created_at, id`);
}

/** The session's messages: those of its agent's work log in its window, at most `limit`. */
export function listTraceMessages(db: Db, session: TraceSessionRow & { conversation_id: string }, limit: number) {
  return db.execute<{
    id: string;
    role: string;
    content: string;
    tool_calls: StoredToolCall[] | null;
    created_at: string;
  }>(sql`
    select id, role, content, tool_calls, ${iso("created_at")} as created_at from messages
     where conversation_id = ${session.conversation_id}
       and created_at >= ${session.started_at}::timestamptz and created_at < ${session.window_end}::timestamptz
     order by created_at, id limit ${limit}`);
}

/** The facts the session saved or reported again (a source in its window: one item, many sources). */
export function listTraceKnowledge(db: Db, session: TraceSessionRow & { conversation_id: string }) {
  return db.execute<{ id: string; type: string; content: string; created_at: string }>(sql`
    select k.id, k.type, k.content, ${iso("s.created_at")} as created_at
      from knowledge_sources s join knowledge_items k on k.id = s.knowledge_item_id
     where s.conversation_id = ${session.conversation_id}
       and s.created_at >= ${session.started_at}::timestamptz and s.created_at < ${session.window_end}::timestamptz
     order by s.created_at, k.id limit 200`);
}
