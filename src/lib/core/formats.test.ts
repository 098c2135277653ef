import { describe, expect, it } from "vitest";
import {
  CANCELLED_BY_PERSON,
  formatLogInput,
  isFailedToolResult,
  isStoppedMarker,
  logInputLikePatterns,
  parseLogInput,
  parseTaskCancelledMarker,
  splitMarker,
  taskCancelledMarker,
  type LogInput,
} from "./formats";

const id = "0b6a3c52-6f0e-4d7b-9a55-2f1c1d9e8a10";
const samples: LogInput[] = [
  { kind: "task", taskId: id, from: "the person", title: "Research storage", description: "Prices and players." },
  { kind: "report", agentName: "Scout", taskId: id, result: "Findings: prices fell." },
  { kind: "report", agentName: "Scout", taskId: null, result: "Findings outside a task." },
  { kind: "failed", agentName: "Scout", taskId: id, reason: "The model did not answer." },
  { kind: "cancelled", agentName: "Scout", taskId: id, reason: "The person cancelled it." },
  { kind: "removed", agentName: "Scout", taskId: id },
  { kind: "question", agentName: "Scout", agentId: id, questionId: id, question: "Which market?" },
  { kind: "answer", leadName: "Ada", questionId: id, answer: "Europe." },
  { kind: "person-answer", questionId: id, answer: "Europe." },
  { kind: "task-cancelled", taskId: id, title: "Research storage", reason: "The person cancelled it." },
  { kind: "outcome-unknown", agentName: "Scout", toolName: "memory__create_entities" },
  { kind: "webhook", name: "ci", body: "Build failed." },
];

/** SQL LIKE as a regex: `%` is any run of characters, `_` any one. */
const like = (pattern: string) =>
  new RegExp(
    `^${pattern
      .replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
      .replaceAll("%", "[\\s\\S]*")
      .replaceAll("_", "[\\s\\S]")}$`,
  );

describe("logInputLikePatterns", () => {
  it.each(samples.map((sample) => [sample.kind, sample] as const))(
    "tells %s apart in SQL as parseLogInput does",
    (_kind, sample) => {
      const text = formatLogInput(sample);
      expect(parseLogInput(text)?.kind).toBe(sample.kind);
      // The first pattern that matches (a SQL CASE) names the same kind.
      expect(logInputLikePatterns.find(({ pattern }) => like(pattern).test(text))?.kind).toBe(sample.kind);
    },
  );

  it("matches nothing an agent writes in its own words", () => {
    for (const text of ["Delegated the task to Scout.", "No briefing needed.", "(error: the model did not answer)"]) {
      expect(logInputLikePatterns.some(({ pattern }) => like(pattern).test(text))).toBe(false);
    }
  });
});

describe("taskCancelledMarker", () => {
  it("reads back as a marker of its own, with its title and reason, never as the person's Stop", () => {
    for (const title of ["Chart the tides", "Compare “A”. Then “B”. (draft)", "a\nmulti-line title"]) {
      for (const reason of [CANCELLED_BY_PERSON, "Its parent task failed: The model did not answer in time."]) {
        const marker = taskCancelledMarker(title, reason);
        expect(splitMarker(`Half an answer\n\n${marker}`)).toEqual({ text: "Half an answer", marker });
        expect(parseTaskCancelledMarker(marker)).toEqual({ title, reason });
        expect(isStoppedMarker(marker)).toBe(false);
        // Given to a call it cut off, it reads as a call that did not do its work.
        expect(isFailedToolResult(marker)).toBe(true);
      }
    }
    expect(parseTaskCancelledMarker("(stopped by the person)")).toBeNull();
  });
});
