import type {
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
} from "@ai-sdk/provider";
import { MockLanguageModelV4 } from "ai/test";

const usage = (input = 10, output = 5) => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

export function textReply(text: string): LanguageModelV4GenerateResult {
  return {
    content: [{ type: "text", text }],
    finishReason: { unified: "stop", raw: undefined },
    usage: usage(),
    warnings: [],
  };
}

let callCounter = 0;
export function toolCallReply(
  toolName: string,
  args: object,
  toolCallId = `call_${++callCounter}`,
): LanguageModelV4GenerateResult {
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
        : message.content
            .map((part) =>
              "text" in part
                ? part.text
                : "output" in part
                  ? JSON.stringify(part.output)
                  : "input" in part
                    ? JSON.stringify(part.input)
                    : "",
            )
            .join(" "),
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
  work: (
    options: LanguageModelV4CallOptions,
    call: number,
  ) => LanguageModelV4GenerateResult | Promise<LanguageModelV4GenerateResult>,
  extras: {
    summarize?: (options: LanguageModelV4CallOptions) => string;
    extract?: (options: LanguageModelV4CallOptions) => string;
  } = {},
) {
  let workCalls = 0;
  return new MockLanguageModelV4({
    doGenerate: async (options) => {
      if (options.responseFormat?.type === "json") return textReply(extras.extract?.(options) ?? '{"items":[]}');
      // Compaction: no tools, or the conversation's tools of which none may be called.
      if (!options.tools?.length || options.toolChoice?.type === "none")
        return textReply(extras.summarize?.(options) ?? "Summary: the work so far.");
      return work(options, workCalls++);
    },
  });
}

/** A generate result as the stream a chat reads: the same content, in stream parts. */
function toStream(generated: LanguageModelV4GenerateResult): ReadableStream<LanguageModelV4StreamPart> {
  const parts: LanguageModelV4StreamPart[] = [{ type: "stream-start", warnings: [] }];
  for (const content of generated.content) {
    if (content.type === "text") {
      parts.push(
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: content.text },
        { type: "text-end", id: "t" },
      );
    } else if (content.type === "tool-call") {
      parts.push(content);
    }
  }
  parts.push({ type: "finish", finishReason: generated.finishReason, usage: generated.usage });
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}

/** sessionModel that also streams (the chat streams; a chat resumed by a worker generates). */
export function chatAndSessionModel(work: Parameters<typeof sessionModel>[0]) {
  const model = sessionModel(work);
  let streamed = 0;
  model.doStream = async (options: LanguageModelV4CallOptions) => ({
    stream: toStream(await work(options, streamed++)),
  });
  return model;
}
