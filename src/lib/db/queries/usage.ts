import { and, eq, gte, sql } from "drizzle-orm";
import type { Db } from "../client";
import { agents, usage, type Usage, type UsagePurpose } from "../schema";

export type NewUsage = {
  agentId: string;
  conversationId?: string | null;
  purpose: UsagePurpose;
  model: string;
  inputTokens?: number;
  outputTokens?: number;
  cachedTokens?: number;
  durationMs?: number;
};

export async function recordUsage(db: Db, input: NewUsage): Promise<Usage> {
  const [row] = await db.insert(usage).values(input).returning();
  return row!;
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
    .where(and(eq(agents.teamId, teamId), gte(usage.createdAt, sql`date_trunc('day', now() at time zone 'utc') at time zone 'utc'`)));
  return Number(row?.tokens ?? 0);
}
