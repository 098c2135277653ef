// How a tool call reads to a person: "Searched the web for …", "Delegated to Scout: …".
// Pure and client-safe: the chat, the work log and the timeline all label calls here (and the
// briefing page lists its sources with citedSources). The
// raw input and output stay one click away (components/tool-call.tsx).

import { isNotRunResult } from "@/lib/core/formats";
import { MCP_SEPARATOR } from "@/lib/mcp/names";

/** not-run: it has a result, which says it never ran (withdrawn, or refused at a session's end). */
export type ToolCallState = "running" | "waiting" | "done" | "error" | "not-run";

/** A stored call's state from its stored result (none yet: `pending`, running or waiting for the person). */
export function storedCallState(
  result: { content: string; failed?: boolean } | null | undefined,
  pending: "running" | "waiting" = "running",
): ToolCallState {
  if (!result) return pending;
  if (isNotRunResult(result.content)) return "not-run";
  return result.failed ? "error" : "done";
}

/** Agent names by id, so a call still under way reads "Delegating to Scout" rather than an id. */
export type AgentNames = ReadonlyMap<string, string> | Record<string, string>;

function nameOf(names: AgentNames | undefined, id: unknown): string | undefined {
  if (typeof id !== "string" || !names) return undefined;
  return (names instanceof Map ? names.get(id) : (names as Record<string, string>)[id]) ?? undefined;
}

/** A search result as tavilySearch returns it. */
export type SearchSource = { title: string; url: string; host: string; content: string };

const record = (value: unknown): Record<string, unknown> =>
  value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
const text = (value: unknown): string | undefined =>
  typeof value === "string" && value.trim() ? value.replace(/\s+/g, " ").trim() : undefined;

function clip(value: string | undefined, max = 80): string {
  if (!value) return "";
  return value.length > max ? `${value.slice(0, max - 1)}…` : value;
}

const quoted = (value: string | undefined) => (value ? `“${clip(value)}”` : "");

function host(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).hostname.replace(/^www\./, "");
  } catch {
    return url;
  }
}

/**
 * The label of one call, in the tense of its state: running or waiting reads as under way
 * ("Searching the web for …"), done and failed as past ("Searched the web for …"). `output`
 * (when done) fills in what only the result knows, such as who a task went to; before that,
 * `names` does (the live status names the subordinate a running delegation goes to).
 */
export function describeToolCall(
  toolName: string,
  args: unknown,
  state: ToolCallState,
  output?: unknown,
  names?: AgentNames,
): string {
  const input = record(args);
  const result = record(output);
  const past = state === "done" || state === "error";
  const verb = (now: string, then: string) => (past ? then : now);
  const prefix = state === "error" ? "Failed: " : "";
  const to = text(result.to) ?? text(result.assignedTo) ?? nameOf(names, input.agentId);
  const label = (() => {
    switch (toolName) {
      case "tavilySearch":
        return `${verb("Searching", "Searched")} the web for ${quoted(text(input.query))}`;
      case "readWebPage":
        return `${verb("Reading", "Read")} ${host(text(input.url)) ?? "a web page"}`;
      case "delegateToAgent":
        return `${verb("Delegating", "Delegated")} to ${to ?? "a subordinate"}: ${quoted(text(input.title))}`;
      case "createTask":
        return `${verb("Creating", "Created")} a task${to ? ` for ${to}` : ""}: ${quoted(text(input.title))}`;
      case "addKnowledgeItem":
        return `${verb("Saving", "Saved")} ${text(input.type) ?? "knowledge"}: ${quoted(text(input.content))}`;
      case "searchKnowledge":
        return `${verb("Searching", "Searched")} team knowledge for ${quoted(text(input.query))}`;
      case "removeKnowledgeItem":
        return `${verb("Removing", "Removed")} a knowledge item`;
      case "getTeamStatus":
        return `${verb("Checking", "Checked")} the team's status`;
      case "createInboxItem":
        return `${verb("Sending", "Sent")} ${text(input.type) === "alert" ? "an alert" : "a briefing"}: ${quoted(text(input.title))}`;
      case "askPerson":
        return `${verb("Asking", "Asked")} you: ${quoted(text(input.question))}`;
      case "requestInput":
        return `${verb("Asking", "Asked")} the lead: ${quoted(text(input.question))}`;
      case "answerSubordinate":
        return `${verb("Answering", "Answered")} ${to ?? "a subordinate"}: ${quoted(text(input.answer))}`;
      case "reportToLead":
        return `${verb("Reporting", "Reported")} to the lead: ${quoted(text(input.result))}`;
      default: {
        // An MCP tool (SERVER__TOOL) or one this list does not know: its name, readable.
        const at = toolName.indexOf(MCP_SEPARATOR);
        const [server, tool] =
          at > 0 ? [toolName.slice(0, at), toolName.slice(at + MCP_SEPARATOR.length)] : [undefined, toolName];
        return `${verb("Using", "Used")} ${tool}${server ? ` (${server})` : ""}`;
      }
    }
  })();
  return `${prefix}${label}`;
}

/** What each built-in tool does, as a phrase after "wants to" ("Scout wants to search the web"). */
const TOOL_ACTIONS: Record<string, string> = {
  tavilySearch: "search the web",
  readWebPage: "read a web page",
  delegateToAgent: "delegate a task",
  createTask: "create a task",
  addKnowledgeItem: "save a knowledge item",
  searchKnowledge: "search the team's knowledge",
  removeKnowledgeItem: "remove a knowledge item",
  getTeamStatus: "check the team's status",
  createInboxItem: "send you a briefing",
  askPerson: "ask you a question",
  requestInput: "ask the lead",
  answerSubordinate: "answer a subordinate",
  reportToLead: "report to the lead",
};

/** A tool by what it does, without its input: "search the web"; an MCP tool: "use TOOL (SERVER)". */
export function toolAction(toolName: string): string {
  const known = TOOL_ACTIONS[toolName];
  if (known) return known;
  const at = toolName.indexOf(MCP_SEPARATOR);
  return at > 0 ? `use ${toolName.slice(at + MCP_SEPARATOR.length)} (${toolName.slice(0, at)})` : `use ${toolName}`;
}

/** A tool's name as a label ("Search the web"), for lists that show the technical name beside it as code. */
export function toolLabel(toolName: string): string {
  const action = toolAction(toolName);
  return action.charAt(0).toUpperCase() + action.slice(1);
}

/** The sources a search found, when `output` is tavilySearch's result; [] otherwise. */
export function searchSources(toolName: string, output: unknown): SearchSource[] {
  if (toolName !== "tavilySearch") return [];
  const results = record(output).results;
  if (!Array.isArray(results)) return [];
  return results.flatMap((entry) => {
    const { title, url, content } = record(entry);
    const address = text(url);
    // Only http(s) becomes a link: a result is outside text, and javascript: must stay inert.
    let parsed: URL;
    try {
      parsed = new URL(address ?? "");
    } catch {
      return [];
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return [];
    const site = parsed.hostname.replace(/^www\./, "");
    return [
      { title: text(title) ?? site, url: parsed.href, host: site, content: typeof content === "string" ? content : "" },
    ];
  });
}

/**
 * The web addresses a briefing cites (Markdown links and bare URLs), in order, each once:
 * its sources, listed under it. Only http(s).
 */
export function citedSources(markdown: string): { url: string; label: string }[] {
  const found = new Map<string, string>();
  for (const match of markdown.matchAll(/\[([^\]\n]{1,200})\]\((https?:\/\/[^)\s]+)\)|(https?:\/\/[^\s)<>\]"']+)/g)) {
    const url = (match[2] ?? match[3] ?? "").replace(/[.,;:!?]+$/, "");
    if (!url || found.has(url)) continue;
    let site: string;
    try {
      site = new URL(url).hostname.replace(/^www\./, "");
    } catch {
      continue;
    }
    found.set(url, match[1]?.trim() || site);
  }
  return [...found].map(([url, label]) => ({ url, label }));
}

/** "1 page", "3 pages". */
function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}
const times = (n: number) => (n === 1 ? "once" : n === 2 ? "twice" : `${n} times`);

/** Each built-in tool's part of a work summary, in the order a summary lists them. */
const TOOL_USE_WORDS: readonly [string, (n: number) => string][] = [
  ["tavilySearch", (n) => `searched the web ${times(n)}`],
  ["readWebPage", (n) => `read ${count(n, "page", "pages")}`],
  ["searchKnowledge", (n) => `looked through the team's knowledge ${times(n)}`],
  ["addKnowledgeItem", (n) => `saved ${count(n, "fact", "facts")}`],
  ["removeKnowledgeItem", (n) => `removed ${count(n, "fact", "facts")}`],
  ["delegateToAgent", (n) => `delegated ${count(n, "task", "tasks")}`],
  ["createTask", (n) => `created ${count(n, "task", "tasks")}`],
  ["requestInput", (n) => `asked the lead ${count(n, "question", "questions")}`],
  ["askPerson", (n) => `asked you ${count(n, "question", "questions")}`],
  ["answerSubordinate", (n) => `answered ${count(n, "question", "questions")}`],
  ["createInboxItem", (n) => `sent ${n === 1 ? "a briefing" : `${n} briefings`}`],
];
/** Calls that say nothing of the work itself (the report is shown on its own). */
const UNTOLD_TOOLS = new Set(["reportToLead", "getTeamStatus"]);

/**
 * A task's work in words from how often each tool was called: "searched the web 3 times, read
 * 2 pages, saved 2 facts"; MCP tools as "used TOOL (SERVER) twice". Empty when nothing was called.
 */
export function describeToolUse(calls: Readonly<Record<string, number>>): string {
  const parts: string[] = [];
  for (const [toolName, words] of TOOL_USE_WORDS) if (calls[toolName]) parts.push(words(calls[toolName]));
  const known = new Set([...TOOL_USE_WORDS.map(([name]) => name), ...UNTOLD_TOOLS]);
  for (const [toolName, n] of Object.entries(calls).sort(([a], [b]) => a.localeCompare(b))) {
    if (known.has(toolName) || !n) continue;
    const at = toolName.indexOf(MCP_SEPARATOR);
    const [server, tool] =
      at > 0 ? [toolName.slice(0, at), toolName.slice(at + MCP_SEPARATOR.length)] : [undefined, toolName];
    parts.push(`used ${tool}${server ? ` (${server})` : ""} ${times(n)}`);
  }
  return parts.join(", ");
}
