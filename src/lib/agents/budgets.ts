import { getTeamTokensToday } from "@/lib/db/queries/usage";
import type { EngineDeps } from "./engine-config";

/** A session or team spent its token budget: the session stops and says why. */
export class BudgetExceeded extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BudgetExceeded";
  }
}

/** What a session's budget checks need to know and remember between calls. */
export type BudgetState = {
  team: { id: string; name: string };
  /** Input + output tokens this session has spent. */
  tokens: number;
  /** The team's tokens today as last read, and this session's total at that moment. */
  teamTokens?: { total: number; readAt: number; sessionTokensAtRead: number };
};

const TEAM_TOKENS_TTL_MS = 30_000;

/**
 * The team's tokens today: read from the usage rows at most every 30 s, with this
 * session's own spending since that read added, so a tool round needs no query for it.
 * Other sessions of the team are counted at the next read.
 */
async function teamTokensToday(deps: EngineDeps, state: BudgetState): Promise<number> {
  const cached = state.teamTokens;
  if (cached && Date.now() - cached.readAt < TEAM_TOKENS_TTL_MS) return cached.total + (state.tokens - cached.sessionTokensAtRead);
  const total = await getTeamTokensToday(deps.db, state.team.id);
  state.teamTokens = { total, readAt: Date.now(), sessionTokensAtRead: state.tokens };
  return total;
}

/** Refuses the next model call when the session or its team has spent its tokens. */
export async function checkBudgets(deps: EngineDeps, state: BudgetState): Promise<void> {
  const { sessionTokenBudget, teamDailyTokenBudget } = deps.config;
  if (state.tokens >= sessionTokenBudget) {
    throw new BudgetExceeded(`this session used ${state.tokens} tokens, over its budget of ${sessionTokenBudget} (SESSION_TOKEN_BUDGET)`);
  }
  const today = await teamTokensToday(deps, state);
  if (today >= teamDailyTokenBudget) {
    throw new BudgetExceeded(
      `the team "${state.team.name}" used ${today} tokens today, over its daily budget of ${teamDailyTokenBudget} (TEAM_DAILY_TOKEN_BUDGET); it resumes tomorrow`,
    );
  }
}
