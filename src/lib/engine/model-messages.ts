import "server-only";
import type { AssistantContent, ModelMessage, ToolContent, ToolResultPart } from "ai";
import type { Message, StoredToolCall } from "@/lib/db/schema";
import type { NewMessage } from "@/lib/db/queries/messages";
import { AWAITING_APPROVAL_RESULT } from "@/lib/core/formats";

/** How a summary reads to the model: a user turn it can tell apart from the person's words. */
export const SUMMARY_PREFIX = "[Summary of the conversation so far]\n";

/** What a model is told about a tool call whose result never arrived (a crash, a stop). */
export const INTERRUPTED_RESULT = "(interrupted: this tool call did not finish and has no result)";

type StoredLike = Pick<Message, "id" | "role" | "content" | "thinking" | "toolCalls" | "toolCallId">;

/** How a context is rendered for the model. */
export type RenderOptions = {
  /** The longest tool result carried (longer ones are cut, saying so). */
  maxToolResultChars?: number;
  /** Calls waiting for the person's decision: their results say so. */
  awaitingDecision?: ReadonlySet<string>;
  /** Every call of the conversation that was held for the person, decided or not (see late results below). */
  heldForPerson?: ReadonlySet<string>;
};

/**
 * Stored messages (chain order) → AI SDK ModelMessages.
 *
 * A tool result always directly follows the assistant message that called it, even
 * when another writer's message (a subordinate's report) landed in between; that
 * message moves after the results, as providers require. A call without a stored
 * result gets an explicit "interrupted" result so the history stays valid.
 *
 * A call held for the person whose result came after the log had moved on (other input, a
 * wrap-up) keeps reading as waiting, as the model saw it while it waited: the history then
 * never changes behind the model's back, and each request extends the previous one byte for
 * byte (the prompt cache). The note on the decisions at the tail carries that result
 * (formatDecisions).
 */
export function toModelMessages(stored: readonly StoredLike[], options: RenderOptions = {}): ModelMessage[] {
  const resultsByCallId = new Map<string, StoredLike>();
  const positions = new Map<string, number>();
  for (const [index, message] of stored.entries()) {
    if (message.role === "tool" && message.toolCallId && !resultsByCallId.has(message.toolCallId)) {
      resultsByCallId.set(message.toolCallId, message);
      positions.set(message.toolCallId, index);
    }
  }

  const out: ModelMessage[] = [];
  for (const [index, message] of stored.entries()) {
    switch (message.role) {
      case "user":
      case "summary":
        out.push(
          remembered(inputMessages, message, () => ({
            role: "user",
            content: message.role === "summary" ? SUMMARY_PREFIX + message.content : message.content,
          })),
        );
        break;
      case "tool":
        // Emitted right after its call; an orphan (its call was compacted away) is dropped.
        break;
      case "assistant": {
        out.push(remembered(assistantMessages, message, () => assistantMessage(message)));
        const calls = message.toolCalls ?? [];
        if (calls.length === 0) break;
        // Results after this position came once the log had moved on.
        let movedOnAt = index + 1;
        while (movedOnAt < stored.length && stored[movedOnAt]!.role === "tool") movedOnAt += 1;
        const shown = (callId: string): StoredLike | undefined => {
          const result = resultsByCallId.get(callId);
          return result && options.heldForPerson?.has(callId) && positions.get(callId)! > movedOnAt
            ? undefined
            : result;
        };
        const awaiting = (callId: string): boolean =>
          (options.awaitingDecision?.has(callId) ?? false) ||
          (options.heldForPerson?.has(callId) === true && shown(callId) === undefined);
        out.push(toolMessageFor(message, calls, shown, awaiting, options.maxToolResultChars));
        break;
      }
    }
  }
  return out;
}

// The model messages made from a stored message are kept with it: a session's context holds
// the same stored objects from call to call, so a long context is converted (and its tool
// results parsed) once, not again before every call. Stored messages are never changed.
const inputMessages = new WeakMap<StoredLike, ModelMessage>();
const assistantMessages = new WeakMap<StoredLike, ModelMessage>();
const toolMessages = new WeakMap<StoredLike, MadeToolMessage>();

/** A tool message and what it was made of: the stored results (by identity), which calls awaited a decision, the clip limit. */
type MadeToolMessage = {
  results: (StoredLike | undefined)[];
  awaiting: boolean[];
  limit: number | undefined;
  message: ModelMessage;
};

function remembered(
  cache: WeakMap<StoredLike, ModelMessage>,
  message: StoredLike,
  make: () => ModelMessage,
): ModelMessage {
  let made = cache.get(message);
  if (!made) {
    made = make();
    cache.set(message, made);
  }
  return made;
}

function assistantMessage(message: StoredLike): ModelMessage {
  const content: Exclude<AssistantContent, string> = [];
  if (message.thinking) content.push({ type: "reasoning", text: message.thinking });
  if (message.content) content.push({ type: "text", text: message.content });
  for (const call of message.toolCalls ?? []) {
    content.push({ type: "tool-call", toolCallId: call.toolCallId, toolName: call.toolName, input: call.args ?? {} });
  }
  if (content.length === 0) content.push({ type: "text", text: "" });
  return { role: "assistant", content };
}

/**
 * The results of an assistant message's calls, as one tool message; remade only when what it is
 * made of changed. Compared in place, without building anything: it runs for every call of the
 * context before every model call.
 */
function toolMessageFor(
  message: StoredLike,
  calls: readonly StoredToolCall[],
  shown: (callId: string) => StoredLike | undefined,
  awaitingOf: (callId: string) => boolean,
  limit: number | undefined,
): ModelMessage {
  const known = toolMessages.get(message);
  if (known && known.limit === limit && sameInputs(known, calls, shown, awaitingOf)) return known.message;
  const results = calls.map((call) => shown(call.toolCallId));
  const awaiting = calls.map((call) => awaitingOf(call.toolCallId));
  const content: ToolContent = calls.map((call, index) => {
    // A call waiting for the person has no result yet, on purpose: the model is told so, not that it broke.
    const text = results[index]?.content ?? (awaiting[index] ? AWAITING_APPROVAL_RESULT : undefined);
    return toolResultPart(call, clip(text, limit));
  });
  const made: ModelMessage = { role: "tool", content };
  toolMessages.set(message, { results, awaiting, limit, message: made });
  return made;
}

function sameInputs(
  known: MadeToolMessage,
  calls: readonly StoredToolCall[],
  shown: (callId: string) => StoredLike | undefined,
  awaitingOf: (callId: string) => boolean,
): boolean {
  for (let index = 0; index < calls.length; index++) {
    const callId = calls[index]!.toolCallId;
    if (known.results[index] !== shown(callId) || known.awaiting[index] !== awaitingOf(callId)) return false;
  }
  return true;
}

function clip(content: string | undefined, limit: number | undefined): string | undefined {
  if (content === undefined || limit === undefined || content.length <= limit) return content;
  return `${content.slice(0, limit)} …(result cut to ${limit} characters)`;
}

function toolResultPart(call: StoredToolCall, content: string | undefined): ToolResultPart {
  if (content === undefined) {
    return {
      type: "tool-result",
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      output: { type: "error-text", value: INTERRUPTED_RESULT },
    };
  }
  return {
    type: "tool-result",
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    output: parseToolOutput(content),
  };
}

/** Tool results are stored as text; JSON text goes back to the model as JSON. */
function parseToolOutput(content: string): ToolResultPart["output"] {
  const trimmed = content.trimStart();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      return { type: "json", value: JSON.parse(content) };
    } catch {
      // Not JSON after all: plain text.
    }
  }
  return { type: "text", value: content };
}

/** A tool's output as stored text. */
export function toolOutputToText(output: unknown): string {
  if (typeof output === "string") return output;
  if (output && typeof output === "object" && "type" in output && "value" in output) {
    const { type, value } = output as { type: string; value: unknown };
    if (type === "text" || type === "error-text") return String(value);
    if (type === "json" || type === "error-json") return JSON.stringify(value);
  }
  return JSON.stringify(output ?? null);
}

/**
 * AI SDK ModelMessages → rows to store, in order. Inverse of toModelMessages for
 * everything a model needs: text, reasoning, tool calls with their input, results.
 */
export function fromModelMessages(modelMessages: readonly ModelMessage[]): NewMessage[] {
  const out: NewMessage[] = [];
  for (const message of modelMessages) {
    switch (message.role) {
      case "system":
        // Instructions are built from the agent each time; never stored (seed 004).
        break;
      case "user": {
        const text =
          typeof message.content === "string"
            ? message.content
            : message.content.map((part) => (part.type === "text" ? part.text : "")).join("");
        if (text.startsWith(SUMMARY_PREFIX)) out.push({ role: "summary", content: text.slice(SUMMARY_PREFIX.length) });
        else out.push({ role: "user", content: text });
        break;
      }
      case "assistant": {
        if (typeof message.content === "string") {
          out.push({ role: "assistant", content: message.content });
          break;
        }
        let text = "";
        let thinking = "";
        const toolCalls: StoredToolCall[] = [];
        for (const part of message.content) {
          if (part.type === "text") text += part.text;
          else if (part.type === "reasoning") thinking += part.text;
          else if (part.type === "tool-call")
            toolCalls.push({ toolCallId: part.toolCallId, toolName: part.toolName, args: part.input });
        }
        out.push({
          role: "assistant",
          content: text,
          thinking: thinking || null,
          toolCalls: toolCalls.length ? toolCalls : null,
        });
        break;
      }
      case "tool":
        for (const part of message.content) {
          if (part.type === "tool-result") {
            out.push({ role: "tool", toolCallId: part.toolCallId, content: toolOutputToText(part.output) });
          }
        }
        break;
    }
  }
  return out;
}
