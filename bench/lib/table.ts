/** One line of the benchmark table. `pass` is null for a reference row (no goal of its own). */
export type Row = {
  figure: string;
  measure: string;
  p50: string;
  p95: string;
  /** The ratio to the figure's reference, or another figure the goal names. */
  ratio: string;
  goal: string;
  pass: boolean | null;
};

export type FigureResult = { rows: Row[]; notes: string[] };

const columns: { key: keyof Row; title: string }[] = [
  { key: "figure", title: "figure" },
  { key: "measure", title: "measure" },
  { key: "p50", title: "p50" },
  { key: "p95", title: "p95" },
  { key: "ratio", title: "ratio / reference" },
  { key: "goal", title: "goal" },
  { key: "pass", title: "result" },
];

function cell(row: Row, key: keyof Row): string {
  if (key === "pass") return row.pass === null ? "ref" : row.pass ? "pass" : "MISS";
  return String(row[key]);
}

/** A Markdown table, so the same text reads in a terminal and in BENCHMARKS.md. */
export function renderTable(rows: readonly Row[]): string {
  const widths = columns.map(({ key, title }) => Math.max(title.length, ...rows.map((row) => cell(row, key).length)));
  const line = (values: string[]) => `| ${values.map((value, i) => value.padEnd(widths[i]!)).join(" | ")} |`;
  return [
    line(columns.map((column) => column.title)),
    `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`,
    ...rows.map((row) => line(columns.map(({ key }) => cell(row, key)))),
  ].join("\n");
}
