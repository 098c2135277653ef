import Link from "next/link";
import { teamBudgets } from "@/lib/domain/budgets";
import { db } from "@/lib/db/client";
import type { Team } from "@/lib/db/schema";
import { env } from "@/lib/env";
import { describeCache, formatTokens, formatUsd } from "@/lib/usage/format";
import { usageReport } from "@/lib/usage/report";
import { loadPriceTable, teamSpendToday, type Spend } from "@/lib/usage/spend";
import { TeamBudgetForm } from "./team-budget-form";
import { UsageChart } from "./usage-chart";

/** Spent against a limit: the words, and a bar (hidden from screen readers, which have the words). */
function SpendAgainst({
  label,
  spent,
  limit,
  format,
  note,
  cache = null,
}: {
  label: string;
  spent: number;
  limit: number | null;
  format: (value: number) => string;
  note: string;
  /** The cache's part, in words, beside a cost. */
  cache?: string | null;
}) {
  const share = limit === null ? null : Math.min(1, spent / limit);
  return (
    <div className="budget-meter">
      <div className="budget-meter-head">
        <span className="budget-meter-label">{label}</span>
        <span className="budget-meter-figure">
          {format(spent)} {limit === null ? "" : <span className="meta">of {format(limit)}</span>}
        </span>
      </div>
      {share !== null && (
        <div
          className={
            share >= 1 ? "budget-bar budget-bar-over" : share >= 0.8 ? "budget-bar budget-bar-near" : "budget-bar"
          }
          aria-hidden="true"
        >
          <span style={{ width: `${Math.max(share * 100, spent > 0 ? 1 : 0)}%` }} />
        </div>
      )}
      {cache && <span className="budget-meter-cache">{cache}</span>}
      <span className="hint">{note}</span>
    </div>
  );
}

/** Today's tokens and cost against the team's budgets (its own, or the environment's default). */
function SpendToday({ team, spend }: { team: Team; spend: Spend }) {
  const budgets = teamBudgets(team, { teamDailyTokenBudget: env().TEAM_DAILY_TOKEN_BUDGET });
  return (
    <div className="budget-today">
      <SpendAgainst
        label="Tokens today"
        spent={spend.tokens}
        limit={budgets.tokens.limit}
        format={formatTokens}
        note={
          budgets.tokens.source === "team"
            ? "The team's own daily budget."
            : "The default daily budget (TEAM_DAILY_TOKEN_BUDGET)."
        }
      />
      <SpendAgainst
        label="Cost today"
        spent={spend.costUsd}
        limit={budgets.costUsd}
        format={formatUsd}
        note={budgets.costUsd === null ? "No cost cap." : "The team's own daily cost budget."}
        cache={spend.cachedTokens > 0 ? describeCache(spend) : null}
      />
    </div>
  );
}

function overBudget(team: Team, spend: Spend): boolean {
  const budgets = teamBudgets(team, { teamDailyTokenBudget: env().TEAM_DAILY_TOKEN_BUDGET });
  return spend.tokens >= budgets.tokens.limit || (budgets.costUsd !== null && spend.costUsd >= budgets.costUsd);
}

/** Calls the provider did not count (cut off, or a server that sends no usage): their tokens are an estimate. */
function Estimated({ spend }: { spend: Spend }) {
  return spend.estimatedCalls > 0 ? (
    <p className="hint">
      {formatTokens(spend.estimatedCalls)} of today&apos;s model calls {spend.estimatedCalls === 1 ? "was" : "were"} not
      counted by the model server: {spend.estimatedCalls === 1 ? "its" : "their"} tokens are Cadre&apos;s estimate
      (estimated), and the budget counts them.
    </p>
  ) : null;
}

function Unpriced({ spend }: { spend: Spend }) {
  return spend.unpricedModels.length > 0 ? (
    <p className="hint">
      No price for {spend.unpricedModels.join(", ")}: its calls count toward tokens only, not cost.{" "}
      <Link href="/usage#prices">Set a price</Link>
    </p>
  ) : null;
}

/**
 * The Overview's "Spending": today against the budgets, and the last 30 days as a small chart;
 * the budgets themselves are set on Settings.
 */
export async function TeamSpendingSection({ team }: { team: Team }) {
  const prices = await loadPriceTable(db());
  const [spend, report] = await Promise.all([
    teamSpendToday(db(), team.id, prices),
    usageReport(db(), { days: 30, teamId: team.id, prices }),
  ]);
  return (
    <section aria-labelledby="spending-heading" className="section">
      <h2 id="spending-heading">Spending</h2>
      {overBudget(team, spend) && (
        <p className="notice">
          This team has spent today&apos;s budget: its agents stop before their next model call, and their tasks wait
          (nothing fails) until tomorrow (UTC) or until you raise the budget in Settings.
        </p>
      )}
      <SpendToday team={team} spend={spend} />
      <Estimated spend={spend} />
      <Unpriced spend={spend} />
      {report.totals.calls === 0 ? (
        <p className="hint">
          No model calls in the last 30 days yet: the chart appears once the team&apos;s agents have worked.
        </p>
      ) : (
        <UsageChart
          compact
          label={`Last 30 days (UTC): ${formatTokens(report.totals.tokens)} tokens, ${formatUsd(report.totals.costUsd)}${report.totals.cachedTokens > 0 ? `, ${describeCache(report.totals)}` : ""}`}
          days={report.series}
          teams={[{ key: team.id, name: team.name }]}
          unpricedTokens={report.totals.unpricedTokens}
        />
      )}
      <p className="meta-link">
        <Link href={`/teams/${team.id}/settings#usage-budget-heading`}>Daily budgets</Link> ·{" "}
        <Link href={`/usage?teamId=${team.id}`}>Usage per agent and day</Link>
      </p>
    </section>
  );
}

/**
 * Settings' "Usage and budget": today's spending against the team's budgets (its own, or the
 * environment's default) and the form that sets them; the 30-day chart is on the Overview.
 */
export async function TeamUsageSection({ team }: { team: Team }) {
  const spend = await teamSpendToday(db(), team.id);
  return (
    <section aria-labelledby="usage-budget-heading" className="section">
      <h2 id="usage-budget-heading">Usage and budget</h2>
      {overBudget(team, spend) && (
        <p className="notice">
          This team has spent today&apos;s budget: its agents stop before their next model call, and their tasks wait
          (nothing fails) until tomorrow (UTC) or until you raise the budget below.
        </p>
      )}
      <SpendToday team={team} spend={spend} />
      <Estimated spend={spend} />
      <Unpriced spend={spend} />
      <TeamBudgetForm
        // A budget changed elsewhere (another tab, the API) starts the form afresh.
        key={`${team.dailyTokenBudget}:${team.dailyCostBudgetUsd}`}
        teamId={team.id}
        dailyTokenBudget={team.dailyTokenBudget}
        dailyCostBudgetUsd={team.dailyCostBudgetUsd}
        defaultTokenBudget={env().TEAM_DAILY_TOKEN_BUDGET}
      />
      <p className="meta-link">
        <Link href={`/usage?teamId=${team.id}`}>Usage per agent and day, and the price table</Link>
      </p>
    </section>
  );
}
