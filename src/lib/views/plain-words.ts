// How the engine's record reads to a person: the one place that turns log inputs, engine
// prompts, markers, errors and ids into short words. formats.ts and prompts.ts write what the
// agents read; this reads it back for the pages (work log, timeline, trace, inbox, agent page).
// Pure and client-safe. Nothing internal reaches the person: no ids, prompts, SQL or stacks.
import {
  CANCELLED_BY_PERSON,
  errorMarkerMessage,
  isStoppedMarker,
  parseLogInput,
  parseOpenTasks,
  parseTaskCancelledMarker,
  STOPPED_BY_PERSON,
  type LogInput,
} from "@/lib/core/formats";
import {
  BRIEFING_DECISION_PROMPT,
  CUT_ANSWER_NOTE,
  EMPTY_ANSWER_NOTE,
  TOOL_CALL_AS_TEXT_NOTE,
} from "@/lib/core/prompts";
import { toolAction } from "@/lib/views/tool-labels";

const UUID_SOURCE = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

/** Something an id stands for, when the page knows it: its name and where it lives. */
export type Named = { name: string; href?: string };
export type Names = ReadonlyMap<string, Named> | Record<string, Named>;

function lookUp(names: Names | undefined, id: string): Named | undefined {
  if (!names) return undefined;
  return names instanceof Map ? names.get(id) : (names as Record<string, Named>)[id];
}

/**
 * Text with its ids put in words: "(task id: …)"-style marks go, a known id becomes its name
 * (a Markdown link when it has a page), an unknown one "another item". For Markdown text.
 */
export function withoutIds(text: string, names?: Names): string {
  return (
    text
      .replace(new RegExp(` ?\\((?:[a-z ]+ id: ${UUID_SOURCE}(?:, )?)+\\)`, "gi"), "")
      // One pass, so a name put in as a link is not read again; an id inside an address (after "/") stays, being no text.
      .replace(
        new RegExp(`(?:\\b(?:agentId|taskId|questionId|id)["']?: ?["']?)?(?<![/=\\w-])(${UUID_SOURCE})`, "gi"),
        (_all, id: string) => nameOf(id, names),
      )
  );
}

function nameOf(id: string, names: Names | undefined): string {
  const named = lookUp(names, id.toLowerCase());
  if (!named) return "another item";
  return named.href ? `[${named.name}](${named.href})` : named.name;
}

/** The person's Stop and Cancel, told back to them. */
export const STOPPED_BY_YOU = "Stopped by you.";
const CANCELLED_BY_YOU = "Cancelled by you.";

/** Wording of the engine's own, told back to the person. */
const PERSON_WORDS: [string, string][] = [
  [STOPPED_BY_PERSON, STOPPED_BY_YOU],
  [CANCELLED_BY_PERSON, CANCELLED_BY_YOU],
];

function personWords(text: string): string {
  let out = text;
  for (const [engine, person] of PERSON_WORDS) out = out.split(engine).join(person);
  return out;
}

/** What went wrong, in one sentence with what happens next, and its kind for a Details disclosure. */
export type Problem = { summary: string; detail: string | null };

const DATABASE_TROUBLE =
  /failed query|econnrefused|econnreset|connection (?:terminated|ended|refused|closed)|terminating connection|does not allow connections|not currently accepting connections|too many clients|the database system is (?:starting|shutting)|connect_timeout|CONNECTION_(?:CLOSED|ENDED|DESTROYED)/i;
const SQL_OR_STACK =
  /failed query|params:|\bselect\b[\s\S]*\bfrom\b|\binsert into\b|\bupdate\s+"?\w+"?\s+set\b|\n\s+at /i;

/**
 * An error as the person reads it: a session's error, a failed task's reason, an error
 * marker. Never SQL, query parameters or a stack, not even in the detail: the detail names
 * the kind of failure; the full text stays in the server's log.
 */
export function describeProblem(text: string, context: { retried?: boolean } = {}): Problem {
  const raw = text.trim();
  const retried = context.retried ?? true;
  if (raw === STOPPED_BY_PERSON || isStoppedMarker(raw)) return { summary: STOPPED_BY_YOU, detail: null };
  if (raw === CANCELLED_BY_PERSON) return { summary: CANCELLED_BY_YOU, detail: null };
  const cancelled = parseTaskCancelledMarker(raw);
  if (cancelled) return taskCancelledProblem(cancelled);
  if (/^The worker shut down/.test(raw))
    return { summary: "Interrupted when its worker stopped — it will be retried automatically.", detail: null };
  if (/^The worker running this session stopped responding/.test(raw))
    return { summary: "Its worker stopped responding — the work will be retried automatically.", detail: null };
  const handedOver = /^Handed over to a new session after (\d+) tool rounds/.exec(raw);
  if (handedOver)
    return {
      summary: `Went on in a fresh session after ${handedOver[1]} tool rounds.`,
      detail: "The most tool rounds one session takes is MAX_STEPS_PER_SESSION.",
    };
  const limit = /reached its limit of (\d+) tool rounds/.exec(raw);
  if (limit)
    return {
      summary: `Stopped after ${limit[1]} tool rounds, the most one session may take.`,
      detail: "To allow longer sessions, raise MAX_STEPS_PER_SESSION.",
    };
  if (DATABASE_TROUBLE.test(raw)) {
    return {
      summary: retried
        ? "The database was unavailable — the work will be retried automatically."
        : "The database was unavailable, so this could not be finished.",
      detail: `Kind: ${/failed query/i.test(raw) ? "a database query failed (connection lost)" : "the database connection was lost"}.`,
    };
  }
  if (SQL_OR_STACK.test(raw)) {
    const kind = /^(\w*Error)\b/.exec(raw)?.[1];
    return {
      summary: retried
        ? "Something went wrong — the work will be retried automatically."
        : "Something went wrong, so this could not be finished.",
      detail: kind ? `Kind: ${kind}.` : null,
    };
  }
  const firstLine = personWords(withoutIds(raw.split("\n")[0] ?? raw));
  return { summary: firstLine.length > 240 ? `${firstLine.slice(0, 239)}…` : firstLine, detail: null };
}

/** A session that ended because its last open task was cancelled: who cancelled it, or why. */
function taskCancelledProblem({ title, reason }: { title: string; reason: string }): Problem {
  if (reason === CANCELLED_BY_PERSON) return { summary: `Stopped: you cancelled its task “${title}”.`, detail: null };
  const why = describeProblem(reason, { retried: false }).summary;
  return {
    summary: `Stopped: its task “${title}” was cancelled — ${why.charAt(0).toLowerCase()}${why.slice(1)}`,
    detail: null,
  };
}

/** A marker at the end of a message ("(stopped by the person)", "(error: …)", "(stopped: …)", "(task cancelled: …)"), in words. */
export function describeMarker(marker: string): Problem & { kind: "stopped" | "error" } {
  if (isStoppedMarker(marker)) return { kind: "stopped", summary: STOPPED_BY_YOU, detail: null };
  const cancelled = parseTaskCancelledMarker(marker);
  if (cancelled) return { kind: "stopped", ...taskCancelledProblem(cancelled) };
  const message = errorMarkerMessage(marker);
  if (message !== null) return { kind: "error", ...describeProblem(message, { retried: false }) };
  const stopped = /^\(stopped: ([\s\S]*)\)$/.exec(marker)?.[1] ?? marker;
  const problem = describeProblem(stopped, { retried: false });
  return {
    kind: "stopped",
    summary: /^Stopped/.test(problem.summary) ? problem.summary : `Stopped: ${problem.summary}`,
    detail: problem.detail,
  };
}

const TASK_SOURCES: Record<string, string> = {
  "the person": "you",
  "your lead": "the lead",
  "the system": "Cadre",
  "your schedule": "the schedule",
  "a webhook": "a webhook",
};

/** A log input in words: a short headline and the text under it (Markdown, ids put in words). */
export function describeLogInput(input: LogInput, names?: Names): { headline: string; text: string; failed: boolean } {
  const body = (text: string) => personWords(withoutIds(text, names));
  switch (input.kind) {
    case "task":
      return {
        headline: `Task from ${TASK_SOURCES[input.from] ?? input.from}: ${input.title}`,
        text: body(input.description),
        failed: false,
      };
    case "report":
      return { headline: `Report from ${input.agentName}`, text: body(input.result), failed: false };
    case "failed":
      return {
        headline: `${input.agentName} could not finish its task`,
        text: describeProblem(input.reason, { retried: false }).summary,
        failed: true,
      };
    case "cancelled":
      return {
        headline: `${input.agentName}'s task was cancelled`,
        text: describeProblem(input.reason, { retried: false }).summary,
        failed: false,
      };
    case "removed":
      return { headline: `${input.agentName} was removed before finishing its task`, text: "", failed: false };
    case "question":
      return { headline: `Question from ${input.agentName}`, text: body(input.question), failed: false };
    case "answer":
      return { headline: `Answer from ${input.leadName}`, text: body(input.answer), failed: false };
    case "person-answer":
      return { headline: "Your answer", text: body(input.answer), failed: false };
    case "task-cancelled":
      return {
        headline: `Task cancelled: ${input.title}`,
        text: describeProblem(input.reason, { retried: false }).summary,
        failed: false,
      };
    case "webhook":
      return { headline: `Webhook “${input.name}”`, text: body(input.body), failed: false };
    case "outcome-unknown":
      return {
        headline: `${input.agentName}'s call to ${toolAction(input.toolName)} was cut off`,
        text: "Its worker stopped during the call: whether it took effect is unknown, and it was not run again.",
        failed: true,
      };
  }
}

const RESUME = new RegExp(`^\\(Resuming task ${UUID_SOURCE}: ([\\s\\S]*?)\\. Nothing you started for it is still open`);

/**
 * What a message the engine put into a work log says to the person: a log input
 * (a task, a report…), one of the engine's own prompts (`hidden`: it says nothing to the
 * person beyond its label), or text of someone's own.
 */
export function describeLogMessage(
  content: string,
  names?: Names,
): { headline: string; text: string; failed: boolean; engine: boolean } {
  const input = parseLogInput(content);
  if (input) return { ...describeLogInput(input, names), engine: false };
  // The prompt's opening: its wording grew over versions, and older logs keep theirs.
  if (content.startsWith(BRIEFING_DECISION_PROMPT.slice(0, BRIEFING_DECISION_PROMPT.indexOf(".") + 1)))
    return { headline: "Wrapped up the session", text: "", failed: false, engine: true };
  if (content === EMPTY_ANSWER_NOTE)
    return { headline: "Asked again: its answer was empty", text: "", failed: false, engine: true };
  if (content === CUT_ANSWER_NOTE)
    return {
      headline: "Asked again: its answer was cut off at the model's length limit",
      text: "",
      failed: false,
      engine: true,
    };
  if (content === TOOL_CALL_AS_TEXT_NOTE)
    return { headline: "Asked again: it wrote a tool call as text", text: "", failed: false, engine: true };
  const resumed = RESUME.exec(content);
  if (resumed) return { headline: `Took up “${resumed[1]}” again`, text: "", failed: false, engine: true };
  const noted = parseOpenTasks(content);
  if (noted) {
    const lines = noted.map(
      (task) => `- ${task.title}: ${taskStatusWords(task.status)}${task.inFocus ? ", the one it is on now" : ""}`,
    );
    return { headline: "Its open tasks", text: lines.length ? lines.join("\n") : "None.", failed: false, engine: true };
  }
  if (/^The person decided on the calls you were waiting for/.test(content)) {
    return {
      headline: "Went on after your decisions on the calls it was waiting for",
      text: "",
      failed: false,
      engine: true,
    };
  }
  return { headline: "Message", text: personWords(withoutIds(content, names)), failed: false, engine: false };
}

/** An agent's own words, with the engine's set replies and marks put in words. */
export function describeAgentText(text: string, names?: Names): string {
  if (text.trim() === "No briefing needed.") return "Nothing new to brief you on.";
  return personWords(withoutIds(text, names));
}

/** An inbox item's title: an approval's stored "NAME wants to use TOOL" reads as what the call does. */
export function inboxTitle(title: string, approval?: { toolName: string } | null): string {
  const wants = /^(.+) wants to use (\S+)$/.exec(title);
  if (wants) return `${wants[1]} wants to ${toolAction(approval?.toolName ?? wants[2]!)}`;
  return withoutIds(title);
}

/** Why a call did not run, from its stored "(not run: …)" result, in the person's words. */
export function notRunReason(content: string): string {
  // The wrap-up's refusal names the one tool the model could call; the person reads what it means.
  if (/^\(not run: only \S+ can be called now, at the end of this session/.test(content))
    return "At the end of a work session an agent can only brief you; new work waits for its next session.";
  const why = content
    .replace(/^\(not run: /, "")
    .replace(/\)$/, "")
    .trim();
  return `${why.charAt(0).toUpperCase()}${why.slice(1)}${/[.!?]$/.test(why) ? "" : "."}`;
}

const TASK_STATUS_WORDS: Record<string, string> = {
  pending: "queued",
  in_progress: "working",
  waiting_input: "waiting for an answer",
  completed: "done",
  failed: "failed",
  cancelled: "cancelled",
};

/** A task's status as the person reads it: "queued", "working", "waiting for an answer". */
export function taskStatusWords(status: string): string {
  return TASK_STATUS_WORDS[status] ?? status.replace(/_/g, " ");
}

const TASK_GIVERS: Record<string, string> = {
  user: "you",
  lead: "the lead",
  schedule: "the schedule",
  webhook: "a webhook",
  system: "Cadre",
};

/** Who gave a task (its `source`), as the person reads it: "you", "the lead", "the schedule". */
export function taskGiver(source: string): string {
  return TASK_GIVERS[source] ?? source;
}

/**
 * A search snippet (a fragment of a message, cut anywhere) in the person's words: the log
 * inputs' openings and id marks are rewritten where they appear, since a fragment cannot be
 * parsed whole. Match marks pass through.
 */
export function plainSnippet(snippet: string): string {
  if (/\(Session ending\)|Decide whether to brief the person/.test(snippet)) return "Wrapped up the session";
  if (snippet.includes("(Your open tasks now)")) return "Its open tasks";
  if (/\(Your last answer (?:was empty|was cut off|wrote a tool call)/.test(snippet)) return "Asked again";
  return withoutIds(snippet)
    .replace(/\(Resuming task [^:]*: /g, "Took up again: ")
    .replace(/Nothing you started for it is still open: finish it, or say where it stands\.\)/g, "")
    .replace(/Task from the person/g, "Task from you")
    .replace(/Task from your lead/g, "Task from the lead")
    .replace(/Subordinate (\S+) reports:?/g, "Report from $1:")
    .replace(/Subordinate (\S+) asks:?/g, "Question from $1:")
    .replace(/Subordinate (\S+) failed:?/g, "$1 could not finish its task:")
    .replace(/Subordinate (\S+) was cancelled:?/g, "$1's task was cancelled:")
    .replace(/Your lead (\S+) answers:?/g, "Answer from $1:")
    .replace(/The person answers:?/g, "Your answer:")
    .replace(/\*\*Question for you\*\*/g, "Question for you:")
    .replace(/\[webhook:([A-Za-z0-9_-]+)\]/g, "Webhook “$1”:");
}

/**
 * Free text that may carry an error (an alert's summary and content): a line with SQL, a
 * stack or a lost connection becomes its one-sentence problem; ids and the engine's wording
 * of the person's acts are put in words. For Markdown text.
 */
export function plainText(text: string, names?: Names): string {
  return text
    .replace(/\n\s+at [^\n]*/g, "")
    .split("\n")
    .map((line) =>
      DATABASE_TROUBLE.test(line) || SQL_OR_STACK.test(line)
        ? describeProblem(line, { retried: false }).summary
        : personWords(withoutIds(line, names)),
    )
    .join("\n");
}

/** A task's result as one line of text: an ended-unfinished task's reason as its problem, else the agent's words. */
export function taskResultText(status: string, result: string): string {
  return status === "failed" || status === "cancelled"
    ? describeProblem(result, { retried: false }).summary
    : describeAgentText(result);
}
