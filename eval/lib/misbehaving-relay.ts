// The eval under a misbehaving server (`npm run eval -- --server-misbehaves MODE`): the team's
// model requests go through `@ai-sdk/openai` over HTTP to the project's fake OpenAI-compatible
// server, misbehaving in one of its ways, while the answers come from the offline model, so the
// scores compare with the offline baseline and differ only by what the server did wrong.
import { createHash } from "node:crypto";
import type {
  JSONSchema7,
  LanguageModelV4CallOptions,
  LanguageModelV4Message,
  LanguageModelV4ToolChoice,
  LanguageModelV4ToolResultOutput,
} from "@ai-sdk/provider";
import { OfflineModel } from "../../src/lib/llm/offline-model";
import {
  startFakeOpenAI,
  type AnswerModes,
  type FakeChatMessage,
  type FakeChatRequest,
  type FakeMisbehaviour,
  type FakeOpenAIOptions,
  type FakeReply,
} from "../../tests/support/fake-openai";

/**
 * How the server misbehaves, by the fake's names (tests/support/fake-openai.ts says what each
 * does); `none` is the same relay behaving well, to tell the HTTP path from the misbehaviour.
 */
export const SERVER_MODES = [
  "none",
  "ignoreToolChoice",
  "strictRoles",
  "noUsage",
  "emptyAnswers",
  "lengthCut",
  "noTools",
] as const;
export type ServerMode = (typeof SERVER_MODES)[number];

/** The model name the usage rows carry: the answers are the offline model's, priced as it is (nothing), its tokens compared with its own. */
const RELAY_MODEL = "offline";

/**
 * Empty and cut answers come one request in this many, as a small model gets some answers
 * wrong: every answer wrong would leave nothing to measure but the failure (noTools does that).
 */
const ONE_IN = 4;

/**
 * Whether a request is one of those, picked by its content with the run's ids and ports
 * masked: a run picks the same requests again, whichever missions and agents ran at once.
 */
function pickedByContent(request: FakeChatRequest): boolean {
  const content = JSON.stringify([request.messages, request.tools, request.tool_choice])
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, "id")
    .replace(/offline-[0-9a-z]+/g, "call")
    .replace(/127\.0\.0\.1:\d+/g, "web");
  return createHash("sha256").update(content).digest().readUInt32BE(0) % ONE_IN === 0;
}

function fakeOptions(mode: ServerMode): FakeOpenAIOptions {
  const answerModes: Record<string, AnswerModes> = {
    noUsage: { noUsage: true },
    emptyAnswers: { emptyAnswers: pickedByContent },
    lengthCut: { lengthCut: pickedByContent },
    noTools: { noTools: true },
  };
  const misbehaviours: FakeMisbehaviour[] = mode === "ignoreToolChoice" || mode === "strictRoles" ? [mode] : [];
  return { record: false, misbehaviours, answerModes: answerModes[mode] };
}

export type MisbehavingRelay = {
  /** The model settings that point a worker (and the lead's chat) at the relay. */
  modelEnv: Record<string, string>;
  close(): Promise<void>;
};

export async function startMisbehavingRelay(mode: ServerMode, log: (line: string) => void): Promise<MisbehavingRelay> {
  const model = new OfflineModel();
  const server = await startFakeOpenAI(async (request) => {
    try {
      return replyOf(await model.doGenerate(callOptionsOf(request)));
    } catch (error) {
      // A request the relay could not answer is the eval's own fault, not the server's misbehaviour: said here,
      // and a 500 for the engine, which reports it as a failed model call.
      log(
        `[eval] the relay could not answer a request: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      return { fault: "status", status: 500, body: { error: { message: String(error), type: "relay_error" } } };
    }
  }, fakeOptions(mode));
  return {
    modelEnv: { OPENAI_BASE_URL: server.url, OPENAI_API_KEY: "eval-relay", LLM_MODEL: RELAY_MODEL },
    close: async () => {
      // What the misbehaviour did, beside the scores: how often a strict template refused the engine's requests.
      if (server.refusals.length)
        log(`[eval] the server refused ${server.refusals.length} requests: ${server.refusals[0]!.reason}`);
      await server.close();
    },
  };
}

/** A Chat Completions request as the LanguageModelV4 call `@ai-sdk/openai` made it from. */
function callOptionsOf(request: FakeChatRequest): LanguageModelV4CallOptions {
  const toolNames = new Map<string, string>();
  const prompt = request.messages.map((message) => messageOf(message, toolNames));
  const format = request.response_format as { type?: string; json_schema?: { schema?: JSONSchema7 } } | undefined;
  return {
    prompt,
    tools: request.tools?.map((tool) => ({
      type: "function" as const,
      name: tool.function.name,
      description: tool.function.description,
      inputSchema: (tool.function.parameters ?? {}) as JSONSchema7,
    })),
    toolChoice: toolChoiceOf(request.tool_choice),
    responseFormat:
      format?.type === "json_schema" || format?.type === "json_object"
        ? { type: "json", schema: format.json_schema?.schema }
        : undefined,
  };
}

function messageOf(message: FakeChatMessage, toolNames: Map<string, string>): LanguageModelV4Message {
  const text = textOf(message.content);
  switch (message.role) {
    case "system":
    case "developer":
      return { role: "system", content: text };
    case "assistant": {
      const calls = (message.tool_calls ?? []).map((call) => {
        toolNames.set(call.id, call.function.name);
        return {
          type: "tool-call" as const,
          toolCallId: call.id,
          toolName: call.function.name,
          input: argumentsOf(call.function.arguments),
        };
      });
      return { role: "assistant", content: [...(text ? [{ type: "text" as const, text }] : []), ...calls] };
    }
    case "tool": {
      const id = message.tool_call_id ?? "";
      return {
        role: "tool",
        content: [{ type: "tool-result", toolCallId: id, toolName: toolNames.get(id) ?? "", output: outputOf(text) }],
      };
    }
    default:
      return { role: "user", content: [{ type: "text", text }] };
  }
}

/** A call's arguments as the object they were sent from; text that is not JSON (a cut answer's) as it came. */
function argumentsOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * A tool result's text back as the output it was sent from: `@ai-sdk/openai` sends JSON as its
 * text and an error as `{"error": …}`, which is how the offline model tells a failed call.
 */
function outputOf(text: string): LanguageModelV4ToolResultOutput {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { type: "text", value: text };
  }
  if (typeof value !== "object" || value === null) return { type: "text", value: text };
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0] === "error") {
    const error = (value as { error: unknown }).error;
    return typeof error === "string"
      ? { type: "error-text", value: error }
      : { type: "error-json", value: error as never };
  }
  return { type: "json", value: value as never };
}

function toolChoiceOf(choice: unknown): LanguageModelV4ToolChoice | undefined {
  if (choice === "none" || choice === "auto" || choice === "required") return { type: choice };
  const named = (choice as { function?: { name?: string } } | undefined)?.function?.name;
  return named ? { type: "tool", toolName: named } : undefined;
}

function textOf(content: FakeChatMessage["content"]): string {
  if (!content) return "";
  if (typeof content === "string") return content;
  return content.map((part) => (part.type === "text" ? (part.text ?? "") : "")).join("");
}

/** The offline model's answer as the fake server sends it: its text, its calls with their ids, its token counts. */
function replyOf(result: Awaited<ReturnType<OfflineModel["doGenerate"]>>): FakeReply {
  const text = result.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("");
  const toolCalls = result.content.flatMap((part) =>
    part.type === "tool-call"
      ? [{ id: part.toolCallId, name: part.toolName, arguments: JSON.parse(part.input) as object }]
      : [],
  );
  return {
    text,
    toolCalls,
    usage: {
      prompt_tokens: result.usage.inputTokens.total ?? 0,
      completion_tokens: result.usage.outputTokens.total ?? 0,
    },
  };
}
