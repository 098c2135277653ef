import { and, eq, gte, sql } from "drizzle-orm";
import type { Db } from "../client";
import { agents, usage, type Usage, type UsagePurpose } from "../schema";
import { lazyCommit } from "./lazy-commit";
import { executePrepared } from "./prepared";

export type NewUsage = {
  /** Null for a call made for no agent yet (drafting a new team's lead instructions). */
  agentId: string | null;
  conversationId?: string | null;
  purpose: UsagePurpose;
  model: string;
  inputTokens?: number;
  outputTokens?: number;
  cachedTokens?: number;
  durationMs?: number;
  workSessionId?: string | null;
  finishReason?: string | null;
};

/**
 * One row per model call; written lazily (see lazyCommit): it is bookkeeping, not the log.
 * Null when the agent was deleted while its call ran (a chat whose team was deleted mid-reply):
 * its usage rows went with it, so there is nothing to record. The agent row is locked as the
 * foreign key would lock it, so a deletion either waits for this row or is seen, never a violation.
 */
export async function recordUsage(db: Db, input: NewUsage): Promise<Usage | null> {
  const rows = await executePrepared<{ id: string; created_at: string | Date }>(db, sql`
    insert into usage (agent_id, conversation_id, purpose, model, input_tokens, output_tokens, cached_tokens, duration_ms, work_session_id, finish_reason)
    select ${input.agentId}, ${input.conversationId ?? null}, ${input.purpose}, ${input.model},
           ${input.inputTokens ?? 0}, ${input.outputTokens ?? 0}, ${input.cachedTokens ?? 0}, ${input.durationMs ?? 0},
           ${input.workSessionId ?? null}, ${input.finishReason ?? null}
      from ${lazyCommit(db)}
     where ${input.agentId}::uuid is null or exists (select 1 from agents where id = ${input.agentId}::uuid for key share)
    returning id, created_at`);
  const row = rows[0];
  if (!row) return null;
  return {
    id: row.id,
    agentId: input.agentId,
    conversationId: input.conversationId ?? null,
    purpose: input.purpose,
    model: input.model,
    inputTokens: input.inputTokens ?? 0,
    outputTokens: input.outputTokens ?? 0,
    cachedTokens: input.cachedTokens ?? 0,
    durationMs: input.durationMs ?? 0,
    workSessionId: input.workSessionId ?? null,
    finishReason: input.finishReason ?? null,
    createdAt: row.created_at instanceof Date ? row.created_at : new Date(row.created_at),
  };
}

export type UsageTotals = { calls: number; inputTokens: number; outputTokens: number; cachedTokens: number; durationMs: number };

export async function getUsageTotals(db: Db, agentId: string): Promise<UsageTotals> {
  const [row] = await db
    .select({
      calls: sql<number>`count(*)::int`,
      inputTokens: sql<number>`coalesce(sum(${usage.inputTokens}), 0)::int`,
      outputTokens: sql<number>`coalesce(sum(${usage.outputTokens}), 0)::int`,
      cachedTokens: sql<number>`coalesce(sum(${usage.cachedTokens}), 0)::int`,
      durationMs: sql<number>`coalesce(sum(${usage.durationMs}), 0)::int`,
    })
    .from(usage)
    .where(eq(usage.agentId, agentId));
  return row!;
}

/** Input + output tokens the team's agents spent since the start of the current UTC day. */
export async function getTeamTokensToday(db: Db, teamId: string): Promise<number> {
  const [row] = await db
    .select({ tokens: sql<number>`coalesce(sum(${usage.inputTokens} + ${usage.outputTokens}), 0)::bigint` })
    .from(usage)
    .innerJoin(agents, eq(agents.id, usage.agentId))
    .where(and(eq(agents.teamId, teamId), gte(usage.createdAt, sql`date_trunc('day', now() at time zone 'utc') at time zone 'utc'`)))
    .prepare("team_tokens_today")
    .execute();
  return Number(row?.tokens ?? 0);
}
