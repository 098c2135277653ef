// How input and markers read in an agent's work log: built here and parsed here, the one
// place that knows the wording. Pure and client-safe (the work log and the chat render
// with it), so it imports nothing from the engine.

// One wording per event of the person's, used everywhere it is told (the log, a session's
// error, a cancelled task's result, the pages).
/** Why a session, or a task dropped with it, ended when the person pressed Stop. */
export const STOPPED_BY_PERSON = "Stopped by the person.";
/** Why a task ended when the person cancelled it. */
export const CANCELLED_BY_PERSON = "Cancelled by the person.";
/** Ends a session or a chat reply the person stopped. */
export const STOPPED_MARKER = "(stopped by the person)";
/** The marker's wording before it was made one with STOPPED_BY_PERSON: older logs still end with it. */
const LEGACY_STOPPED_MARKER = "(stopped by user)";
export const errorMarker = (message: string) => `(error: ${message})`;
export const stepLimitMarker = (limit: number) =>
  `(stopped: this session reached its limit of ${limit} tool rounds; raise MAX_STEPS_PER_SESSION to allow longer sessions)`;
export const budgetMarker = (message: string) => `(stopped: ${message})`;
/**
 * Ends a session stopped because its task was cancelled and the agent had nothing else open
 * (cancelTrees): not the person's Stop. `reason`: the cancelled task's, e.g. CANCELLED_BY_PERSON.
 */
export const taskCancelledMarker = (title: string, reason: string) => `(task cancelled: “${title}”. ${reason})`;

/** The task and reason of a taskCancelledMarker; null for any other marker. */
export function parseTaskCancelledMarker(marker: string): { title: string; reason: string } | null {
  // Greedy: a title may hold anything; the reason is Cadre's own words.
  const match = /^\(task cancelled: “([\s\S]*)”\. ([\s\S]*)\)$/.exec(marker);
  return match ? { title: match[1]!, reason: match[2]! } : null;
}

/** A marker alone, or a marker after text cut short ("…partial text\n\n(stopped by the person)"). */
const MARKER_AT_END =
  /(?:^|\n\n)(\((?:stopped by the person|stopped by user|stopped: [\s\S]*|error: [\s\S]*|task cancelled: “[\s\S]*)\))$/;

/** A marker the person's Stop left (either wording). */
export function isStoppedMarker(marker: string): boolean {
  return marker === STOPPED_MARKER || marker === LEGACY_STOPPED_MARKER;
}

/** The message of an error marker ("(error: MESSAGE)"); null for any other marker. */
export function errorMarkerMessage(marker: string): string | null {
  return marker.startsWith("(error: ") && marker.endsWith(")") ? marker.slice("(error: ".length, -1) : null;
}

/** The marker a message ends with, and the text before it; null when it has none. */
export function splitMarker(content: string): { text: string; marker: string } | null {
  const match = MARKER_AT_END.exec(content);
  if (!match) return null;
  return { text: content.slice(0, match.index), marker: match[1]! };
}

/** What reached an agent's work log from someone else, in the words the agent reads. */
export type LogInput =
  | { kind: "task"; taskId: string; from: string; title: string; description: string }
  /** taskId null: a report on work outside any task. */
  | { kind: "report"; agentName: string; taskId: string | null; result: string }
  | { kind: "failed"; agentName: string; taskId: string; reason: string }
  | { kind: "cancelled"; agentName: string; taskId: string; reason: string }
  | { kind: "removed"; agentName: string; taskId: string }
  | { kind: "question"; agentName: string; agentId: string; questionId: string; question: string }
  | { kind: "answer"; leadName: string; questionId: string; answer: string }
  | { kind: "person-answer"; questionId: string; answer: string }
  | { kind: "task-cancelled"; taskId: string; title: string; reason: string }
  | { kind: "webhook"; name: string; body: string }
  | { kind: "outcome-unknown"; agentName: string; toolName: string };

/** The outcomes a lead hears about a delegated task: exactly one per task. */
export type SubordinateOutcome = Extract<LogInput, { kind: "report" | "failed" | "cancelled" | "removed" }>;

const taskSources = {
  user: "the person",
  lead: "your lead",
  system: "the system",
  schedule: "your schedule",
  webhook: "a webhook",
} as const;

export function formatLogInput(input: LogInput): string {
  switch (input.kind) {
    case "task":
      return [`Task from ${input.from} (task id: ${input.taskId}): ${input.title}`, input.description.trim()]
        .filter(Boolean)
        .join("\n\n");
    case "report":
      return input.taskId
        ? `Subordinate ${input.agentName} reports (task id: ${input.taskId}): ${input.result}`
        : `Subordinate ${input.agentName} reports: ${input.result}`;
    case "failed":
      return `Subordinate ${input.agentName} failed (task id: ${input.taskId}): ${input.reason}`;
    case "cancelled":
      return `Subordinate ${input.agentName} was cancelled (task id: ${input.taskId}): ${input.reason}`;
    case "removed":
      return `Subordinate ${input.agentName} was removed (task id: ${input.taskId}): the task did not finish.`;
    case "question":
      return `Subordinate ${input.agentName} asks (question id: ${input.questionId}, agent id: ${input.agentId}): ${input.question}`;
    case "answer":
      return `Your lead ${input.leadName} answers (question id: ${input.questionId}): ${input.answer}`;
    case "person-answer":
      return `The person answers (question id: ${input.questionId}): ${input.answer}`;
    case "task-cancelled":
      return `Your task was cancelled (task id: ${input.taskId}): ${input.title}. ${input.reason} Drop that work; your other tasks go on.`;
    case "webhook":
      return `[webhook:${input.name}] ${input.body}`;
    case "outcome-unknown":
      return `Subordinate ${input.agentName}'s call to ${input.toolName} was cut off when its worker stopped: whether it took effect is unknown, and it was not run again.`;
  }
}

export function taskSourceWords(source: keyof typeof taskSources): string {
  return taskSources[source];
}

const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
const parsers: { pattern: RegExp; parse: (match: RegExpExecArray) => LogInput }[] = [
  {
    pattern: new RegExp(`^Task from (.+?) \\(task id: (${UUID})\\): (.*?)(?:\\n\\n([\\s\\S]*))?$`, "s"),
    parse: (m) => ({ kind: "task", from: m[1]!, taskId: m[2]!, title: m[3]!, description: m[4] ?? "" }),
  },
  {
    pattern: new RegExp(`^Subordinate (.+?) reports \\(task id: (${UUID})\\): ([\\s\\S]*)$`),
    parse: (m) => ({ kind: "report", agentName: m[1]!, taskId: m[2]!, result: m[3]! }),
  },
  {
    pattern: /^Subordinate (.+?) reports: ([\s\S]*)$/,
    parse: (m) => ({ kind: "report", agentName: m[1]!, taskId: null, result: m[2]! }),
  },
  {
    pattern: new RegExp(`^Subordinate (.+?) failed \\(task id: (${UUID})\\): ([\\s\\S]*)$`),
    parse: (m) => ({ kind: "failed", agentName: m[1]!, taskId: m[2]!, reason: m[3]! }),
  },
  {
    pattern: new RegExp(`^Subordinate (.+?) was cancelled \\(task id: (${UUID})\\): ([\\s\\S]*)$`),
    parse: (m) => ({ kind: "cancelled", agentName: m[1]!, taskId: m[2]!, reason: m[3]! }),
  },
  {
    pattern: new RegExp(`^Subordinate (.+?) was removed \\(task id: (${UUID})\\)`),
    parse: (m) => ({ kind: "removed", agentName: m[1]!, taskId: m[2]! }),
  },
  {
    pattern: new RegExp(`^Subordinate (.+?) asks \\(question id: (${UUID}), agent id: (${UUID})\\): ([\\s\\S]*)$`),
    parse: (m) => ({ kind: "question", agentName: m[1]!, questionId: m[2]!, agentId: m[3]!, question: m[4]! }),
  },
  {
    pattern: new RegExp(`^Your lead (.+?) answers \\(question id: (${UUID})\\): ([\\s\\S]*)$`),
    parse: (m) => ({ kind: "answer", leadName: m[1]!, questionId: m[2]!, answer: m[3]! }),
  },
  {
    pattern: new RegExp(`^The person answers \\(question id: (${UUID})\\): ([\\s\\S]*)$`),
    parse: (m) => ({ kind: "person-answer", questionId: m[1]!, answer: m[2]! }),
  },
  {
    pattern: new RegExp(
      `^Your task was cancelled \\(task id: (${UUID})\\): (.*?)\\. ([\\s\\S]*?) Drop that work; your other tasks go on\\.$`,
    ),
    parse: (m) => ({ kind: "task-cancelled", taskId: m[1]!, title: m[2]!, reason: m[3]! }),
  },
  {
    pattern: /^Subordinate (.+?)'s call to ([A-Za-z0-9_-]+) was cut off when its worker stopped/,
    parse: (m) => ({ kind: "outcome-unknown", agentName: m[1]!, toolName: m[2]! }),
  },
  {
    pattern: /^\[webhook:([A-Za-z0-9_-]+)\] ([\s\S]*)$/,
    parse: (m) => ({ kind: "webhook", name: m[1]!, body: m[2]! }),
  },
];

/** Reads a user message of a work log back; null for anything else (a prompt of the engine's own). */
export function parseLogInput(content: string): LogInput | null {
  for (const { pattern, parse } of parsers) {
    const match = pattern.exec(content);
    if (match) return parse(match);
  }
  return null;
}

/** The result a model gets for a call the person denied. */
export const deniedResult = (reason: string) => `Denied by the person: ${reason.trim() || "no reason given"}`;
/** The result of a call whose approval was withdrawn before the person decided. */
export const withdrawnResult = (why: string) => `(not run: ${why})`;

/** A call's stored result that says it never ran (withdrawn, refused at a session's end). */
export function isNotRunResult(content: string): boolean {
  return content.startsWith("(not run: ") && content.endsWith(")");
}
/** The result of a call outside Cadre that a dead worker cut off: it may or may not have happened. */
export const OUTCOME_UNKNOWN_RESULT = "(outcome unknown: the worker stopped during this call)";
/**
 * What an agent is told of its open tasks, and which one is in focus, when either changes: a
 * note in its log just before the input that changed them (a task, a report, a resume). It is
 * kept out of the instructions so they stay the same from call to call (the prompt cache serves
 * every request that starts as the one before did: see work-loop.ts noteOpenTasks).
 */
const OPEN_TASKS_HEADING = "(Your open tasks now)";

export type NotedTask = { id: string; title: string; status: string };

export function formatOpenTasks(tasks: readonly NotedTask[], focus: string | null): string {
  if (tasks.length === 0) return `${OPEN_TASKS_HEADING} none`;
  const lines = tasks.map(
    (task) => `- [${task.status}] ${task.title} (task id: ${task.id})${task.id === focus ? " ← in focus" : ""}`,
  );
  return `${OPEN_TASKS_HEADING}\n${lines.join("\n")}`;
}

/** The tasks a note of formatOpenTasks lists (for the pages); null for any other message. */
export function parseOpenTasks(content: string): { title: string; status: string; inFocus: boolean }[] | null {
  if (!content.startsWith(OPEN_TASKS_HEADING)) return null;
  return content
    .split("\n")
    .slice(1)
    .flatMap((line) => {
      const match = /^- \[([a-z_]+)\] ([\s\S]*) \(task id: [^)]*\)( ← in focus)?$/.exec(line);
      return match ? [{ status: match[1]!, title: match[2]!, inFocus: match[3] !== undefined }] : [];
    });
}

/** How the note begins, as a SQL LIKE pattern (the engine finds the latest one without reading the log). */
export const OPEN_TASKS_LIKE = `${OPEN_TASKS_HEADING}%`;

/** What a model sees for a call still waiting for the person (it has no stored result yet). */
export const AWAITING_APPROVAL_RESULT =
  "(waiting for the person's approval: do not call it again; you will get its result when they decide)";

/** Before the result of a call the person approved with changes: what actually ran. */
export const editedInputNote = (input: unknown) =>
  `(The person changed the input before approving; it ran with: ${JSON.stringify(input)})`;

/** The longest result a note on decisions carries (the longest a model call carries: compaction.ts toolResultLimit). */
const DECIDED_RESULT_LIMIT = 16_000;

/**
 * A note for calls that waited for the person while the log moved on: what was decided and, for
 * a call that ran, its result (the call itself keeps reading as waiting: see toModelMessages).
 */
export function formatDecisions(
  decisions: readonly {
    toolName: string;
    toolCallId: string;
    status: string;
    decisionNote: string | null;
    result?: string;
  }[],
): string {
  const lines = decisions.map((decision) => {
    const call = `- ${decision.toolName} (call ${decision.toolCallId})`;
    if (decision.status === "approved") {
      const result = decision.result ?? "";
      const shown =
        result.length > DECIDED_RESULT_LIMIT
          ? `${result.slice(0, DECIDED_RESULT_LIMIT)} …(result cut to ${DECIDED_RESULT_LIMIT} characters)`
          : result;
      return `${call}: approved; it ran. Its result:\n${shown}`;
    }
    if (decision.status === "denied") return `${call}: ${deniedResult(decision.decisionNote ?? "")}`;
    return `${call}: ${decision.result ?? withdrawnResult(decision.decisionNote ?? "withdrawn")}`;
  });
  return `The person decided on the calls you were waiting for:\n${lines.join("\n")}\nGo on from there.`;
}

const PERSON_QUESTION_HEADING = "**Question for you**\n\n";

/** How a question to the person reads in the chat (and its inbox item's title). */
export function formatPersonQuestion(question: string): string {
  return `${PERSON_QUESTION_HEADING}${question}`;
}

/** A chat message that asks the person (see formatPersonQuestion): the chat shows its answer box. */
export function isPersonQuestion(content: string): boolean {
  return content.startsWith(PERSON_QUESTION_HEADING);
}

/** How a briefing reads in the person's chat: its title in bold, then the briefing. */
export function formatBriefing(title: string, content: string): string {
  return `**${title}**\n\n${content}`;
}

/**
 * How each kind of log input begins, as SQL LIKE patterns in the order `parseLogInput`
 * tries them: the team timeline tells reports and questions apart in the database, so a
 * filter by kind pages through the log without reading it all.
 */
export const logInputLikePatterns: readonly { kind: LogInput["kind"]; pattern: string }[] = [
  { kind: "task", pattern: "Task from % (task id: %" },
  { kind: "report", pattern: "Subordinate % reports (task id: %" },
  { kind: "report", pattern: "Subordinate % reports: %" },
  { kind: "failed", pattern: "Subordinate % failed (task id: %" },
  { kind: "cancelled", pattern: "Subordinate % was cancelled (task id: %" },
  { kind: "removed", pattern: "Subordinate % was removed (task id: %" },
  { kind: "question", pattern: "Subordinate % asks (question id: %" },
  { kind: "answer", pattern: "Your lead % answers (question id: %" },
  { kind: "person-answer", pattern: "The person answers (question id: %" },
  { kind: "task-cancelled", pattern: "Your task was cancelled (task id: %" },
  { kind: "outcome-unknown", pattern: "Subordinate %'s call to % was cut off when its worker stopped%" },
  { kind: "webhook", pattern: "[webhook:%] %" },
];

/**
 * A tool result that says the call did not do its work: a tool error (`Error: …`), a call
 * cut off or never run, a session that ended under it, an outcome nobody knows.
 */
export function isFailedToolResult(content: string): boolean {
  return (
    /^(Error: |\((interrupted|no result|error: |stopped|outcome unknown|task cancelled: ))/.test(content) ||
    isStoppedMarker(content)
  );
}
