// classifyEnding, branch by branch, without a database: what a session's run returned or threw
// decides how it ends (the ending endWorkSession writes, a takeover, a deletion, or a retry).
import { APICallError } from "ai";
import { describe, expect, it } from "vitest";
import { SessionTakenOver } from "@/lib/db/queries/messages";
import { ModelTimeoutError } from "@/lib/llm/errors";
import { BudgetExceeded, TeamOverBudget } from "@/lib/domain/budgets";
import { budgetMarker, errorMarker, stepLimitMarker } from "@/lib/core/formats";
import { classifyEnding, interruptionText, type SessionRun } from "./session-ending";
import { StepLimitReached, ToolCallsAsText, UnusableAnswers } from "./work-loop";

const team = { id: "team-1", name: "Scouts", dailyTokenBudget: 1000, dailyCostBudgetUsd: null };
const started = { team, steps: 7 };
const threw = (error: unknown, more: Partial<Extract<SessionRun, { threw: unknown }>> = {}) =>
  classifyEnding({ threw: error, started, ...more });

/** An error as drizzle wraps a failed query, its cause carrying Postgres's SQLSTATE. */
function failedQuery(code: string, message: string): Error {
  const cause = Object.assign(new Error(message), { code });
  return new Error("Failed query: insert into messages values ($1)\nparams: secret", { cause });
}

const modelDown = () =>
  new APICallError({ message: "Bad gateway", url: "http://model/v1", requestBodyValues: {}, statusCode: 502 });

describe("classifyEnding: what the work loop returned", () => {
  it("nothing left: the loop ended the session itself", () => {
    expect(classifyEnding({ returned: "completed", started })).toEqual({ kind: "idle" });
  });

  it("the worker shuts down: interrupted, another worker continues", () => {
    expect(classifyEnding({ returned: "interrupted", started })).toEqual({
      kind: "end",
      ending: { status: "interrupted", reason: "The worker shut down; another worker continues." },
    });
  });

  it("the step limit between turns: handed over to a new session, saying after how many rounds", () => {
    expect(classifyEnding({ returned: "handed-over", started })).toEqual({
      kind: "end",
      ending: {
        status: "interrupted",
        reason: "Handed over to a new session after 7 tool rounds (MAX_STEPS_PER_SESSION).",
      },
    });
  });

  it("the team over budget before any work was taken: its work waits, and the log gets no marker", () => {
    expect(classifyEnding({ returned: { overBudget: "the team used 1,200 tokens today" }, started })).toEqual({
      kind: "end",
      ending: { status: "over-budget", reason: "the team used 1,200 tokens today", marker: null, team },
    });
  });
});

describe("classifyEnding: what the run threw", () => {
  it("a deletion under the session explains any failure, even one that reads as a takeover", () => {
    expect(threw(new SessionTakenOver("s-1"), { deleted: "team-deleted", stopReason: "lost" })).toEqual({
      kind: "deleted",
      deleted: "team-deleted",
    });
    expect(threw(modelDown(), { deleted: "agent-deleted", started: null })).toEqual({
      kind: "deleted",
      deleted: "agent-deleted",
    });
  });

  it("taken over, by the heartbeat's reading or found by a write: nothing more is written", () => {
    expect(threw(new Error("aborted"), { stopReason: "lost" })).toEqual({ kind: "lost" });
    expect(threw(new SessionTakenOver("s-1"), { started: null })).toEqual({ kind: "lost" });
    // Lost wins over the person's Stop: a session that lost its lease ends nothing.
    expect(threw(new SessionTakenOver("s-1"), { stopReason: "user" })).toEqual({ kind: "lost" });
  });

  it("the person's Stop ends the session as stopped, whatever the abort surfaced as", () => {
    expect(threw(modelDown(), { stopReason: "user" })).toEqual({ kind: "end", ending: { status: "stopped" } });
  });

  it("the step limit mid-turn fails what the session was on, with the limit's marker", () => {
    expect(threw(new StepLimitReached(25))).toEqual({
      kind: "end",
      ending: {
        status: "failed",
        reason: "The session reached its limit of 25 tool rounds.",
        marker: stepLimitMarker(25),
      },
    });
  });

  it("the team's budget running out mid-turn: its work waits, the cut turn gets a marker", () => {
    const reason = "the team used 1,200 tokens today, over its daily token budget of 1,000";
    expect(threw(new TeamOverBudget(reason))).toEqual({
      kind: "end",
      ending: { status: "over-budget", reason, marker: budgetMarker(reason), team },
    });
  });

  it("the session's own token budget fails what it was on", () => {
    const reason = "This session used 2,000 tokens, over its budget of 1,000.";
    expect(threw(new BudgetExceeded(reason))).toEqual({
      kind: "end",
      ending: { status: "failed", reason, marker: budgetMarker(reason) },
    });
  });

  it("a model error fails what the session was on, in words the person can act on, and is logged", () => {
    const error = modelDown();
    const reason = "The model server failed (HTTP 502). Try again in a moment.";
    expect(threw(error)).toEqual({
      kind: "end",
      ending: { status: "failed", reason, marker: errorMarker(reason) },
      log: { line: "model failure", error },
    });
  });

  it("a model call that ran out of time is a model failure too", () => {
    const ending = threw(new ModelTimeoutError(30_000));
    expect(ending).toMatchObject({ kind: "end", ending: { status: "failed" }, log: { line: "model failure" } });
    expect(ending.kind === "end" && ending.ending.status === "failed" && ending.ending.reason).toMatch(/30 s/);
  });

  it("a model that cannot call tools fails what the session was on once, naming the model and what to choose", () => {
    const error = new APICallError({
      message: "registry.ollama.ai/library/tiny does not support tools",
      url: "http://model/v1/chat/completions",
      requestBodyValues: { model: "tiny" },
      statusCode: 400,
      isRetryable: false,
    });
    const ending = threw(error);
    expect(ending).toMatchObject({
      kind: "end",
      ending: { status: "failed", modelWithoutTools: "tiny" },
      log: { line: "model failure" },
    });
    const reason = ending.kind === "end" && ending.ending.status === "failed" ? ending.ending.reason : "";
    expect(reason).toMatch(/^The model tiny cannot call tools/);
    expect(reason).toMatch(/Choose a model that supports tool calling, in LLM_MODEL or as this agent's own model\./);
  });

  it("any other model error names no model without tools", () => {
    expect(threw(modelDown())).not.toHaveProperty("ending.modelWithoutTools");
  });

  it("a model that kept sending calls nothing could run fails what the session was on, in words", () => {
    const error = new UnusableAnswers("tiny", 3);
    expect(threw(error)).toEqual({
      kind: "end",
      ending: { status: "failed", reason: error.message, marker: errorMarker(error.message) },
    });
    expect(error.message).toMatch(/^The model tiny sent 3 answers in a row that could not be used/);
  });

  it("a model that writes its tool calls as text ends its agent's work as one without tools does, in words", () => {
    const error = new ToolCallsAsText("tiny");
    expect(threw(error)).toEqual({
      kind: "end",
      ending: {
        status: "failed",
        reason: error.message,
        marker: errorMarker(error.message),
        modelWithoutTools: "tiny",
      },
    });
    expect(error.message).toMatch(
      /^The model tiny writes its tool calls as text.*Choose a model that supports tool calling/,
    );
  });

  it("work the database refuses to store fails visibly instead of being retried without end", () => {
    const error = failedQuery("22021", 'invalid byte sequence for encoding "UTF8": 0x00');
    expect(threw(error)).toEqual({
      kind: "end",
      ending: {
        status: "failed",
        reason: `The agent's work could not be stored: invalid byte sequence for encoding "UTF8": 0x00`,
        marker: errorMarker(`The agent's work could not be stored: invalid byte sequence for encoding "UTF8": 0x00`),
      },
      log: { line: "could not store the agent's work", error },
    });
  });

  it("the database gone: retried, the interruption saying so, logged without a stack", () => {
    const error = failedQuery("57P01", "terminating connection due to administrator command");
    expect(threw(error)).toEqual({
      kind: "retry",
      interruption:
        "The database could not be reached (it closed the connection); the work is taken up again when it is back.",
      log: { line: "lost the database (it closed the connection); the agent's work is retried" },
    });
  });

  it("anything else is retried, logged with its error; the interruption shows no SQL or parameters", () => {
    const bug = new TypeError("Cannot read properties of undefined (reading 'id')");
    expect(threw(bug)).toEqual({
      kind: "retry",
      interruption: "Cannot read properties of undefined (reading 'id'); the work is taken up again.",
      log: { line: "ended by an unexpected error; the agent's work is retried", error: bug },
    });
    const deadlock = failedQuery("40P01", "deadlock detected\nDETAIL: Process 1 waits");
    expect(threw(deadlock)).toMatchObject({
      kind: "retry",
      interruption: "A database error (deadlock detected); the work is taken up again.",
    });
    expect(JSON.stringify(threw(deadlock))).not.toMatch(/insert into|secret/);
  });

  it("a session that failed before it read its start has nothing to end: even a Stop or a model error is retried", () => {
    expect(threw(modelDown(), { started: null, stopReason: "user" })).toMatchObject({ kind: "retry" });
    expect(threw(new StepLimitReached(25), { started: null })).toMatchObject({ kind: "retry" });
    expect(threw(new TeamOverBudget("over"), { started: null })).toMatchObject({ kind: "retry" });
  });

  it("interruptionText never shows a query's parameters", () => {
    expect(interruptionText(failedQuery("23505", "duplicate key value"))).toBe(
      "A database error (duplicate key value); the work is taken up again.",
    );
  });
});
