import type { Team } from "@/lib/db/schema";
import { formatUsd } from "@/lib/usage/format";
import { PriceTable } from "@/lib/usage/prices";
import { loadPriceTable, teamSpendToday, type Spend } from "@/lib/usage/spend";
import type { EngineConfig, EngineDeps } from "./engine-config";

/** A session or team spent its budget: the session stops and says why. */
export class BudgetExceeded extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BudgetExceeded";
  }
}

export type TeamBudgetFields = Pick<Team, "id" | "name" | "dailyTokenBudget" | "dailyCostBudgetUsd">;

/**
 * A team's daily budgets in force: its own, set on the team page, else TEAM_DAILY_TOKEN_BUDGET
 * for tokens and no cap on cost. Days are UTC days.
 */
export type TeamBudgets = {
  tokens: { limit: number; source: "team" | "default" };
  /** Null: no cost cap. */
  costUsd: number | null;
};

export function teamBudgets(team: Pick<Team, "dailyTokenBudget" | "dailyCostBudgetUsd">, config: Pick<EngineConfig, "teamDailyTokenBudget">): TeamBudgets {
  return {
    tokens: team.dailyTokenBudget !== null ? { limit: team.dailyTokenBudget, source: "team" } : { limit: config.teamDailyTokenBudget, source: "default" },
    costUsd: team.dailyCostBudgetUsd,
  };
}

const WHERE_TO_CHANGE = "the team page, under Usage and budget";

/**
 * Why the team may not spend more today, or null. The words say which budget ran out and
 * where to change it; the engine's marker and the chat's 429 both use them.
 */
export function teamBudgetProblem(team: TeamBudgetFields, spend: Pick<Spend, "tokens" | "costUsd">, config: Pick<EngineConfig, "teamDailyTokenBudget">): string | null {
  const budgets = teamBudgets(team, config);
  const tokens = spend.tokens.toLocaleString("en-US");
  const limit = budgets.tokens.limit.toLocaleString("en-US");
  if (spend.tokens >= budgets.tokens.limit) {
    return budgets.tokens.source === "team"
      ? `the team "${team.name}" used ${tokens} tokens today, over its daily token budget of ${limit} (set on ${WHERE_TO_CHANGE}); it resumes tomorrow (UTC), or raise the budget there`
      : `the team "${team.name}" used ${tokens} tokens today, over the default daily token budget of ${limit} (TEAM_DAILY_TOKEN_BUDGET); it resumes tomorrow (UTC), or give the team its own budget on ${WHERE_TO_CHANGE}`;
  }
  if (budgets.costUsd !== null && spend.costUsd >= budgets.costUsd) {
    return `the team "${team.name}" spent ${formatUsd(spend.costUsd)} today, over its daily cost budget of ${formatUsd(budgets.costUsd)} (set on ${WHERE_TO_CHANGE}); it resumes tomorrow (UTC), or raise the budget there`;
  }
  return null;
}

/** What a session's budget checks need to know and remember between calls. */
export type BudgetState = {
  team: TeamBudgetFields;
  /** Input + output tokens this session has spent. */
  tokens: number;
  /** US dollars this session has spent, as far as it was priced (see recordSpending). */
  costUsd: number;
  /**
   * The team's spending today as last read, and this session's own totals at that moment.
   * `prices`: the price table read with it, only when the team has a cost budget.
   */
  teamSpend?: { spend: Spend; readAt: number; tokensAtRead: number; costAtRead: number; prices: PriceTable | null };
};

const TEAM_SPEND_TTL_MS = 30_000;
const BUILT_IN_ONLY = new PriceTable();

/**
 * The team's spending today: read from the usage rows at most every 30 s (and the price
 * table with it when a cost budget needs it), with this session's own spending since that
 * read added, so a tool round needs no query for it. Other sessions of the team are counted
 * at the next read.
 */
async function teamSpendNow(deps: EngineDeps, state: BudgetState, needsPrices: boolean): Promise<Pick<Spend, "tokens" | "costUsd">> {
  const cached = state.teamSpend;
  if (cached && Date.now() - cached.readAt < TEAM_SPEND_TTL_MS && (!needsPrices || cached.prices)) {
    return { tokens: cached.spend.tokens + (state.tokens - cached.tokensAtRead), costUsd: cached.spend.costUsd + (state.costUsd - cached.costAtRead) };
  }
  const prices = needsPrices ? await loadPriceTable(deps.db) : null;
  // Without a cost budget no cost is looked at: the built-in prices spare reading the table.
  const spend = await teamSpendToday(deps.db, state.team.id, prices ?? BUILT_IN_ONLY);
  state.teamSpend = { spend, readAt: Date.now(), tokensAtRead: state.tokens, costAtRead: state.costUsd, prices };
  return spend;
}

/**
 * Counts one model call's spending against the session. Its cost is priced with the table
 * of the last read (kept only while the team has a cost budget); a model without a price
 * adds tokens but no cost, as it does in the team's total.
 */
export function recordSpending(state: BudgetState, model: string, usage: { inputTokens?: number; outputTokens?: number; cachedTokens?: number }): void {
  const tokens = { inputTokens: usage.inputTokens ?? 0, outputTokens: usage.outputTokens ?? 0, cachedTokens: usage.cachedTokens ?? 0 };
  state.tokens += tokens.inputTokens + tokens.outputTokens;
  state.costUsd += state.teamSpend?.prices?.costOf(model, tokens) ?? 0;
}

/** Refuses the next model call when the session or its team has spent its budget. */
export async function checkBudgets(deps: EngineDeps, state: BudgetState): Promise<void> {
  const { sessionTokenBudget } = deps.config;
  if (state.tokens >= sessionTokenBudget) {
    throw new BudgetExceeded(`this session used ${state.tokens} tokens, over its budget of ${sessionTokenBudget} (SESSION_TOKEN_BUDGET)`);
  }
  const spend = await teamSpendNow(deps, state, state.team.dailyCostBudgetUsd !== null);
  const problem = teamBudgetProblem(state.team, spend, deps.config);
  if (problem) throw new BudgetExceeded(problem);
}
