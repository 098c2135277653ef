import type { Metadata } from "next";
import Link from "next/link";
import { CachedInputStat } from "@/components/cached-input-stat";
import { LiveRefresh } from "@/components/live-events";
import { PriceTableEditor } from "@/components/price-table";
import { EmptyState } from "@/components/ui";
import { UsageChart } from "@/components/usage-chart";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { listModelPrices } from "@/lib/db/queries/model-prices";
import { listTeams } from "@/lib/db/queries/teams";
import { isUuid } from "@/lib/util/ids";
import {
  describeCache,
  formatShare,
  formatTokens,
  formatTokensShort,
  formatUsd,
  type CacheFigures,
} from "@/lib/usage/format";
import { PriceTable, priceList } from "@/lib/usage/prices";
import { usageReport, type TeamUsage, type UsageFigures, type UsageReport } from "@/lib/usage/report";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Usage" };

type Props = { searchParams: Promise<Record<string, string | string[] | undefined>> };

const DAYS = 30;
const one = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value)?.trim() ?? "";

/** A cost cell: the priced part, and how many tokens had no price to go by. */
function Cost({ figures }: { figures: UsageFigures }) {
  if (figures.unpricedTokens === figures.tokens && figures.tokens > 0) return <span className="meta">tokens only</span>;
  return (
    <>
      {formatUsd(figures.costUsd)}
      {figures.unpricedTokens > 0 && (
        <span className="meta cost-unpriced">+ {formatTokensShort(figures.unpricedTokens)} tokens unpriced</span>
      )}
    </>
  );
}

/** The share of input cached and what it saved, under a heading that says "Input cached"; "none" quietly. */
function CacheCell({ figures }: { figures: CacheFigures }) {
  const words = describeCache(figures, { short: true });
  return <td className="num">{figures.cachedTokens > 0 ? words : <span className="meta">{words ?? "—"}</span>}</td>;
}

/** Whether the period had any cached input: with none (the offline model, a provider without a cache), the column is left out. */
type CacheColumn = { cache: boolean };

function FigureCells({ figures, cache }: { figures: UsageFigures } & CacheColumn) {
  return (
    <>
      <td className="num">{formatTokens(figures.tokens)}</td>
      <td className="num">
        <Cost figures={figures} />
      </td>
      {cache && <CacheCell figures={figures} />}
      <td className="num">{formatTokens(figures.calls)}</td>
      <td className="num">{formatTokens(figures.inputTokens)}</td>
      <td className="num">{formatTokens(figures.outputTokens)}</td>
    </>
  );
}

// Tokens and cost first: on a phone they are what shows before the table scrolls sideways.
const figureHeadings = (cache: boolean) => [
  "Tokens",
  "Cost",
  ...(cache ? ["Input cached"] : []),
  "Calls",
  "Input",
  "Output",
];

/** One team's agents over the period; calls for no agent (drafting) have a row of their own. */
function TeamTable({ team, days, cache }: { team: TeamUsage; days: number } & CacheColumn) {
  const headingId = `usage-team-${team.key}`;
  return (
    <section aria-labelledby={headingId} className="subsection usage-team">
      <h3 id={headingId}>
        {team.teamId ? <Link href={`/teams/${team.teamId}`}>{team.teamName}</Link> : team.teamName}
      </h3>
      {/* The team's cache in words, above its table: on a phone the table's column is off to the side. */}
      {cache && <p className="meta usage-team-cache">{describeCache(team.figures)}</p>}
      <div className="table-scroll">
        <table className="usage-table">
          <caption className="visually-hidden">
            Usage of {team.teamName} per agent, last {days} days
          </caption>
          <thead>
            <tr>
              <th scope="col">Agent</th>
              {figureHeadings(cache).map((heading) => (
                <th key={heading} scope="col" className="num">
                  {heading}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {team.agents.map((agent) => (
              <tr key={agent.agentId ?? agent.agentName}>
                <th scope="row">
                  {agent.agentId ? <Link href={`/agents/${agent.agentId}`}>{agent.agentName}</Link> : agent.agentName}
                  {agent.role === "lead" && <span className="pill usage-role">lead</span>}
                </th>
                <FigureCells figures={agent.figures} cache={cache} />
              </tr>
            ))}
          </tbody>
          {team.agents.length > 1 && (
            <tfoot>
              <tr>
                <th scope="row">Team total</th>
                <FigureCells figures={team.figures} cache={cache} />
              </tr>
            </tfoot>
          )}
        </table>
      </div>
      {team.figures.unpricedModels.map((model) => (
        <p key={model} className="hint unpriced-note">
          No price for model <code>{model}</code> — tokens only. <a href="#prices">Set a price</a>
        </p>
      ))}
    </section>
  );
}

function ModelTable({ report, cache }: { report: UsageReport } & CacheColumn) {
  return (
    <div className="table-scroll">
      <table className="usage-table">
        <caption className="visually-hidden">Usage per model, last {report.days} days</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Priced as</th>
            {figureHeadings(cache).map((heading) => (
              <th key={heading} scope="col" className="num">
                {heading}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {report.models.map((model) => (
            <tr key={model.model}>
              <th scope="row">
                <code>{model.model}</code>
              </th>
              <td>
                {model.price ? (
                  <>
                    {model.price.matched}
                    <span className="meta"> ({model.price.source === "custom" ? "your price" : "built-in"})</span>
                  </>
                ) : (
                  <span className="meta">no price — tokens only</span>
                )}
              </td>
              <FigureCells figures={model.figures} cache={cache} />
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function DayTable({ report, cache }: { report: UsageReport } & CacheColumn) {
  return (
    <details className="usage-days">
      <summary>Per day ({report.days} UTC days)</summary>
      <div className="table-scroll">
        <table className="usage-table">
          <caption className="visually-hidden">Tokens, cost{cache ? " and input cached" : ""} per UTC day</caption>
          <thead>
            <tr>
              <th scope="col">Day (UTC)</th>
              <th scope="col" className="num">
                Tokens
              </th>
              <th scope="col" className="num">
                Cost
              </th>
              {cache && (
                <th scope="col" className="num">
                  Input cached
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {[...report.series].reverse().map((day) => (
              <tr key={day.day}>
                <th scope="row">{day.day}</th>
                <td className="num">{formatTokens(day.tokens)}</td>
                <td className="num">{formatUsd(day.costUsd)}</td>
                {cache && <CacheCell figures={day} />}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
}

export default async function UsagePage({ searchParams }: Props) {
  await requirePageSession();
  const params = await searchParams;
  const teams = await listTeams(db());
  const teamId =
    teams.some((team) => team.id === one(params.teamId)) && isUuid(one(params.teamId)) ? one(params.teamId) : null;
  const customPrices = await listModelPrices(db());
  const report = await usageReport(db(), { days: DAYS, teamId, prices: new PriceTable(customPrices) });
  const chosen = teams.find((team) => team.id === teamId);
  const { totals } = report;
  const cache = totals.cachedTokens > 0;

  return (
    <div className="page">
      <LiveRefresh tables={["work_sessions", "teams", "agents"]} />
      <header className="page-header">
        <div>
          <h1>Usage and cost</h1>
          <p className="lede">
            Tokens and their cost over the last {DAYS} days (UTC days), per team, agent and day. Each call costs what
            its model&apos;s price was when it was made: a price you change below applies to the calls after it (and to
            past calls of a model that had no price).
          </p>
        </div>
      </header>

      {teams.length > 0 && (
        <form className="filters" action="/usage" aria-label="Filter usage">
          <label className="field">
            <span>Team</span>
            <select name="teamId" defaultValue={teamId ?? ""}>
              <option value="">All teams</option>
              {teams.map((team) => (
                <option key={team.id} value={team.id}>
                  {team.name}
                </option>
              ))}
            </select>
          </label>
          <div className="filter-actions">
            <button type="submit" className="button button-primary">
              Show
            </button>
            {chosen && (
              <Link href="/usage" className="button button-quiet">
                All teams
              </Link>
            )}
          </div>
        </form>
      )}

      {totals.calls === 0 ? (
        <EmptyState title={chosen ? `No usage for ${chosen.name} yet` : "No usage yet"}>
          <p>Every model call your agents make is counted here: chat, work, compaction, knowledge and briefings.</p>
          <p>Give a team some work and come back to see its tokens and what they cost.</p>
        </EmptyState>
      ) : (
        <>
          <dl className="stats" aria-label="Totals">
            <div>
              <dt>Tokens</dt>
              <dd>{formatTokens(totals.tokens)}</dd>
            </div>
            <div>
              <dt>Cost</dt>
              <dd>{formatUsd(totals.costUsd)}</dd>
            </div>
            <div>
              <dt>Model calls</dt>
              <dd>{formatTokens(totals.calls)}</dd>
            </div>
            <CachedInputStat figures={totals} />
          </dl>
          {cache && (
            <p className="hint cache-explained">
              <strong>Cached</strong> input is input the provider had already seen at the start of a recent request —
              the agent&apos;s instructions and the conversation so far — and charges less for. Over these {DAYS} days{" "}
              {formatShare(totals.cachedShare)} of all input was cached
              {totals.savedUsd > 0 ? (
                <>, which saved {formatUsd(totals.savedUsd)} against the full input price.</>
              ) : (
                "."
              )}
            </p>
          )}
          {totals.estimatedCalls > 0 && (
            <p className="hint estimated-summary">
              {formatTokens(totals.estimatedCalls)}{" "}
              {totals.estimatedCalls === 1 ? "model call was" : "model calls were"} not counted by the provider: cut off
              (stopped, timed out, or its worker died mid-call), or answered by a server that sends no usage figures.
              They are counted with Cadre&apos;s estimate, budgets included: the input that was sent and the output
              received.
            </p>
          )}
          {totals.unpricedModels.length > 0 && (
            <p className="notice unpriced-summary">
              No price for{" "}
              {totals.unpricedModels.map((model, index) => (
                <span key={model}>
                  {index > 0 && ", "}
                  <code>{model}</code>
                </span>
              ))}
              : {formatTokens(totals.unpricedTokens)} tokens are counted without a cost.{" "}
              <a href="#prices">Set a price</a>
            </p>
          )}

          <section aria-labelledby="chart-heading" className="section">
            <h2 id="chart-heading">Per day</h2>
            <UsageChart
              label={chosen ? `${chosen.name}, last ${DAYS} days` : `All teams, last ${DAYS} days`}
              days={report.series}
              teams={report.teams.map((team) => ({ key: team.key, name: team.teamName }))}
              unpricedTokens={totals.unpricedTokens}
            />
            <DayTable report={report} cache={cache} />
          </section>

          <section aria-labelledby="teams-heading" className="section">
            <h2 id="teams-heading">Per team and agent</h2>
            {report.teams.map((team) => (
              <TeamTable key={team.key} team={team} days={DAYS} cache={cache} />
            ))}
          </section>

          <section aria-labelledby="models-heading" className="section">
            <h2 id="models-heading">Per model</h2>
            <ModelTable report={report} cache={cache} />
          </section>
        </>
      )}

      <section aria-labelledby="prices-heading" className="section" id="prices">
        <h2 id="prices-heading">Price table</h2>
        <p className="hint">
          US dollars per million tokens. The built-in prices are OpenAI&apos;s list prices (August 2025); yours override
          them and price other models. A dated snapshot (gpt-4o-2024-08-06) or a provider-prefixed id (openai/gpt-4o)
          takes its model&apos;s price; a model with no price counts tokens only.
        </p>
        <PriceTableEditor
          entries={priceList(customPrices)}
          usedModels={report.models.flatMap((model) => (model.price ? [model.price.matched] : []))}
          unpriced={totals.unpricedModels}
        />
      </section>
    </div>
  );
}
