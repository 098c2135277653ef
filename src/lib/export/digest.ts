import "server-only";
import type { Db } from "@/lib/db/client";
import {
  listInboxItemsIn,
  listKnowledgeIn,
  listQuestionsIn,
  listTasksEndedIn,
  sumUsagePerDay,
  type DailyUsage,
  type Window,
} from "@/lib/db/queries/team-record";
import type { Team } from "@/lib/db/schema";
import { exportFileName } from "./file-names";

/** The longest range a digest covers, in days (a year, leap day included). */
export const MAX_DIGEST_DAYS = 366;

/** A range of whole UTC days, both ends included, as YYYY-MM-DD. */
export type DigestRange = { from: string; to: string };

const DAY_MS = 24 * 60 * 60 * 1000;

/** The `days` UTC days up to `until` (today), both ends included: the digest's default range. */
export function lastDays(days: number, until: Date = new Date()): DigestRange {
  const to = until.toISOString().slice(0, 10);
  return { from: new Date(Date.parse(`${to}T00:00:00Z`) - (days - 1) * DAY_MS).toISOString().slice(0, 10), to };
}

/** How many days the range covers (counted, not listed: a bad range may span millennia). */
export function dayCount(range: DigestRange): number {
  return Math.round((Date.parse(`${range.to}T00:00:00Z`) - Date.parse(`${range.from}T00:00:00Z`)) / DAY_MS) + 1;
}

/** The UTC days of the range, in order. */
function daysOf(range: DigestRange): string[] {
  const days: string[] = [];
  for (let at = Date.parse(`${range.from}T00:00:00Z`); at <= Date.parse(`${range.to}T00:00:00Z`); at += DAY_MS)
    days.push(new Date(at).toISOString().slice(0, 10));
  return days;
}

/** `cadre-<team name>-digest-<from>-to-<to>.md`. */
export function digestFileName(team: Pick<Team, "name">, range: DigestRange): string {
  return exportFileName(team, `digest-${range.from}-to-${range.to}`, "md");
}

type Day = {
  finished: string[];
  failed: string[];
  cancelled: string[];
  briefings: string[];
  questions: string[];
  alerts: string[];
  knowledge: string[];
  usage: DailyUsage[];
};

/**
 * A readable Markdown digest of what a team did over a range of UTC days: for each day with
 * anything in it, tasks finished and failed (with their results), briefings, questions and
 * their answers, alerts, knowledge learned and the tokens spent. What agents wrote is quoted,
 * so a heading in a result cannot break the digest's own structure.
 */
export async function teamDigest(db: Db, team: Team, range: DigestRange, now: Date = new Date()): Promise<string> {
  const days = daysOf(range);
  const window: Window = {
    from: new Date(`${range.from}T00:00:00Z`),
    to: new Date(Date.parse(`${range.to}T00:00:00Z`) + DAY_MS),
  };
  const [ended, inbox, questions, knowledge, usage] = await Promise.all([
    listTasksEndedIn(db, team.id, window),
    listInboxItemsIn(db, team.id, window),
    listQuestionsIn(db, team.id, window),
    listKnowledgeIn(db, team.id, window),
    sumUsagePerDay(db, team.id, window),
  ]);

  const byDay = new Map<string, Day>(
    days.map((day) => [
      day,
      { finished: [], failed: [], cancelled: [], briefings: [], questions: [], alerts: [], knowledge: [], usage: [] },
    ]),
  );
  const dayOf = (at: Date) => byDay.get(at.toISOString().slice(0, 10));

  for (const { task, agentName } of ended) {
    const day = dayOf(task.completedAt!);
    const line = `- **${inline(task.title)}** — ${inline(agentName)}`;
    if (task.status === "completed") day?.finished.push(line + quoted(task.result));
    else if (task.status === "failed") day?.failed.push(line + quoted(task.result));
    else day?.cancelled.push(line);
  }
  for (const { item, agentName } of inbox) {
    const day = dayOf(item.createdAt);
    if (item.type === "briefing")
      day?.briefings.push(`#### ${inline(item.title)}\n\n*From ${inline(agentName)}*${quoted(item.content, "")}`);
    else if (item.type === "alert") day?.alerts.push(`- **${inline(item.title)}** — ${inline(item.summary)}`);
  }
  for (const { question, askerName, recipientName } of questions) {
    const askedInRange = question.createdAt >= window.from && question.createdAt < window.to;
    const day = dayOf(askedInRange ? question.createdAt : question.answeredAt!);
    const asked = `- **${inline(askerName)}** asked ${recipientName ? inline(recipientName) : "you"}${askedInRange ? "" : ` (on ${question.createdAt.toISOString().slice(0, 10)})`}:${quoted(question.question, "  ")}`;
    const answer =
      question.status === "answered"
        ? `  - Answer${question.answeredAt && dayOf(question.answeredAt) !== day ? ` (${question.answeredAt.toISOString().slice(0, 10)})` : ""}:${quoted(question.answer, "    ")}`
        : question.status === "withdrawn"
          ? "  - Withdrawn: its task ended before an answer."
          : "  - Not answered yet.";
    day?.questions.push(`${asked}\n${answer}`);
  }
  for (const item of knowledge) {
    // Every agent that reported it, and every page it came from.
    const reporters = [
      ...new Set(item.sources.length > 0 ? item.sources.map((source) => source.agentName) : [item.agentName]),
    ];
    const urls = [
      ...new Set(
        [item.sourceUrl, ...item.sources.map((source) => source.url)].filter((url): url is string => Boolean(url)),
      ),
    ];
    const from = urls.length > 0 ? ` Sources: ${urls.map((url) => `<${url}>`).join(", ")}` : "";
    dayOf(item.createdAt)?.knowledge.push(
      `- *${item.type}* (${reporters.map(inline).join(", ")}, confidence ${item.confidence.toFixed(2)}): ${inline(item.content)}${from}`,
    );
  }
  for (const row of usage) byDay.get(row.day)?.usage.push(row);

  const totals = {
    finished: ended.filter(({ task }) => task.status === "completed").length,
    failed: ended.filter(({ task }) => task.status === "failed").length,
    briefings: inbox.filter(({ item }) => item.type === "briefing").length,
    questions: questions.length,
    alerts: inbox.filter(({ item }) => item.type === "alert").length,
    knowledge: knowledge.length,
    tokens: usage.reduce((sum, row) => sum + row.inputTokens + row.outputTokens, 0),
    calls: usage.reduce((sum, row) => sum + row.calls, 0),
  };
  const span = range.from === range.to ? range.from : `${range.from} to ${range.to}`;
  const out: string[] = [
    `# ${inline(team.name)}: digest for ${span}`,
    "",
    `Days are UTC. Written ${now.toISOString().slice(0, 16).replace("T", " ")} UTC.${team.mission.trim() ? ` Mission: ${inline(team.mission)}` : ""}`,
    "",
    "## In short",
    "",
    `- Tasks finished: ${totals.finished}; failed: ${totals.failed}`,
    `- Briefings: ${totals.briefings}; questions: ${totals.questions}; alerts: ${totals.alerts}`,
    `- Knowledge learned: ${totals.knowledge} ${totals.knowledge === 1 ? "item" : "items"}`,
    `- Model calls: ${totals.calls}, ${formatTokens(totals.tokens)} tokens`,
  ];
  let quiet = 0;
  for (const [date, day] of byDay) {
    const sections = daySections(day);
    if (sections.length === 0) {
      quiet += 1;
      continue;
    }
    out.push("", `## ${weekday(date)}`, ...sections);
  }
  if (quiet === days.length) out.push("", "Nothing happened in these days.");
  else if (quiet > 0)
    out.push(
      "",
      `*${quiet} ${quiet === 1 ? "day" : "days"} with nothing to report ${quiet === 1 ? "is" : "are"} left out.*`,
    );
  return `${out.join("\n")}\n`;
}

function daySections(day: Day): string[] {
  const sections: string[] = [];
  const section = (title: string, lines: string[], separator = "\n") => {
    if (lines.length > 0) sections.push("", `### ${title}`, "", lines.join(separator).trimEnd());
  };
  section("Tasks finished", day.finished);
  section("Tasks failed", day.failed);
  section("Tasks cancelled", day.cancelled);
  section(
    "Briefings",
    day.briefings.map((briefing) => briefing.trimEnd()),
    "\n\n",
  );
  section("Questions and answers", day.questions);
  section("Alerts", day.alerts);
  section("Knowledge learned", day.knowledge);
  if (day.usage.length > 0) {
    const total = day.usage.reduce(
      (sum, row) => ({
        calls: sum.calls + row.calls,
        input: sum.input + row.inputTokens,
        output: sum.output + row.outputTokens,
      }),
      { calls: 0, input: 0, output: 0 },
    );
    section("Usage", [
      "| Agent | Model calls | Input tokens | Output tokens |",
      "| --- | ---: | ---: | ---: |",
      ...day.usage.map(
        (row) =>
          `| ${cell(row.agentName)} | ${row.calls} | ${formatTokens(row.inputTokens)} | ${formatTokens(row.outputTokens)} |`,
      ),
      `| **Total** | ${total.calls} | ${formatTokens(total.input)} | ${formatTokens(total.output)} |`,
    ]);
  }
  return sections;
}

/** "Friday 1 May 2026" under its date, so a reader finds a day either way. */
function weekday(date: string): string {
  const day = new Date(`${date}T00:00:00Z`);
  // Spelled out here rather than by Intl, whose output differs between ICU builds.
  return `${WEEKDAYS[day.getUTCDay()]} ${day.getUTCDate()} ${MONTHS[day.getUTCMonth()]} ${day.getUTCFullYear()} (${date})`;
}

const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

/** Text for one line: whitespace collapsed, nothing that would start markup of its own at the line's start. */
function inline(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function cell(text: string): string {
  return inline(text).replace(/\|/g, "\\|");
}

/** Text an agent or the person wrote, as a block quote under the line before it (every line quoted). */
function quoted(text: string | null, indent = "  "): string {
  const body = text?.trim();
  if (!body) return "";
  return `\n\n${body
    .split("\n")
    .map((line) => `${indent}> ${line}`.trimEnd())
    .join("\n")}\n`;
}

/** 1234567 → "1,234,567". */
function formatTokens(tokens: number): string {
  return String(Math.round(tokens)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}
