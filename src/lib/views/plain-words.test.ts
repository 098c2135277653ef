import { describe, expect, it } from "vitest";
import { enginePhrases } from "../../../tests/support/internal-text";
import {
  CANCELLED_BY_PERSON,
  errorMarker,
  formatLogInput,
  formatOpenTasks,
  STOPPED_BY_PERSON,
  STOPPED_MARKER,
  stepLimitMarker,
  taskCancelledMarker,
  type LogInput,
} from "@/lib/core/formats";
import { BRIEFING_DECISION_PROMPT, resumeTaskMessage } from "@/lib/core/prompts";
import {
  describeLogMessage,
  describeMarker,
  describeProblem,
  inboxTitle,
  plainSnippet,
  plainText,
  withoutIds,
} from "./plain-words";

const TASK = "a40f4f53-1111-4222-8333-444455556666";
const AGENT = "693bf141-0c1e-4a52-9d7f-2f0a3c1b9e11";
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-/i;
const phrases = enginePhrases();

/** The engine's phrases a text still carries: none may reach the person. */
const enginePhrasesIn = (text: string) => phrases.filter((phrase) => text.includes(phrase));

const inputs: LogInput[] = [
  { kind: "task", taskId: TASK, from: "your lead", title: "Research batteries", description: "Solid-state ones." },
  { kind: "report", agentName: "Scout", taskId: TASK, result: "Three new cells." },
  { kind: "report", agentName: "Scout", taskId: null, result: "Nothing new." },
  {
    kind: "failed",
    agentName: "Scout",
    taskId: TASK,
    reason: 'Failed query: select "id" from "tasks" where "id" = $1\nparams: x',
  },
  { kind: "cancelled", agentName: "Sage", taskId: TASK, reason: "Stopped by the person." },
  { kind: "removed", agentName: "Sage", taskId: TASK },
  { kind: "question", agentName: "Scout", agentId: AGENT, questionId: TASK, question: "Which chemistry?" },
  { kind: "answer", leadName: "Rosa", questionId: TASK, answer: "Sulfide." },
  { kind: "person-answer", questionId: TASK, answer: "Price matters most." },
  { kind: "task-cancelled", taskId: TASK, title: "Research batteries", reason: "Cancelled by the person." },
  { kind: "webhook", name: "github", body: "A push." },
  { kind: "outcome-unknown", agentName: "Scout", toolName: "tavilySearch" },
];

describe("plain words", () => {
  it("tells every log input in words, with no id, engine phrase or raw tool name", () => {
    for (const input of inputs) {
      const { headline, text } = describeLogMessage(formatLogInput(input));
      const shown = `${headline}\n${text}`;
      expect(shown, input.kind).not.toMatch(UUID);
      expect(enginePhrasesIn(shown), input.kind).toEqual([]);
      expect(shown, input.kind).not.toMatch(/tavilySearch|select|params:/);
    }
    expect(describeLogMessage(formatLogInput(inputs[0]!)).headline).toBe("Task from the lead: Research batteries");
    expect(describeLogMessage(formatLogInput(inputs[1]!)).headline).toBe("Report from Scout");
    expect(describeLogMessage(formatLogInput(inputs[4]!)).text).toBe("Stopped by you.");
  });

  it("labels the engine's own prompts and hides what they say to the agent", () => {
    expect(describeLogMessage(BRIEFING_DECISION_PROMPT)).toEqual({
      headline: "Wrapped up the session",
      text: "",
      failed: false,
      engine: true,
    });
    const resumed = describeLogMessage(
      resumeTaskMessage({ id: TASK, title: "Research batteries" } as Parameters<typeof resumeTaskMessage>[0]),
    );
    expect(resumed).toMatchObject({ headline: "Took up “Research batteries” again", engine: true });
    // The note on open tasks, and the wording of the briefing decision older logs keep.
    const noted = describeLogMessage(
      formatOpenTasks(
        [
          { id: TASK, title: "Research batteries", status: "in_progress" },
          { id: TASK, title: "Ask about tides", status: "waiting_input" },
        ],
        TASK,
      ),
    );
    expect(noted).toMatchObject({ headline: "Its open tasks", engine: true });
    expect(noted.text).toContain("Research batteries: working, the one it is on now");
    expect(noted.text).not.toMatch(/task id|in_progress|waiting_input|←/);
    expect(describeLogMessage(formatOpenTasks([], null))).toMatchObject({ headline: "Its open tasks", text: "None." });
    expect(
      describeLogMessage(
        "(Session ending) Decide whether to brief the person. Otherwise reply exactly: No briefing needed.",
      ).headline,
    ).toBe("Wrapped up the session");
  });

  it("says a problem in one sentence with what happens next, never SQL, parameters or a stack, not even in its detail", () => {
    const lost = describeProblem(
      'Failed query: select "id", "agent_id" from "work_sessions" where "id" = $1\nparams: 5b1c',
      { retried: true },
    );
    expect(lost.summary).toBe("The database was unavailable — the work will be retried automatically.");
    expect(`${lost.summary} ${lost.detail}`).not.toMatch(/select|params|work_sessions/i);
    const crash = describeProblem("TypeError: x is undefined\n    at run (/app/src/lib/agents/agent.ts:12:3)", {
      retried: false,
    });
    expect(crash).toEqual({
      summary: "Something went wrong, so this could not be finished.",
      detail: "Kind: TypeError.",
    });
    expect(describeProblem("The worker shut down; another worker continues.").summary).toBe(
      "Interrupted when its worker stopped — it will be retried automatically.",
    );
    expect(describeProblem("The worker running this session stopped responding.").summary).toBe(
      "Its worker stopped responding — the work will be retried automatically.",
    );
    expect(describeProblem("The model server failed (HTTP 503). Try again in a moment.").summary).toBe(
      "The model server failed (HTTP 503). Try again in a moment.",
    );
  });

  it("reads markers as sentences", () => {
    expect(describeMarker(STOPPED_MARKER)).toEqual({ kind: "stopped", summary: "Stopped by you.", detail: null });
    expect(describeMarker(stepLimitMarker(25)).summary).toBe(
      "Stopped after 25 tool rounds, the most one session may take.",
    );
    expect(enginePhrasesIn(JSON.stringify(describeMarker(stepLimitMarker(25))))).toEqual([]);
    expect(describeMarker(errorMarker("The model server failed (HTTP 503).")).summary).toBe(
      "The model server failed (HTTP 503).",
    );
    // A session whose last task was cancelled: not a Stop the person pressed.
    expect(describeMarker(taskCancelledMarker("Chart the tides", CANCELLED_BY_PERSON))).toEqual({
      kind: "stopped",
      summary: "Stopped: you cancelled its task “Chart the tides”.",
      detail: null,
    });
    expect(describeMarker(taskCancelledMarker("Dig", STOPPED_BY_PERSON)).summary).toBe(
      "Stopped: its task “Dig” was cancelled — stopped by you.",
    );
    expect(
      describeMarker(taskCancelledMarker("Dig", "Its parent task failed: The model did not answer in time.")).summary,
    ).toBe("Stopped: its task “Dig” was cancelled — its parent task failed: The model did not answer in time.");
    for (const marker of [
      taskCancelledMarker("Dig", CANCELLED_BY_PERSON),
      taskCancelledMarker("Dig", STOPPED_BY_PERSON),
    ]) {
      expect(enginePhrasesIn(JSON.stringify(describeMarker(marker)))).toEqual([]);
      expect(describeProblem(marker).summary).toBe(describeMarker(marker).summary);
    }
  });

  it("turns ids into names, links where they have a page, and drops id marks", () => {
    const names = { [AGENT]: { name: "Scout", href: `/agents/${AGENT}` } };
    expect(withoutIds(`Delegated with agentId: ${AGENT}`, names)).toBe(`Delegated with [Scout](/agents/${AGENT})`);
    expect(withoutIds(`Retry of task ${TASK}`)).toBe("Retry of task another item");
    expect(withoutIds(`Done (task id: ${TASK}).`)).toBe("Done.");
  });

  it("names tools by what they do in inbox titles, snippets and alerts", () => {
    expect(inboxTitle("Scout wants to use tavilySearch")).toBe("Scout wants to search the web");
    expect(plainSnippet(`Task from your lead (task id: ${TASK}): Research \uE000batteries\uE001`)).toBe(
      "Task from the lead: Research \uE000batteries\uE001",
    );
    expect(plainText(`**Scout** stopped.\n\nFailed query: select 1 from x\n\nSee the log.`)).toBe(
      "**Scout** stopped.\n\nThe database was unavailable, so this could not be finished.\n\nSee the log.",
    );
  });
});
