import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult, LanguageModelV4Prompt } from "@ai-sdk/provider";
import { MockLanguageModelV4 } from "ai/test";

const usage = (input = 10, output = 5) => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

export function textReply(text: string): LanguageModelV4GenerateResult {
  return { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: undefined }, usage: usage(), warnings: [] };
}

let callCounter = 0;
export function toolCallReply(toolName: string, args: object, toolCallId = `call_${++callCounter}`): LanguageModelV4GenerateResult {
  return {
    content: [{ type: "tool-call", toolCallId, toolName, input: JSON.stringify(args) }],
    finishReason: { unified: "tool-calls", raw: undefined },
    usage: usage(),
    warnings: [],
  };
}

/** The text of every message in a prompt, for assertions about what the model saw. */
export function promptText(prompt: LanguageModelV4Prompt): string {
  return prompt
    .map((message) =>
      typeof message.content === "string"
        ? message.content
        : message.content.map((part) => ("text" in part ? part.text : "output" in part ? JSON.stringify(part.output) : "input" in part ? JSON.stringify(part.input) : "")).join(" "),
    )
    .join("\n");
}

export function offeredTools(options: LanguageModelV4CallOptions): string[] {
  return (options.tools ?? []).map((tool) => tool.name);
}

/**
 * A mock model for work sessions: `work` decides the tool loop; knowledge extraction
 * (structured output) gets no items and compaction (no tools) gets a short summary,
 * unless the test overrides them.
 */
export function sessionModel(
  work: (options: LanguageModelV4CallOptions, call: number) => LanguageModelV4GenerateResult | Promise<LanguageModelV4GenerateResult>,
  extras: { summarize?: (options: LanguageModelV4CallOptions) => string; extract?: (options: LanguageModelV4CallOptions) => string } = {},
) {
  let workCalls = 0;
  return new MockLanguageModelV4({
    doGenerate: async (options) => {
      if (options.responseFormat?.type === "json") return textReply(extras.extract?.(options) ?? '{"items":[]}');
      if (!options.tools?.length) return textReply(extras.summarize?.(options) ?? "Summary: the work so far.");
      return work(options, workCalls++);
    },
  });
}
