import "server-only";
import type { Team } from "@/lib/db/schema";
import { formatUsd } from "@/lib/usage/format";
import { PriceTable } from "@/lib/usage/prices";
import { getTeam } from "@/lib/db/queries/teams";
import { getTeamUsageTodayByModel } from "@/lib/db/queries/usage";
import { loadPriceTable, spendOf, type Spend } from "@/lib/usage/spend";
import type { EngineConfig, EngineDeps } from "@/lib/core/engine-config";

/** A session spent its own token budget: the session stops, its task fails, and the marker says why. */
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

export function teamBudgets(
  team: Pick<Team, "dailyTokenBudget" | "dailyCostBudgetUsd">,
  config: Pick<EngineConfig, "teamDailyTokenBudget">,
): TeamBudgets {
  return {
    tokens:
      team.dailyTokenBudget !== null
        ? { limit: team.dailyTokenBudget, source: "team" }
        : { limit: config.teamDailyTokenBudget, source: "default" },
    costUsd: team.dailyCostBudgetUsd,
  };
}

const WHERE_TO_CHANGE = "in the team's Settings, under Usage and budget";

/**
 * Why the team may not spend more today, or null. The words say which budget ran out, what
 * waits (`for`: the team's work, or the chat) until when, and where to change it; the
 * engine's marker and alert and the chat's 429 all use them. Both are true: work stopped by
 * a budget waits where it was (endWorkSession) and starts again at the next UTC day or when
 * the budget changes (the worker's backlog, PATCH /api/teams/:id).
 */
export function teamBudgetProblem(
  team: TeamBudgetFields,
  spend: Pick<Spend, "tokens" | "costUsd">,
  config: Pick<EngineConfig, "teamDailyTokenBudget">,
  waiting: "work" | "chat" = "work",
): string | null {
  const budgets = teamBudgets(team, config);
  const what = waiting === "work" ? "its work waits" : "the chat is closed";
  const until = (change: string) => `${what} until tomorrow (UTC) or until you ${change} ${WHERE_TO_CHANGE}`;
  const tokens = spend.tokens.toLocaleString("en-US");
  const limit = budgets.tokens.limit.toLocaleString("en-US");
  if (spend.tokens >= budgets.tokens.limit) {
    return budgets.tokens.source === "team"
      ? `the team "${team.name}" used ${tokens} tokens today, over its daily token budget of ${limit}; ${until("raise the budget")}`
      : `the team "${team.name}" used ${tokens} tokens today, over the default daily token budget of ${limit} (TEAM_DAILY_TOKEN_BUDGET); ${until("give the team a budget of its own")}`;
  }
  if (budgets.costUsd !== null && spend.costUsd >= budgets.costUsd) {
    return `the team "${team.name}" spent ${formatUsd(spend.costUsd)} today, over its daily cost budget of ${formatUsd(budgets.costUsd)}; ${until("raise the budget")}`;
  }
  return null;
}

/** A team's budget ran out: the session stops, and the team's work waits for tomorrow or a higher budget. */
export class TeamOverBudget extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TeamOverBudget";
  }
}

/** What a session's budget checks need to know. */
export type BudgetState = {
  team: TeamBudgetFields;
  /** Input + output tokens this session has spent. */
  tokens: number;
};

/**
 * What this process knows of a team's spending today, shared by all its sessions of the team:
 * the last read of the usage rows, and every model call's spending this process recorded
 * (cumulative: work steps, compaction, extraction, chat), so a session sees its teammates'
 * calls without a query. Spending recorded
 * before a read was sent is in that read (it is recorded once its usage row is written, see
 * recordTeamSpending); what came after is added to it.
 */
type TeamLedger = {
  recorded: Amount;
  read?: { day: string; at: number; sent: number; spend: Amount; recordedAtSend: Amount; prices: PriceTable | null };
};
type Amount = { tokens: number; costUsd: number };

const ledgers = new Map<string, TeamLedger>();
let readsSent = 0;

/**
 * How stale a read may be while the estimate is under NEAR_BUDGET of every budget. With one
 * worker, the ledger already holds all the model calls' spending; the age bounds only what
 * the read cannot see otherwise — other worker processes and the chat in the web process.
 * One grouped query per team and process every 5 s costs nothing next to a tool round's own
 * queries.
 */
const TEAM_SPEND_TTL_MS = 5_000;
/**
 * From this share of a budget on, every check reads the usage rows afresh (one grouped
 * query over the team's rows of the day, indexed, sent beside the step's other reads): that
 * is where sessions running side by side, in any process, would otherwise spend the rest of
 * the budget several times over. Not more: another process's spending is unseen until the
 * next read, and against a fast model 5 s is enough for two workers that each see only
 * themselves to spend 80 % each (issue 33's outside check: 131 % before the first stop, 188 %
 * at the end). At 40 %, two such workers have spent 80 % at most when both read at every
 * call, and each session then overruns by about the call it has in flight. (N workers that
 * each see only themselves: N × 40 % before that.) The read is linear in the team's rows of
 * the day — about 1 ms per thousand rows, and a day's budget is a few thousand calls.
 */
const NEAR_BUDGET = 0.4;
const BUILT_IN_ONLY = new PriceTable();

const utcDay = () => new Date().toISOString().slice(0, 10);

function ledgerOf(teamId: string): TeamLedger {
  let ledger = ledgers.get(teamId);
  if (!ledger) {
    ledger = { recorded: { tokens: 0, costUsd: 0 } };
    ledgers.set(teamId, ledger);
  }
  return ledger;
}

function estimateOf(ledger: TeamLedger): Amount | null {
  const read = ledger.read;
  if (!read) return null;
  return {
    tokens: read.spend.tokens + (ledger.recorded.tokens - read.recordedAtSend.tokens),
    costUsd: read.spend.costUsd + (ledger.recorded.costUsd - read.recordedAtSend.costUsd),
  };
}

/**
 * The team's spending today: the last read plus what this process's sessions recorded since,
 * while that read is younger than TEAM_SPEND_TTL_MS, of today, priced when a cost budget needs
 * it, and the estimate under NEAR_BUDGET of the budgets; else the usage rows are read again.
 *
 * The bound: sessions in this process never see less than the spending they recorded
 * themselves, so together they overrun by at most the calls in flight when the budget runs
 * out — about one per session. Sessions in other processes are seen at the next read: within
 * 5 s far from the budget, at every model call from 40 % of it on (NEAR_BUDGET), so they add
 * at most what they spend unseen before crossing that, plus their own calls in flight.
 */
async function teamSpendNow(deps: EngineDeps, team: TeamBudgetFields): Promise<Amount> {
  const needsPrices = team.dailyCostBudgetUsd !== null;
  const ledger = ledgerOf(team.id);
  const read = ledger.read;
  const estimate = estimateOf(ledger);
  if (
    read &&
    estimate &&
    read.day === utcDay() &&
    Date.now() - read.at < TEAM_SPEND_TTL_MS &&
    (!needsPrices || read.prices) &&
    !nearBudget(team, estimate, deps.config)
  ) {
    return estimate;
  }
  const sent = ++readsSent;
  const recordedAtSend = { ...ledger.recorded };
  const day = utcDay();
  // Without a cost budget no cost is looked at: the built-in prices spare reading the table.
  const [rows, prices] = await Promise.all([
    getTeamUsageTodayByModel(deps.db, team.id),
    needsPrices ? loadPriceTable(deps.db) : null,
  ]);
  const spend = spendOf(rows, prices ?? BUILT_IN_ONLY);
  // Reads of several sessions may overtake each other: the one sent last is kept.
  if (!ledger.read || sent > ledger.read.sent) {
    ledger.read = {
      day,
      at: Date.now(),
      sent,
      spend: { tokens: spend.tokens, costUsd: spend.costUsd },
      recordedAtSend,
      prices,
    };
  }
  return estimateOf(ledger)!;
}

function nearBudget(
  team: TeamBudgetFields,
  spend: Amount,
  config: Pick<EngineConfig, "teamDailyTokenBudget">,
): boolean {
  const budgets = teamBudgets(team, config);
  return (
    spend.tokens >= budgets.tokens.limit * NEAR_BUDGET ||
    (budgets.costUsd !== null && spend.costUsd >= budgets.costUsd * NEAR_BUDGET)
  );
}

/** Counts one model call's tokens against the session's own budget (SESSION_TOKEN_BUDGET). */
export function recordSpending(state: BudgetState, usage: { inputTokens?: number; outputTokens?: number }): void {
  state.tokens += (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
}

/**
 * Counts one model call's spending for every session of the team in this process. Called once
 * the call's usage row is written (ModelCall.onUsageRecorded, see teamSpendingRecorder), so a read sent after this sees the row and a read sent
 * before does not count it twice. Its cost is priced with the table of the team's last read
 * (kept only while the team has a cost budget); a model without a price adds tokens but no
 * cost, as it does in the team's total.
 */
export function recordTeamSpending(
  teamId: string,
  model: string,
  usage: { inputTokens?: number; outputTokens?: number; cachedTokens?: number },
): void {
  const tokens = {
    inputTokens: usage.inputTokens ?? 0,
    outputTokens: usage.outputTokens ?? 0,
    cachedTokens: usage.cachedTokens ?? 0,
  };
  const ledger = ledgerOf(teamId);
  ledger.recorded.tokens += tokens.inputTokens + tokens.outputTokens;
  ledger.recorded.costUsd += ledger.read?.prices?.costOf(model, tokens) ?? 0;
}

/**
 * A ModelCall's onUsageRecorded for a call the team pays for, of any purpose: its spending
 * is counted in this process's estimate (recordTeamSpending). None for a call of no team.
 */
export function teamSpendingRecorder(
  teamId: string | null | undefined,
  model: string,
): ((row: { inputTokens?: number; outputTokens?: number; cachedTokens?: number }) => void) | undefined {
  return teamId ? (row) => recordTeamSpending(teamId, model, row) : undefined;
}

/** Why the team may not spend more today (teamBudgetProblem), from this process's estimate of its spending (teamSpendNow). */
export async function teamOverBudget(deps: EngineDeps, team: TeamBudgetFields): Promise<string | null> {
  return teamBudgetProblem(team, await teamSpendNow(deps, team), deps.config);
}

/**
 * Of these teams, the ones over their daily budget today: the worker's backlog drain leaves
 * their waiting work alone (a session would only end at once), and takes it up by itself
 * once they are under it again — the next UTC day, or a higher budget.
 */
export async function teamsOverBudget(deps: EngineDeps, teamIds: Iterable<string>): Promise<Set<string>> {
  const over = new Set<string>();
  for (const teamId of new Set(teamIds)) {
    const team = await getTeam(deps.db, teamId);
    if (team && (await teamOverBudget(deps, team))) over.add(teamId);
  }
  return over;
}

/**
 * Refuses the next model call when the session has spent its own budget (BudgetExceeded: the
 * task fails, a runaway turn) or its team has spent today's (TeamOverBudget: the work waits).
 */
export async function checkBudgets(deps: EngineDeps, state: BudgetState): Promise<void> {
  const { sessionTokenBudget } = deps.config;
  if (state.tokens >= sessionTokenBudget) {
    throw new BudgetExceeded(
      `this session used ${state.tokens} tokens, over its budget of ${sessionTokenBudget} (SESSION_TOKEN_BUDGET)`,
    );
  }
  const problem = await teamOverBudget(deps, state.team);
  if (problem) throw new TeamOverBudget(problem);
}
