// The work loop's pure readings of a model's answer, without a database.
import { describe, expect, it } from "vitest";
import { writesToolCallAsText } from "./work-loop";

describe("writesToolCallAsText: a tool call printed instead of made", () => {
  it("reads a call, or a list of calls, written out as JSON, in a code fence or not", () => {
    expect(writesToolCallAsText('{"name": "delegateToAgent", "arguments": {"agentId": "a", "title": "t"}}')).toBe(true);
    expect(writesToolCallAsText('```json\n{"name": "searchKnowledge", "parameters": {"query": "x"}}\n```')).toBe(true);
    expect(
      writesToolCallAsText('[{"type": "function", "function": {"name": "reportToLead", "arguments": "{}"}}]'),
    ).toBe(true);
  });

  it("leaves words, and JSON that is a result rather than a call, as the answer they are", () => {
    expect(writesToolCallAsText("Solar prices fell 12% this year.")).toBe(false);
    expect(writesToolCallAsText('{"findings": ["solar fell"], "confidence": 0.8}')).toBe(false);
    expect(writesToolCallAsText('{"name": "Solar report"}')).toBe(false);
    expect(writesToolCallAsText('{"name": "x", "arguments": ')).toBe(false);
    expect(writesToolCallAsText("[]")).toBe(false);
  });
});
