"use client";

import { useMemo, useState } from "react";
import { Bar, BarChart, CartesianGrid, Legend, Tooltip, XAxis, YAxis } from "recharts";
import { formatTokens, formatTokensShort, formatUsd } from "@/lib/usage/format";

/** One UTC day: each team's tokens and cost, keyed by the team's key (see UsageReport.series). */
export type ChartDay = { day: string; byTeam: Record<string, { tokens: number; costUsd: number }> };
export type ChartTeam = { key: string; name: string };
type Metric = "tokens" | "costUsd";

// Colours that read on the light and the dark background alike; teams beyond them cycle.
const PALETTE = ["#6366f1", "#0ea5e9", "#f59e0b", "#10b981", "#ec4899", "#8b5cf6", "#14b8a6", "#ef4444"];
const NO_TEAM_COLOUR = "#a8a29e";

/** "Nov 25" for 2025-11-25: the day is a UTC day, so it is shown as one. */
function dayLabel(day: string): string {
  return new Date(`${day}T00:00:00Z`).toLocaleDateString("en-US", { month: "short", day: "numeric", timeZone: "UTC" });
}

/**
 * Tokens or cost per UTC day, one stacked bar per day with a slice per team. `compact`: the
 * team page's small chart (one team, no legend). Cost leaves out models without a price, and
 * says so when there are any (`unpricedTokens`).
 */
export function UsageChart({
  days,
  teams,
  unpricedTokens = 0,
  compact = false,
  label,
}: {
  days: ChartDay[];
  teams: ChartTeam[];
  unpricedTokens?: number;
  compact?: boolean;
  label: string;
}) {
  const [metric, setMetric] = useState<Metric>("tokens");
  const data = useMemo(
    () =>
      days.map((day) => {
        const point: Record<string, string | number> = { day: day.day, label: dayLabel(day.day) };
        for (const team of teams) point[team.key] = day.byTeam[team.key]?.[metric] ?? 0;
        return point;
      }),
    [days, teams, metric],
  );
  const format = metric === "tokens" ? formatTokens : formatUsd;
  const formatAxis =
    metric === "tokens" ? formatTokensShort : (value: number) => (value === 0 ? "$0" : formatUsd(value));
  const colour = (key: string, index: number) =>
    key === "drafting" ? NO_TEAM_COLOUR : PALETTE[index % PALETTE.length]!;

  return (
    <figure className={compact ? "usage-chart usage-chart-compact" : "usage-chart"}>
      <div className="usage-chart-head">
        <figcaption className="usage-chart-caption">{label}</figcaption>
        <fieldset className="segmented" aria-label="Show">
          <button
            type="button"
            className="segmented-option"
            aria-pressed={metric === "tokens"}
            onClick={() => setMetric("tokens")}
          >
            Tokens
          </button>
          <button
            type="button"
            className="segmented-option"
            aria-pressed={metric === "costUsd"}
            onClick={() => setMetric("costUsd")}
          >
            Cost
          </button>
        </fieldset>
      </div>
      <div className="usage-chart-plot">
        <BarChart
          responsive
          style={{ width: "100%", height: "100%" }}
          data={data}
          margin={{ top: 8, right: 8, bottom: 0, left: 0 }}
          accessibilityLayer
        >
          <CartesianGrid vertical={false} stroke="var(--border)" />
          <XAxis
            dataKey="label"
            tickLine={false}
            axisLine={{ stroke: "var(--border)" }}
            tick={{ fill: "var(--muted)", fontSize: 12 }}
            minTickGap={12}
          />
          <YAxis
            tickFormatter={formatAxis}
            tickLine={false}
            axisLine={false}
            tick={{ fill: "var(--muted)", fontSize: 12 }}
            width={metric === "tokens" ? 44 : 58}
            allowDecimals={metric !== "tokens"}
          />
          <Tooltip
            cursor={{ fill: "var(--surface-2)" }}
            contentStyle={{
              background: "var(--surface)",
              border: "1px solid var(--border)",
              borderRadius: 8,
              fontSize: 13,
            }}
            labelStyle={{ color: "var(--fg)", fontWeight: 600 }}
            formatter={(value, name) => [format(Number(value)), name]}
          />
          {!compact && teams.length > 1 && <Legend wrapperStyle={{ fontSize: 12 }} />}
          {teams.map((team, index) => (
            <Bar
              key={team.key}
              dataKey={team.key}
              name={team.name}
              stackId="day"
              fill={colour(team.key, index)}
              isAnimationActive={false}
            />
          ))}
        </BarChart>
      </div>
      {metric === "costUsd" && unpricedTokens > 0 && (
        <p className="hint">Cost leaves out {formatTokens(unpricedTokens)} tokens of models without a price.</p>
      )}
    </figure>
  );
}
