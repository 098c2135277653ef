// The eval's table, and how a run compares with an earlier report (--baseline).
import type { EvalReport } from "./eval";
import type { MissionRun } from "./run-mission";

type Direction = "higher" | "lower" | "neutral";

type Metric = {
  key: string;
  title: string;
  value: (run: MissionRun) => number;
  show: (run: MissionRun) => string;
  /** Which way is better; neutral: a change is shown, not judged. */
  better: Direction;
  /** Relative change below which a measure that varies from run to run counts as the same (wall time, tokens). */
  tolerance?: number;
};

const tokens = (value: number) => (value >= 10_000 ? `${(value / 1000).toFixed(1)}k` : String(value));

const METRICS: readonly Metric[] = [
  {
    key: "sourced",
    title: "sourced",
    value: (run) => run.score.sourced,
    show: (run) => `${run.score.sourced}/${run.score.findings.length}`,
    better: "higher",
  },
  {
    key: "found",
    title: "found",
    value: (run) => run.score.found,
    show: (run) => `${run.score.found}/${run.score.findings.length}`,
    better: "higher",
  },
  {
    key: "decoys",
    title: "decoys",
    value: (run) => run.score.repeated,
    show: (run) => `${run.score.repeated}/${run.score.decoys.length}`,
    better: "lower",
  },
  {
    key: "score",
    title: "score",
    value: (run) => run.score.score,
    show: (run) => String(run.score.score),
    better: "higher",
  },
  {
    key: "judge",
    title: "judge",
    // Not judged (offline, --no-judge): nothing to compare.
    value: (run) => run.judge?.quality ?? Number.NaN,
    show: (run) => (run.judge ? `${run.judge.quality}/5` : "-"),
    better: "higher",
  },
  {
    key: "input",
    title: "tokens in (cached)",
    value: (run) => run.usage.inputTokens,
    show: (run) => `${tokens(run.usage.inputTokens)} (${tokens(run.usage.cachedTokens)})`,
    better: "lower",
    tolerance: 0.1,
  },
  {
    key: "output",
    title: "out",
    value: (run) => run.usage.outputTokens,
    show: (run) => tokens(run.usage.outputTokens),
    better: "lower",
    tolerance: 0.1,
  },
  {
    key: "cost",
    title: "cost",
    value: (run) => run.usage.costUsd,
    show: (run) => (run.usage.unpricedModels.length ? "unpriced" : `$${run.usage.costUsd.toFixed(4)}`),
    better: "lower",
    tolerance: 0.1,
  },
  {
    key: "wall",
    title: "wall s",
    value: (run) => run.wallSeconds,
    show: (run) => run.wallSeconds.toFixed(1),
    better: "lower",
    tolerance: 0.15,
  },
  {
    key: "toolErrors",
    title: "tool errors",
    value: (run) => run.toolErrors,
    show: (run) => String(run.toolErrors),
    better: "lower",
  },
  {
    key: "questions",
    title: "questions",
    value: (run) => run.questionsAsked,
    show: (run) => String(run.questionsAsked),
    better: "neutral",
  },
];

export type Change = {
  mission: string;
  metric: string;
  from: number;
  to: number;
  verdict: "better" | "worse" | "changed";
};

/** How `run` differs from the same mission in `baseline`, metric by metric (nothing for a mission the baseline lacks). */
function compareRun(run: MissionRun, baseline: MissionRun | undefined): Change[] {
  if (!baseline) return [];
  return METRICS.flatMap((metric) => {
    const from = metric.value(baseline);
    const to = metric.value(run);
    const scale = Math.max(Math.abs(from), Math.abs(to));
    if (
      Number.isNaN(from) ||
      Number.isNaN(to) ||
      from === to ||
      (metric.tolerance && scale > 0 && Math.abs(to - from) / scale < metric.tolerance)
    )
      return [];
    const verdict: Change["verdict"] =
      metric.better === "neutral" ? "changed" : to > from === (metric.better === "higher") ? "better" : "worse";
    return [{ mission: run.mission, metric: metric.key, from, to, verdict }];
  });
}

export function compareReports(report: EvalReport, baseline: EvalReport): Change[] {
  return report.missions.flatMap((run) =>
    compareRun(
      run,
      baseline.missions.find((earlier) => earlier.mission === run.mission),
    ),
  );
}

const MARK = { better: "▲ better", worse: "▼ worse", changed: "≠" } as const;

/** A Markdown table, one row per mission, each cell marked where it differs from the baseline. */
export function renderTable(report: EvalReport, baseline?: EvalReport): string {
  const header = ["mission", ...METRICS.map((metric) => metric.title), "status"];
  const rows = report.missions.map((run) => {
    const earlier = baseline?.missions.find((each) => each.mission === run.mission);
    const changes = compareRun(run, earlier);
    return [
      run.mission,
      ...METRICS.map((metric) => {
        const change = changes.find((each) => each.metric === metric.key);
        if (!change) return metric.show(run);
        return `${metric.show(run)} ${MARK[change.verdict]} (was ${metric.show(earlier!)})`;
      }),
      run.status,
    ];
  });
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

/** One line on the whole run: its findings, decoys and score, and against the baseline how many measures moved which way. */
export function summaryLine(report: EvalReport, baseline?: EvalReport): string {
  const sum = (pick: (run: MissionRun) => number) => report.missions.reduce((total, run) => total + pick(run), 0);
  const findings = sum((run) => run.score.findings.length);
  const decoys = sum((run) => run.score.decoys.length);
  const meanScore = Math.round(sum((run) => run.score.score) / Math.max(1, report.missions.length));
  const parts = [
    `${report.model}${report.break ? ` (broken: ${report.break})` : ""}${report.serverMisbehaves ? ` (server misbehaves: ${report.serverMisbehaves})` : ""}`,
    `findings ${sum((run) => run.score.sourced)}/${findings} sourced, ${sum((run) => run.score.found)}/${findings} found`,
    `decoys repeated ${sum((run) => run.score.repeated)}/${decoys}`,
    `mean score ${meanScore}`,
    `$${sum((run) => run.usage.costUsd).toFixed(4)}`,
  ];
  if (baseline) {
    const changes = compareReports(report, baseline);
    const count = (verdict: Change["verdict"]) => changes.filter((change) => change.verdict === verdict).length;
    parts.push(`against the baseline: ${count("better")} better, ${count("worse")} worse, ${count("changed")} changed`);
  }
  return parts.join(" · ");
}

/**
 * One row per run of `--server-misbehaves all` (and the baseline's first, when given): each
 * mission's score, and over all missions the sourced findings, decoys repeated, the mean score
 * and how many missions ended in a briefing. The table BENCHMARKS.md records.
 */
export function renderModesTable(reports: readonly EvalReport[], baseline?: EvalReport): string {
  const missions = reports[0]?.missions.map((run) => run.mission) ?? [];
  const row = (name: string, report: EvalReport) => {
    const runs = missions.flatMap((id) => report.missions.filter((run) => run.mission === id));
    const sum = (pick: (run: MissionRun) => number) => runs.reduce((total, run) => total + pick(run), 0);
    return [
      name,
      ...missions.map((id) => String(report.missions.find((run) => run.mission === id)?.score.score ?? "-")),
      `${sum((run) => run.score.sourced)}/${sum((run) => run.score.findings.length)}`,
      `${sum((run) => run.score.repeated)}/${sum((run) => run.score.decoys.length)}`,
      String(Math.round(sum((run) => run.score.score) / Math.max(1, runs.length))),
      `${runs.filter((run) => run.status === "briefed").length}/${runs.length}`,
      String(sum((run) => run.usage.calls)),
    ];
  };
  const header = ["server", ...missions, "sourced", "decoys", "mean score", "briefed", "model calls"];
  const rows = [
    ...(baseline ? [row(`baseline (${baseline.model}, in process)`, baseline)] : []),
    ...reports.map((report) => row(report.serverMisbehaves ?? "-", report)),
  ];
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((cells) => cells[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}
