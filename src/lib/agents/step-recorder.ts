import { asSchema, type ToolSet } from "ai";
import type { Db } from "@/lib/db/client";
import { isUniqueViolation } from "@/lib/db/errors";
import { appendMessage, getConversationContext, type NewMessage } from "@/lib/db/queries/messages";
import type { Message, StoredToolCall } from "@/lib/db/schema";
import { INTERRUPTED_RESULT, toolOutputToText } from "./model-messages";

type ResponsePart = { type: string; text?: string; toolCallId?: string; toolName?: string; input?: unknown };

/**
 * Persists a tool loop as it happens: the assistant row with its tool calls as soon
 * as the model has answered (before any tool runs), then each tool's result in its
 * own row the moment that tool finishes. A crash loses at most the step in flight.
 */
export class StepRecorder {
  /** Calls of the latest assistant row that have no stored result yet. */
  private readonly openCalls = new Map<string, string>();
  private lastAssistant: Promise<Message | null> = Promise.resolve(null);
  readonly executedTools: string[] = [];
  toolCallCount = 0;

  constructor(
    private readonly db: Db,
    private readonly conversationId: string,
  ) {}

  /** Stores the model's answer for one step (text, reasoning, tool calls). */
  recordModelResponse(content: readonly ResponsePart[]): Promise<Message | null> {
    let text = "";
    let thinking = "";
    const toolCalls: StoredToolCall[] = [];
    for (const part of content) {
      if (part.type === "text" && part.text) text += part.text;
      else if (part.type === "reasoning" && part.text) thinking += part.text;
      else if (part.type === "tool-call" && part.toolCallId && part.toolName) {
        toolCalls.push({ toolCallId: part.toolCallId, toolName: part.toolName, args: part.input ?? {} });
      }
    }
    for (const call of toolCalls) this.openCalls.set(call.toolCallId, call.toolName);
    this.toolCallCount += toolCalls.length;
    const row: NewMessage = { role: "assistant", content: text, thinking: thinking || null, toolCalls: toolCalls.length ? toolCalls : null };
    // Committed lazily: its tool's result, committed durably, flushes it too; a Postgres
    // crash before that loses only this step, the one in flight.
    this.lastAssistant = appendMessage(this.db, this.conversationId, row, { lazyCommit: true });
    return this.lastAssistant;
  }

  /** Stores what the text of an unfinished step was, when it was cut off. */
  async recordPartialText(text: string, marker: string): Promise<void> {
    await appendMessage(this.db, this.conversationId, { role: "assistant", content: text ? `${text}\n\n${marker}` : marker });
  }

  private async recordResult(toolCallId: string, content: string): Promise<void> {
    if (!this.openCalls.has(toolCallId)) return;
    this.openCalls.delete(toolCallId);
    try {
      await appendMessage(this.db, this.conversationId, { role: "tool", toolCallId, content });
    } catch (error) {
      // Someone (a redelivered run of this step) recorded it first: one result is the point.
      if (!isUniqueViolation(error)) throw error;
    }
  }

  /**
   * Runs a tool's database writes and records its result in one transaction, the
   * way durable-execution systems record a step: after a crash either both exist or
   * neither, so the effect happens once. A second run of the same call (same
   * toolCallId) finds the result taken and rolls its writes back.
   */
  async runEffect<T>(toolCallId: string, write: (tx: Db) => Promise<T>): Promise<T> {
    await this.lastAssistant;
    const output = await this.db.transaction(async (tx) => {
      const result = await write(tx);
      if (this.openCalls.has(toolCallId)) {
        await appendMessage(tx, this.conversationId, { role: "tool", toolCallId, content: toolOutputToText(result) });
      }
      return result;
    });
    this.openCalls.delete(toolCallId);
    return output;
  }

  /**
   * Gives every call of the latest step that has no result one now: the error the
   * SDK produced (a malformed or unknown tool call never reaches `execute`), or a
   * marker such as "(stopped by user)". A stored call never stays without its result.
   */
  async recordMissingResults(fallback: string, errors: readonly { toolCallId: string; error: unknown }[] = []): Promise<void> {
    await this.lastAssistant;
    for (const { toolCallId, error } of errors) {
      await this.recordResult(toolCallId, `Error: ${error instanceof Error ? error.message : String(error)}`);
    }
    for (const toolCallId of [...this.openCalls.keys()]) await this.recordResult(toolCallId, fallback);
  }

  /** The same tools, each storing its result (or its error) as soon as it finishes. */
  wrapTools<T extends ToolSet>(tools: T): T {
    const wrapped: ToolSet = {};
    for (const [name, definition] of Object.entries(tools)) {
      const execute = definition.execute;
      if (!execute) {
        wrapped[name] = definition;
        continue;
      }
      wrapped[name] = {
        ...definition,
        // Converted once here: given a bare zod schema, the SDK converts it to JSON Schema again on every step.
        inputSchema: asSchema(definition.inputSchema),
        execute: async (input: unknown, options: Parameters<typeof execute>[1]) => {
          // The call's own row goes first, so a result never precedes its call.
          await this.lastAssistant;
          try {
            const output = await execute(input, options);
            this.executedTools.push(name);
            await this.recordResult(options.toolCallId, toolOutputToText(output));
            return output;
          } catch (error) {
            // An aborted tool gets its marker from whoever aborted it.
            const aborted = options.abortSignal?.aborted || (error instanceof Error && error.name === "AbortError");
            if (!aborted) {
              await this.recordResult(options.toolCallId, `Error: ${error instanceof Error ? error.message : String(error)}`);
            }
            throw error;
          }
        },
      } as typeof definition;
    }
    return wrapped as T;
  }
}

/**
 * Gives every tool call in the context that has no result an explicit "interrupted"
 * one. A call is left without a result only when its worker died mid-tool; its
 * effect, if any, was rolled back with it (see runEffect), so the agent may safely
 * call it again. Returns how many calls were closed.
 */
export async function closeInterruptedToolCalls(db: Db, conversationId: string): Promise<number> {
  const context = await getConversationContext(db, conversationId);
  const answered = new Set(context.flatMap((message) => (message.role === "tool" && message.toolCallId ? [message.toolCallId] : [])));
  let closed = 0;
  for (const message of context) {
    for (const call of message.toolCalls ?? []) {
      if (answered.has(call.toolCallId)) continue;
      try {
        await appendMessage(db, conversationId, { role: "tool", toolCallId: call.toolCallId, content: INTERRUPTED_RESULT });
        closed += 1;
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
      }
    }
  }
  return closed;
}
