import "server-only";
import type { Db } from "@/lib/db/client";
import { DELETED_TEAMS, listUsageByDay, REMOVED_AGENTS, type ModelTokens } from "@/lib/db/queries/usage";
import { cachedShare, roundUsd, type PriceSource, type PriceTable } from "./prices";
import { loadPriceTable } from "./spend";

/**
 * Tokens and cost of some model calls. `costUsd` counts only priced models; the tokens of
 * models without a price are in `unpricedTokens` too, and those models are named. Dollars are
 * summed exactly and served rounded to the micro-dollar.
 */
export type UsageFigures = {
  calls: number;
  /** Of the calls, those whose tokens are Cadre's estimate: stopped or timed out before the provider counted them, or cut off by a process that died. */
  estimatedCalls: number;
  inputTokens: number;
  outputTokens: number;
  /** Input tokens the provider served from its prompt cache (part of inputTokens). */
  cachedTokens: number;
  /** cachedTokens / inputTokens, 0 to 1 (0 with no input). */
  cachedShare: number;
  /** What the cached tokens saved against the input rate (priced models with a cached rate only; see savedByCache). */
  savedUsd: number;
  /** Input + output (cached tokens are part of input). */
  tokens: number;
  costUsd: number;
  unpricedTokens: number;
  unpricedModels: string[];
};

/**
 * Usage of no team: calls made for no agent, the person's own: drafting a new team's lead
 * instructions, and the meaning of what they search for on the knowledge page (no team's
 * budget pays for it, whichever team the search looks in).
 */
export const NO_TEAM_KEY = "drafting";
const NO_TEAM_NAME = "Drafting new teams and searching knowledge";
const NO_AGENT_NAME = "Drafting lead instructions and searching knowledge";
const DELETED_TEAMS_KEY = "deleted";
const REMOVED_AGENTS_KEY = "removed";

/** `price`: where the model's price comes from today (the price editor's row); its calls cost what their rows kept. */
type ModelUsage = {
  model: string;
  price: { matched: string; source: PriceSource } | null;
  figures: UsageFigures;
};
type AgentUsage = { agentId: string | null; agentName: string; role: string | null; figures: UsageFigures };
export type TeamUsage = {
  key: string;
  teamId: string | null;
  teamName: string;
  figures: UsageFigures;
  agents: AgentUsage[];
  models: ModelUsage[];
};
/** One UTC day: its totals (with the cache's part of its input) and each team's share (keyed by TeamUsage.key; teams with none are absent). */
type DayUsage = {
  day: string;
  tokens: number;
  costUsd: number;
  inputTokens: number;
  cachedTokens: number;
  cachedShare: number;
  savedUsd: number;
  byTeam: Record<string, { tokens: number; costUsd: number }>;
};
/** The finest grain: one UTC day × team × agent. */
type DayTeamAgentUsage = { day: string; teamKey: string; agentId: string | null; figures: UsageFigures };

export type UsageReport = {
  days: number;
  /** First and last UTC day (YYYY-MM-DD), today last. */
  from: string;
  to: string;
  series: DayUsage[];
  rows: DayTeamAgentUsage[];
  teams: TeamUsage[];
  models: ModelUsage[];
  totals: UsageFigures;
};

export const REPORT_DAYS_DEFAULT = 30;
export const REPORT_DAYS_MAX = 366;

function emptyFigures(): UsageFigures {
  return {
    calls: 0,
    estimatedCalls: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedTokens: 0,
    cachedShare: 0,
    savedUsd: 0,
    tokens: 0,
    costUsd: 0,
    unpricedTokens: 0,
    unpricedModels: [],
  };
}

/** Adds one model's tokens (their cost, null when it has no price, and what the cache saved) to some figures. */
function add(figures: UsageFigures, row: ModelTokens, cost: number | null, saved: number): void {
  figures.calls += row.calls;
  figures.estimatedCalls += row.estimatedCalls;
  figures.inputTokens += row.inputTokens;
  figures.outputTokens += row.outputTokens;
  figures.cachedTokens += row.cachedTokens;
  figures.cachedShare = cachedShare(figures);
  figures.savedUsd += saved;
  figures.tokens += row.inputTokens + row.outputTokens;
  if (cost === null) {
    figures.unpricedTokens += row.inputTokens + row.outputTokens;
    if (!figures.unpricedModels.includes(row.model)) figures.unpricedModels.push(row.model);
  } else {
    figures.costUsd += cost;
  }
}

/** Rounds the dollars of some figures to the micro-dollar (roundUsd), once they are summed. */
function roundDollars(figures: { costUsd: number; savedUsd?: number }): void {
  figures.costUsd = roundUsd(figures.costUsd);
  if (figures.savedUsd !== undefined) figures.savedUsd = roundUsd(figures.savedUsd);
}

function entry<K, V>(map: Map<K, V>, key: K, create: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = create();
    map.set(key, value);
  }
  return value;
}

/**
 * Usage and cost per UTC day, team and agent over the last `days` days (today included),
 * optionally of one team. Summed in SQL per day × team × agent × model × kept price (every day
 * present), priced here: at the price each call kept, the one in force when it was made, else
 * (rows from before rows kept prices, models that had none) with the table in force now.
 */
export async function usageReport(
  db: Db,
  options: { days?: number; teamId?: string | null; prices?: PriceTable } = {},
): Promise<UsageReport> {
  const days = options.days ?? REPORT_DAYS_DEFAULT;
  const [rows, prices] = await Promise.all([
    listUsageByDay(db, { days, teamId: options.teamId }),
    options.prices ?? loadPriceTable(db),
  ]);

  const series = new Map<string, DayUsage>();
  const cells = new Map<string, DayTeamAgentUsage>();
  const teams = new Map<string, TeamUsage & { agentMap: Map<string, AgentUsage>; modelMap: Map<string, ModelUsage> }>();
  const models = new Map<string, ModelUsage>();
  const totals = emptyFigures();

  for (const row of rows) {
    const day = entry(
      series,
      row.day,
      (): DayUsage => ({
        day: row.day,
        tokens: 0,
        costUsd: 0,
        inputTokens: 0,
        cachedTokens: 0,
        cachedShare: 0,
        savedUsd: 0,
        byTeam: {},
      }),
    );
    if (row.calls === 0) continue; // a day with no usage
    const match = prices.priceOf(row.model);
    const cost = prices.costOf(row.model, row, row.price);
    const saved = prices.savedOf(row.model, row, row.price);
    const price = match && { matched: match.matched, source: match.source };
    // A deleted team's rows keep its id but find no name; a removed agent's likewise. Each is
    // one entry (no link), so the totals keep what they cost.
    const teamGone = row.teamId !== null && row.teamName === null;
    const teamKey = row.teamId === null ? NO_TEAM_KEY : teamGone ? DELETED_TEAMS_KEY : row.teamId;
    const agentGone = row.agentId !== null && row.agentName === null;

    day.tokens += row.inputTokens + row.outputTokens;
    day.costUsd += cost ?? 0;
    day.inputTokens += row.inputTokens;
    day.cachedTokens += row.cachedTokens;
    day.cachedShare = cachedShare(day);
    day.savedUsd += saved;
    const share = day.byTeam[teamKey] ?? { tokens: 0, costUsd: 0 };
    day.byTeam[teamKey] = share;
    share.tokens += row.inputTokens + row.outputTokens;
    share.costUsd += cost ?? 0;

    const agentId = agentGone ? null : row.agentId;
    const agentKey = row.agentId === null ? NO_TEAM_KEY : agentGone ? REMOVED_AGENTS_KEY : row.agentId;
    add(
      entry(cells, `${row.day} ${teamKey} ${agentKey}`, () => ({
        day: row.day,
        teamKey,
        agentId,
        figures: emptyFigures(),
      })).figures,
      row,
      cost,
      saved,
    );

    const team = entry(teams, teamKey, () => ({
      key: teamKey,
      teamId: teamGone ? null : row.teamId,
      teamName: row.teamName ?? (teamGone ? DELETED_TEAMS : NO_TEAM_NAME),
      figures: emptyFigures(),
      agents: [],
      models: [],
      agentMap: new Map(),
      modelMap: new Map(),
    }));
    add(team.figures, row, cost, saved);
    add(
      entry(team.agentMap, agentKey, () => ({
        agentId,
        agentName: row.agentName ?? (agentGone ? REMOVED_AGENTS : NO_AGENT_NAME),
        role: row.agentRole,
        figures: emptyFigures(),
      })).figures,
      row,
      cost,
      saved,
    );
    add(
      entry(team.modelMap, row.model, () => ({ model: row.model, price, figures: emptyFigures() })).figures,
      row,
      cost,
      saved,
    );
    add(
      entry(models, row.model, () => ({ model: row.model, price, figures: emptyFigures() })).figures,
      row,
      cost,
      saved,
    );
    add(totals, row, cost, saved);
  }

  // Summed exactly, served rounded to the micro-dollar.
  for (const day of series.values()) {
    roundDollars(day);
    for (const share of Object.values(day.byTeam)) roundDollars(share);
  }
  for (const cell of cells.values()) roundDollars(cell.figures);
  for (const team of teams.values()) {
    roundDollars(team.figures);
    for (const agent of team.agentMap.values()) roundDollars(agent.figures);
    for (const model of team.modelMap.values()) roundDollars(model.figures);
  }
  for (const model of models.values()) roundDollars(model.figures);
  roundDollars(totals);

  const byTokens = <T extends { figures: UsageFigures }>(items: Iterable<T>) =>
    [...items].sort((a, b) => b.figures.tokens - a.figures.tokens);
  const seriesList = [...series.values()];
  return {
    days,
    from: seriesList[0]?.day ?? "",
    to: seriesList.at(-1)?.day ?? "",
    series: seriesList,
    rows: [...cells.values()],
    teams: byTokens(teams.values()).map(({ agentMap, modelMap, ...team }) => ({
      ...team,
      agents: byTokens(agentMap.values()),
      models: byTokens(modelMap.values()),
    })),
    models: byTokens(models.values()),
    totals,
  };
}
