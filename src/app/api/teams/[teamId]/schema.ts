import { z } from "zod";

/** The largest daily token budget the column holds (integer). */
const MAX_TOKEN_BUDGET = 2_147_483_647;
/** The largest daily cost budget taken, in US dollars (the column is numeric(12,4)). */
const MAX_COST_BUDGET_USD = 10_000_000;

export const updateTeamBody = z
  .strictObject({
    name: z.string().trim().min(1).max(120).optional(),
    mission: z.string().trim().min(1).max(4000).optional(),
    status: z.enum(["active", "paused"]).optional(),
    /** Tokens (input + output) per UTC day; null: back to TEAM_DAILY_TOKEN_BUDGET. */
    dailyTokenBudget: z
      .number({ error: "dailyTokenBudget must be a whole number of tokens, or null for the default." })
      .int("dailyTokenBudget must be a whole number of tokens.")
      .positive("dailyTokenBudget must be more than 0 (null: the default, TEAM_DAILY_TOKEN_BUDGET).")
      .max(MAX_TOKEN_BUDGET, `dailyTokenBudget is at most ${MAX_TOKEN_BUDGET.toLocaleString("en-US")}.`)
      .nullable()
      .optional(),
    /** US dollars per UTC day; null: no cost cap. */
    dailyCostBudgetUsd: z
      .number({ error: "dailyCostBudgetUsd must be a number of US dollars, or null for no cost cap." })
      // The column keeps four decimals: anything below a cent would round towards 0, which is no budget.
      .min(0.01, "dailyCostBudgetUsd must be at least 0.01 US dollars (null: no cost cap).")
      .max(MAX_COST_BUDGET_USD, `dailyCostBudgetUsd is at most ${MAX_COST_BUDGET_USD.toLocaleString("en-US")}.`)
      .nullable()
      .optional(),
  })
  .refine(
    (body) => Object.keys(body).length > 0,
    "Nothing to change: send name, mission, status, dailyTokenBudget or dailyCostBudgetUsd.",
  );
