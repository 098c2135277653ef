import "server-only";
import { and, eq, gte, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client";
import { usage, type Usage, type UsagePurpose } from "../schema";
import { commitsLazily, lazyCommitClause } from "./lazy-commit";
import { statementVariants } from "./prepared";
import { priceLookup, type TokenPrice } from "@/lib/usage/prices";

export type NewUsage = {
  /**
   * The row written when the call started (recordUsageStart), which this write settles; a new
   * row when not given, or when the start's row never landed.
   */
  id?: string;
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
  /** The tokens are Cadre's estimate (a call cut off, or not yet answered), not the provider's count. */
  estimated?: boolean;
};

/**
 * A started call's row (estimated) as it is first written, or the settled row over it. The
 * start writes nothing over a row already there (a settle that overtook it on another
 * connection); a settle writes the call's tokens, end and finish over the start's, and keeps
 * the start's price (the one in force when the call was made).
 */
type UsageWrite = "start" | "settle";

/**
 * One row per model call; written lazily (see lazy-commit.ts): it is bookkeeping, not the log.
 * Written whatever happened to the agent meanwhile (see the schema: a usage row outlives its
 * agent and team), so a call that ends after its agent was removed still counts.
 */
const writeUsageStatement = statementVariants<
  `${"lazy" | "durable"}-${UsageWrite}`,
  UsageRowWritten,
  Record<string, unknown>
>((variant) => {
  const [commit, write] = variant.split("-") as ["lazy" | "durable", UsageWrite];
  return sql`${writeUsage(write, lazyCommitClause(commit === "lazy"))} returning id, team_id, created_at, input_usd_per_mtok, cached_input_usd_per_mtok, output_usd_per_mtok`;
});

type UsageRowWritten = {
  id: string;
  team_id: string | null;
  created_at: string | Date;
  input_usd_per_mtok: string | null;
  cached_input_usd_per_mtok: string | null;
  output_usd_per_mtok: string | null;
};

/** What reports call the calls of agents since removed, and of teams since deleted (one entry each). */
export const REMOVED_AGENTS = "Removed agents";
export const DELETED_TEAMS = "Deleted teams";

/**
 * The INSERT of a usage row (without RETURNING), over placeholders named as usageKeys' and
 * usageMeasures' fields: recordUsage and an answer's append (messages.ts, which writes the row
 * of the call whose answer it stores) write the same row. `from`: a FROM item more (the
 * lazy_commit one). The row's price is the model's in force now, found in the statement (see
 * priceLookup): the person's price from model_prices, else the built-in one passed with it.
 */
export function writeUsage(write: UsageWrite, from?: SQL): SQL {
  const value = (name: keyof ReturnType<typeof usageKeys> | keyof ReturnType<typeof usageMeasures>) =>
    sql.placeholder(name);
  const onConflict =
    write === "start"
      ? sql`do nothing`
      : sql`do update set input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens, cached_tokens = excluded.cached_tokens,
                          duration_ms = excluded.duration_ms, finish_reason = excluded.finish_reason, estimated = excluded.estimated,
                          created_at = excluded.created_at`;
  return sql`
    insert into usage (id, agent_id, team_id, conversation_id, purpose, model, input_tokens, output_tokens, cached_tokens, duration_ms, work_session_id, task_id,
                       finish_reason, estimated, input_usd_per_mtok, cached_input_usd_per_mtok, output_usd_per_mtok)
    select coalesce(${value("usageId")}::uuid, gen_random_uuid()), ${value("usageAgentId")}::uuid,
           coalesce(${value("usageTeamId")}::uuid, (select a.team_id from agents a where a.id = ${value("usageAgentId")}::uuid)),
           ${value("usageConversationId")}::uuid, ${value("purpose")}, ${value("model")}, ${value("inputTokens")}::int, ${value("outputTokens")}::int,
           ${value("cachedTokens")}::int, ${value("durationMs")}::int, ${value("workSessionId")}::uuid, ${value("taskId")}::uuid, ${value("finishReason")},
           ${value("estimated")}::boolean, price.input, price.cached, price.output
      from (select 1) as one
      left join lateral (
        select case when p.model is null then b.input else p.input_usd_per_mtok end as input,
               case when p.model is null then b.cached else p.cached_input_usd_per_mtok end as cached,
               case when p.model is null then b.output else p.output_usd_per_mtok end as output
          from jsonb_to_recordset(${value("usagePrice")}::jsonb) as b(rank int, model text, input numeric, cached numeric, output numeric)
          left join model_prices p on p.model = b.model
         where p.model is not null or b.input is not null
         order by b.rank limit 1
      ) as price on true${from ? sql`, ${from}` : sql``}
    on conflict (id) ${onConflict}`;
}

/** A usage row's own id, agent, team and conversation (named apart from the columns of a statement that writes it beside others). */
export function usageKeys(input: NewUsage) {
  return {
    usageId: input.id ?? null,
    usageAgentId: input.agentId,
    usageTeamId: input.teamId ?? null,
    usageConversationId: input.conversationId ?? null,
  };
}

/** A usage row's values after its keys, with their defaults, and how its price is found. */
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
    estimated: input.estimated ?? false,
    usagePrice: JSON.stringify(
      priceLookup(input.model).map(({ rank, model, builtIn }) => ({
        rank,
        model,
        input: builtIn?.inputUsdPerMtok ?? null,
        cached: builtIn?.cachedInputUsdPerMtok ?? null,
        output: builtIn?.outputUsdPerMtok ?? null,
      })),
    ),
  };
}

/** Writes a model call's usage row, or settles the one its start wrote (input.id). */
export async function recordUsage(db: Db, input: NewUsage): Promise<Usage> {
  return writeUsageRow(db, input, "settle");
}

/**
 * The row of a call that is starting, marked estimated, so that a process that dies mid-call
 * (kill -9) leaves the call counted; recordUsage settles it with the provider's count.
 */
export async function recordUsageStart(db: Db, input: NewUsage & { id: string }): Promise<Usage> {
  return writeUsageRow(db, { ...input, estimated: true }, "start");
}

async function writeUsageRow(db: Db, input: NewUsage, write: UsageWrite): Promise<Usage> {
  const keys = usageKeys(input);
  const { usagePrice, ...measures } = usageMeasures(input);
  const [row] = await writeUsageStatement(`${commitsLazily(db) ? "lazy" : "durable"}-${write}`)(db, {
    ...keys,
    ...measures,
    usagePrice,
  });
  const rate = (value: string | null | undefined) => (value == null ? null : Number(value));
  return {
    id: row?.id ?? input.id!,
    agentId: input.agentId,
    teamId: row?.team_id ?? input.teamId ?? null,
    conversationId: input.conversationId ?? null,
    ...measures,
    inputUsdPerMtok: rate(row?.input_usd_per_mtok),
    cachedInputUsdPerMtok: rate(row?.cached_input_usd_per_mtok),
    outputUsdPerMtok: rate(row?.output_usd_per_mtok),
    createdAt: row ? (row.created_at instanceof Date ? row.created_at : new Date(row.created_at)) : new Date(),
  };
}

/**
 * Removes the row a call's start wrote, when the call failed with the provider's error (a 429,
 * a 5xx, a refused request): the provider charges nothing for those. A settled row stays.
 */
export async function discardUsageStart(db: Db, id: string): Promise<void> {
  await discardStatement(commitsLazily(db) ? "lazy" : "durable")(db, { id });
}

const discardStatement = statementVariants<"lazy" | "durable", never, { id: string }>(
  (variant) =>
    sql`delete from usage u using ${lazyCommitClause(variant === "lazy")} where u.id = ${sql.placeholder("id")}::uuid and u.estimated`,
);

export type UsageTotals = {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  durationMs: number;
};

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

/**
 * Tokens of one model at one kept price, summed: what a cost is computed from. Calls of a
 * model at two prices (the person edited it between them) are two entries.
 */
export type ModelTokens = {
  model: string;
  /** The price the calls kept (the one in force when they were made); null: none kept, today's prices them (PriceTable.priceAt). */
  price: TokenPrice | null;
  calls: number;
  /** Calls whose tokens are Cadre's estimate (usage.estimated): cut off, or of a process that died mid-call. */
  estimatedCalls: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
};

/** A kept price from its columns (numeric arrives as text in raw SQL, as a number through drizzle). */
export function keptPrice(
  input: string | number | null,
  cached: string | number | null,
  output: string | number | null,
): TokenPrice | null {
  if (input === null || output === null) return null;
  return {
    inputUsdPerMtok: Number(input),
    cachedInputUsdPerMtok: cached === null ? null : Number(cached),
    outputUsdPerMtok: Number(output),
  };
}

/** The kept price's columns, to select and group by beside a model. */
export const KEPT_PRICE_COLUMNS = sql.raw("u.input_usd_per_mtok, u.cached_input_usd_per_mtok, u.output_usd_per_mtok");

// Sums come back from Postgres as bigint text.
const modelTokenColumns = {
  model: usage.model,
  inputUsdPerMtok: usage.inputUsdPerMtok,
  cachedInputUsdPerMtok: usage.cachedInputUsdPerMtok,
  outputUsdPerMtok: usage.outputUsdPerMtok,
  calls: sql<number>`count(*)::int`,
  estimatedCalls: sql<number>`(count(*) filter (where ${usage.estimated}))::int`,
  inputTokens: sql<string>`coalesce(sum(${usage.inputTokens}), 0)::bigint`,
  outputTokens: sql<string>`coalesce(sum(${usage.outputTokens}), 0)::bigint`,
  cachedTokens: sql<string>`coalesce(sum(${usage.cachedTokens}), 0)::bigint`,
};
const modelTokenGroups = [
  usage.model,
  usage.inputUsdPerMtok,
  usage.cachedInputUsdPerMtok,
  usage.outputUsdPerMtok,
] as const;

const toModelTokens = (row: {
  model: string;
  inputUsdPerMtok: number | null;
  cachedInputUsdPerMtok: number | null;
  outputUsdPerMtok: number | null;
  calls: number;
  estimatedCalls: number;
  inputTokens: string;
  outputTokens: string;
  cachedTokens: string;
}): ModelTokens => ({
  model: row.model,
  price: keptPrice(row.inputUsdPerMtok, row.cachedInputUsdPerMtok, row.outputUsdPerMtok),
  calls: Number(row.calls),
  estimatedCalls: Number(row.estimatedCalls),
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
    .where(
      and(
        eq(usage.teamId, teamId),
        gte(usage.createdAt, sql`date_trunc('day', now() at time zone 'utc') at time zone 'utc'`),
      ),
    )
    .groupBy(...modelTokenGroups)
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
export async function listUsageByDay(
  db: Db,
  options: { days: number; teamId?: string | null },
): Promise<UsageByDayRow[]> {
  const teamId = options.teamId ?? null;
  const rows = await db.execute<{
    day: string;
    team_id: string | null;
    team_name: string | null;
    agent_id: string | null;
    agent_name: string | null;
    agent_role: string | null;
    model: string | null;
    input_usd_per_mtok: string | null;
    cached_input_usd_per_mtok: string | null;
    output_usd_per_mtok: string | null;
    calls: number | null;
    estimated_calls: number | null;
    input_tokens: string | null;
    output_tokens: string | null;
    cached_tokens: string | null;
  }>(sql`
    with bounds as (
      select (now() at time zone 'utc')::date - ${options.days - 1}::int as first_day, (now() at time zone 'utc')::date as last_day
    ), days as (
      select generate_series(first_day, last_day, interval '1 day')::date as day from bounds
    ), spent as (
      select (u.created_at at time zone 'utc')::date as day, u.team_id, u.agent_id, u.model, ${KEPT_PRICE_COLUMNS},
             count(*)::int as calls,
             (count(*) filter (where u.estimated))::int as estimated_calls,
             sum(u.input_tokens)::bigint as input_tokens,
             sum(u.output_tokens)::bigint as output_tokens,
             sum(u.cached_tokens)::bigint as cached_tokens
        from usage u
       where u.created_at >= (select first_day from bounds)::timestamp at time zone 'utc'
         and (${teamId}::uuid is null or u.team_id = ${teamId}::uuid)
       group by 1, 2, 3, 4, 5, 6, 7
    )
    select to_char(d.day, 'YYYY-MM-DD') as day, s.team_id, t.name as team_name, s.agent_id, a.name as agent_name, a.role as agent_role,
           s.model, s.input_usd_per_mtok, s.cached_input_usd_per_mtok, s.output_usd_per_mtok, s.calls, s.estimated_calls, s.input_tokens, s.output_tokens, s.cached_tokens
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
    price: keptPrice(row.input_usd_per_mtok, row.cached_input_usd_per_mtok, row.output_usd_per_mtok),
    calls: Number(row.calls ?? 0),
    estimatedCalls: Number(row.estimated_calls ?? 0),
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
    .groupBy(...modelTokenGroups);
  return rows.map(toModelTokens);
}
