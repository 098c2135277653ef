import {
  APICallError,
  InvalidToolInputError,
  JSONParseError,
  NoObjectGeneratedError,
  NoOutputGeneratedError,
  NoSuchToolError,
  RetryError,
  TypeValidationError,
} from "ai";
import { DrizzleQueryError } from "drizzle-orm";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { CadreError } from "@/lib/errors";
import { describeModelError, isModelFailure, ModelTimeoutError } from "./errors";

const serverError = () =>
  new APICallError({
    message: "Internal Server Error",
    url: "http://127.0.0.1:1234/v1/chat/completions",
    requestBodyValues: {},
    statusCode: 500,
    isRetryable: true,
  });
// postgres-js builds its errors from the server's fields; its types declare only Error's constructor.
const uniqueViolation = () =>
  new postgres.PostgresError({ message: "duplicate key value violates unique constraint", code: "23505" } as never);

describe("isModelFailure", () => {
  it.each([
    ["an API error", serverError()],
    [
      "retries given up",
      new RetryError({ message: "Failed after 3 attempts", reason: "maxRetriesExceeded", errors: [serverError()] }),
    ],
    [
      "a tool call with bad input",
      new InvalidToolInputError({ toolName: "tavilySearch", toolInput: '{"query": "ca', cause: new Error("bad json") }),
    ],
    [
      "a call to a tool that does not exist",
      new NoSuchToolError({ toolName: "launchMissiles", availableTools: ["tavilySearch"] }),
    ],
    [
      "output that fails its schema",
      new TypeValidationError({ value: { items: "no" }, cause: new Error("expected array") }),
    ],
    ["output that is not JSON", new JSONParseError({ text: "{", cause: new Error("Unexpected end") })],
    [
      "no structured output",
      new NoObjectGeneratedError({
        response: { id: "r", timestamp: new Date(), modelId: "m" },
        usage: {
          inputTokens: 1,
          outputTokens: 1,
          totalTokens: 2,
          inputTokenDetails: { noCacheTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
          outputTokenDetails: { textTokens: 1, reasoningTokens: 0 },
        },
        finishReason: "stop",
      }),
    ],
    ["no output at all", new NoOutputGeneratedError()],
    ["our per-call timeout", new ModelTimeoutError(1000)],
    ["the SDK's own timeout option", new DOMException("Step timeout of 1000ms exceeded", "TimeoutError")],
  ])("is true for %s", (_name, error) => {
    expect(isModelFailure(error)).toBe(true);
  });

  it.each([
    ["a Postgres error", uniqueViolation()],
    ["a query error caused by Postgres", new DrizzleQueryError("insert into usage …", [], uniqueViolation())],
    [
      "an SDK error caused by Postgres",
      new NoOutputGeneratedError({
        message: "step failed",
        cause: new DrizzleQueryError("select …", [], uniqueViolation()),
      }),
    ],
    ["the caller's abort (a Stop)", new DOMException("This operation was aborted", "AbortError")],
    ["our own error type", new CadreError("conflict:message_chain", "The conversation moved on.")],
    ["a bug", new TypeError("Cannot read properties of undefined (reading 'id')")],
    ["an error named like an SDK error", Object.assign(new Error("AI_APICallError"), { name: "AI_APICallError" })],
    ["not an error", "AI_APICallError"],
    ["nothing", undefined],
  ])("is false for %s", (_name, error) => {
    expect(isModelFailure(error)).toBe(false);
  });
});

describe("describeModelError", () => {
  it("says a timed-out call did not answer in time, and how long it had", () => {
    expect(describeModelError(new ModelTimeoutError(120_000))).toBe(
      "The model server did not answer in time (120 s). Try again, or raise MODEL_TIMEOUT_MS for a slow local model.",
    );
  });

  it("reads the last attempt of retries given up", () => {
    const error = new RetryError({
      message: "Failed after 3 attempts",
      reason: "maxRetriesExceeded",
      errors: [serverError(), serverError()],
    });
    expect(describeModelError(error)).toBe("The model server failed (HTTP 500). Try again in a moment.");
  });

  it("says a timeout on the last attempt is a timeout", () => {
    const error = new RetryError({
      message: "Failed after 2 attempts",
      reason: "errorNotRetryable",
      errors: [serverError(), new ModelTimeoutError(500)],
    });
    expect(describeModelError(error)).toMatch(/^The model server did not answer in time \(500 ms\)/);
  });
});
