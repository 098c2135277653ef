// What a tool call is doing, in the person's words ("Searching the web for “tidal lagoons”"),
// from its name and input alone. Pure and client-safe: the live status, the work log and the
// chat can all say it the same way.
import { MCP_SEPARATOR } from "@/lib/mcp/names";

/** Longest quoted input kept in a label; a label is a line, not the input. */
const QUOTE_LIMIT = 80;

/** Agent names by id, so a delegation reads "Delegating to Scout" rather than an id. */
export type AgentNames = ReadonlyMap<string, string> | Record<string, string>;

function nameOf(names: AgentNames | undefined, id: unknown): string | null {
  if (typeof id !== "string" || !names) return null;
  return (names instanceof Map ? names.get(id) : (names as Record<string, string>)[id]) ?? null;
}

function text(args: unknown, key: string): string | null {
  if (!args || typeof args !== "object") return null;
  const value = (args as Record<string, unknown>)[key];
  return typeof value === "string" && value.trim() ? value.trim().replace(/\s+/g, " ") : null;
}

function quote(value: string): string {
  return `“${value.length > QUOTE_LIMIT ? `${value.slice(0, QUOTE_LIMIT - 1)}…` : value}”`;
}

/** `phrase “value”` when the input has the value, else just `phrase`. */
function withQuote(phrase: string, value: string | null): string {
  return value ? `${phrase} ${quote(value)}` : phrase;
}

/**
 * A present-tense label for a tool call. Unknown tools (an MCP server's, a tool added later)
 * still read: "Using create_issue on github", "Running someTool".
 */
export function describeToolCall(toolName: string, args: unknown, names?: AgentNames): string {
  switch (toolName) {
    case "tavilySearch":
      return withQuote("Searching the web for", text(args, "query"));
    case "readWebPage":
      return text(args, "url") ? `Reading ${text(args, "url")}` : "Reading a web page";
    case "delegateToAgent": {
      const who = nameOf(names, (args as Record<string, unknown> | null)?.agentId) ?? "a subordinate";
      const title = text(args, "title");
      return title ? `Delegating ${quote(title)} to ${who}` : `Delegating to ${who}`;
    }
    case "getTeamStatus":
      return "Checking on the team";
    case "createInboxItem":
      return withQuote(text(args, "type") === "alert" ? "Raising the alert" : "Writing the briefing", text(args, "title"));
    case "askPerson":
      return withQuote("Asking you", text(args, "question"));
    case "answerSubordinate": {
      const who = nameOf(names, (args as Record<string, unknown> | null)?.agentId);
      return who ? `Answering ${who}` : "Answering a subordinate";
    }
    case "requestInput":
      return withQuote("Asking its lead", text(args, "question"));
    case "reportToLead":
      return "Reporting to its lead";
    case "addKnowledgeItem":
      return withQuote("Noting", text(args, "content"));
    case "searchKnowledge":
      return withQuote("Searching the team's knowledge for", text(args, "query"));
    case "removeKnowledgeItem":
      return "Removing a knowledge item";
    case "createTask":
      return withQuote("Creating the task", text(args, "title"));
  }
  const separator = toolName.indexOf(MCP_SEPARATOR);
  if (separator > 0) return `Using ${toolName.slice(separator + MCP_SEPARATOR.length)} on ${toolName.slice(0, separator)}`;
  return `Running ${toolName}`;
}
