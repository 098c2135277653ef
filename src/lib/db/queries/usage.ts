import { and, eq, gte, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client";
import { usage, type Usage, type UsagePurpose } from "../schema";
import { commitsLazily, lazyCommitClause } from "./lazy-commit";
import { statementVariants } from "./prepared";

export type NewUsage = {
  /** Null for a call made for no agent yet (drafting a new team's lead instructions). */
  agentId: string | null;
  /**
   * The agent's team when the call was made: the caller knows it, and the agent may be gone
   * by the time the call ends. When not given, the agent's team now.
   */
  teamId?: string | null;
  conversationId?: string | null;
  purpose: UsagePurpose;
  model: string;
  inputTokens?: number;
  outputTokens?: number;
  cachedTokens?: number;
  durationMs?: number;
  workSessionId?: string | null;
  /** The task the call worked on (a work session's task in focus). */
  taskId?: string | null;
  finishReason?: string | null;
};

/**
 * One row per model call; written lazily (see lazyCommit): it is bookkeeping, not the log.
 * Written whatever happened to the agent meanwhile (see the schema: a usage row outlives its
 * agent and team), so a call that ends after its agent was removed still counts.
 */
const insertUsage = statementVariants<"lazy" | "durable", { id: string; team_id: string | null; created_at: string | Date }, Record<string, unknown>>((variant) => {
  return sql`
    insert into usage (${USAGE_COLUMNS})
    select ${usageKeyValues()}, ${usageMeasureValues()}
      from ${lazyCommitClause(variant === "lazy")}
    returning id, team_id, created_at`;
});

/** What reports call the calls of agents since removed, and of teams since deleted (one entry each). */
export const REMOVED_AGENTS = "Removed agents";
export const DELETED_TEAMS = "Deleted teams";

/** The SQL of a usage row's agent, team and conversation, over placeholders named as usageKeys' fields. */
export function usageKeyValues(): SQL {
  const value = (name: keyof ReturnType<typeof usageKeys>) => sql.placeholder(name);
  return sql`${value("usageAgentId")}::uuid, coalesce(${value("usageTeamId")}::uuid, (select a.team_id from agents a where a.id = ${value("usageAgentId")}::uuid)),
             ${value("usageConversationId")}::uuid`;
}

/** A usage row's agent, team and conversation (named apart from the columns of a statement that writes it beside others). */
export function usageKeys(input: NewUsage) {
  return { usageAgentId: input.agentId, usageTeamId: input.teamId ?? null, usageConversationId: input.conversationId ?? null };
}

/**
 * A usage row's columns: its keys (usageKeyValues), then its measures (usageMeasureValues, over
 * placeholders named as usageMeasures' fields). recordUsage and an answer's append (messages.ts,
 * which writes the row of the call whose answer it stores) write the same row.
 */
export const USAGE_COLUMNS = sql.raw("agent_id, team_id, conversation_id, purpose, model, input_tokens, output_tokens, cached_tokens, duration_ms, work_session_id, task_id, finish_reason");

export function usageMeasureValues(): SQL {
  const value = (name: keyof ReturnType<typeof usageMeasures>) => sql.placeholder(name);
  return sql`${value("purpose")}, ${value("model")}, ${value("inputTokens")}::int, ${value("outputTokens")}::int, ${value("cachedTokens")}::int,
             ${value("durationMs")}::int, ${value("workSessionId")}::uuid, ${value("taskId")}::uuid, ${value("finishReason")}`;
}

/** A usage row's values after its agent and conversation, with their defaults. */
export function usageMeasures(input: NewUsage) {
  return {
    purpose: input.purpose,
    model: input.model,
    inputTokens: input.inputTokens ?? 0,
    outputTokens: input.outputTokens ?? 0,
    cachedTokens: input.cachedTokens ?? 0,
    durationMs: input.durationMs ?? 0,
    workSessionId: input.workSessionId ?? null,
    taskId: input.taskId ?? null,
    finishReason: input.finishReason ?? null,
  };
}

export async function recordUsage(db: Db, input: NewUsage): Promise<Usage> {
  const measures = usageMeasures(input);
  const [row] = await insertUsage(commitsLazily(db) ? "lazy" : "durable")(db, { ...usageKeys(input), ...measures });
  return {
    id: row!.id,
    agentId: input.agentId,
    teamId: row!.team_id,
    conversationId: input.conversationId ?? null,
    ...measures,
    createdAt: row!.created_at instanceof Date ? row!.created_at : new Date(row!.created_at),
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

/** Tokens of one model, summed: what a cost is computed from. */
export type ModelTokens = { model: string; calls: number; inputTokens: number; outputTokens: number; cachedTokens: number };

// Sums come back from Postgres as bigint text.
const modelTokenColumns = {
  model: usage.model,
  calls: sql<number>`count(*)::int`,
  inputTokens: sql<string>`coalesce(sum(${usage.inputTokens}), 0)::bigint`,
  outputTokens: sql<string>`coalesce(sum(${usage.outputTokens}), 0)::bigint`,
  cachedTokens: sql<string>`coalesce(sum(${usage.cachedTokens}), 0)::bigint`,
};

const toModelTokens = (row: { model: string; calls: number; inputTokens: string; outputTokens: string; cachedTokens: string }): ModelTokens => ({
  model: row.model,
  calls: Number(row.calls),
  inputTokens: Number(row.inputTokens),
  outputTokens: Number(row.outputTokens),
  cachedTokens: Number(row.cachedTokens),
});

/**
 * What the team's agents spent since the start of the current UTC day, per model (a cost
 * needs the model), removed agents' calls included. Budgets read it at most every 30 s per session, and once per chat message.
 */
export async function getTeamUsageTodayByModel(db: Db, teamId: string): Promise<ModelTokens[]> {
  const rows = await db
    .select(modelTokenColumns)
    .from(usage)
    .where(and(eq(usage.teamId, teamId), gte(usage.createdAt, sql`date_trunc('day', now() at time zone 'utc') at time zone 'utc'`)))
    .groupBy(usage.model)
    .prepare("team_usage_today_by_model")
    .execute();
  return rows.map(toModelTokens);
}

/** One UTC day × team × agent × model of usage; a day with none is one row with only `day` set. */
export type UsageByDayRow = {
  day: string;
  teamId: string | null;
  teamName: string | null;
  agentId: string | null;
  agentName: string | null;
  agentRole: string | null;
} & ModelTokens;

/**
 * Usage of the last `days` UTC days (today included), summed per day, team, agent and model,
 * every day present (generate_series) so a chart has no gaps. Calls for no agent (drafting a
 * new team) have no team; a team filter leaves them out. A removed agent's rows keep its id
 * and team with no name (agentName null), a deleted team's rows their team id with no name.
 * Reads the created_at index.
 */
export async function listUsageByDay(db: Db, options: { days: number; teamId?: string | null }): Promise<UsageByDayRow[]> {
  const teamId = options.teamId ?? null;
  const rows = await db.execute<{
    day: string;
    team_id: string | null;
    team_name: string | null;
    agent_id: string | null;
    agent_name: string | null;
    agent_role: string | null;
    model: string | null;
    calls: number | null;
    input_tokens: string | null;
    output_tokens: string | null;
    cached_tokens: string | null;
  }>(sql`
    with bounds as (
      select (now() at time zone 'utc')::date - ${options.days - 1}::int as first_day, (now() at time zone 'utc')::date as last_day
    ), days as (
      select generate_series(first_day, last_day, interval '1 day')::date as day from bounds
    ), spent as (
      select (u.created_at at time zone 'utc')::date as day, u.team_id, u.agent_id, u.model,
             count(*)::int as calls,
             sum(u.input_tokens)::bigint as input_tokens,
             sum(u.output_tokens)::bigint as output_tokens,
             sum(u.cached_tokens)::bigint as cached_tokens
        from usage u
       where u.created_at >= (select first_day from bounds)::timestamp at time zone 'utc'
         and (${teamId}::uuid is null or u.team_id = ${teamId}::uuid)
       group by 1, 2, 3, 4
    )
    select to_char(d.day, 'YYYY-MM-DD') as day, s.team_id, t.name as team_name, s.agent_id, a.name as agent_name, a.role as agent_role,
           s.model, s.calls, s.input_tokens, s.output_tokens, s.cached_tokens
      from days d
      left join spent s on s.day = d.day
      left join teams t on t.id = s.team_id
      left join agents a on a.id = s.agent_id
     order by d.day, t.name, s.team_id, a.role = 'lead' desc, a.name, s.agent_id, s.model`);
  return rows.map((row) => ({
    day: row.day,
    teamId: row.team_id,
    teamName: row.team_name,
    agentId: row.agent_id,
    agentName: row.agent_name,
    agentRole: row.agent_role,
    model: row.model ?? "",
    calls: Number(row.calls ?? 0),
    inputTokens: Number(row.input_tokens ?? 0),
    outputTokens: Number(row.output_tokens ?? 0),
    cachedTokens: Number(row.cached_tokens ?? 0),
  }));
}

/** An agent's usage of all time, per model (its page prices it). */
export async function getAgentUsageByModel(db: Db, agentId: string): Promise<ModelTokens[]> {
  const rows = await db
    .select(modelTokenColumns)
    .from(usage)
    .where(eq(usage.agentId, agentId))
    .groupBy(usage.model);
  return rows.map(toModelTokens);
}
