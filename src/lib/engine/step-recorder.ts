import "server-only";
import { randomUUID } from "node:crypto";
import { asSchema, type ToolSet } from "ai";
import type { Db } from "@/lib/db/client";
import { isUniqueViolation } from "@/lib/db/errors";
import { CadreError } from "@/lib/errors";
import { appendMessage, findMessageHoldingCall, type NewMessage } from "@/lib/db/queries/messages";
import { recordUsage, type NewUsage } from "@/lib/db/queries/usage";
import type { Message, StoredToolCall } from "@/lib/db/schema";
import { toolOutputToText } from "./model-messages";
import { toolEffects } from "./tool-policies";
import type { EffectCall } from "./tools/context";
import { describeToolError } from "./tools/tool-errors";
import { logError } from "@/lib/telemetry/log";

type ResponsePart = { type: string; text?: string; toolCallId?: string; toolName?: string; input?: unknown };

/** Who follows the log as the recorder writes it (the turn's ContextReader), so it need not read back what was just written. */
export type LogFollower = {
  appended(message: Message): void;
  /** A row named before it is written; `written` settles when it is (never rejects). */
  appending(message: Message, written: Promise<unknown>): void;
  moved(): void;
};

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
  /** Why the latest answer could not be stored; the SDK would swallow it, so the turn checks. */
  private failure: unknown;
  toolCallCount = 0;
  /** Results on their way to the log, one after another in the order their tools finished. */
  private writes: Promise<void> = Promise.resolve();
  /** The last row this recorder wrote or named (see recordResult): what its next result follows. */
  private ownTail: string | null = null;
  /** Results the follower learns of only when they land (not named ahead): the next call waits for them. */
  private unannounced: Promise<void> | null = null;

  private readonly follower?: LogFollower;
  private readonly resultsInBackground: boolean;
  private readonly onResultAhead?: () => void;
  /** The work session writing (see AppendOptions.heldBy): nothing lands once another worker took its agent over. */
  private readonly heldBy?: string;
  /** The task the rows belong to (messages.task_id): a work turn's task, read at each write. */
  private readonly task: () => string | null;
  /** How many tool calls wrote to the database (runEffect) so far: what was read before one may be stale. */
  effectsRun = 0;

  /**
   * `follower` is told of every row written. With `resultsInBackground`, a tool's result is
   * written while the turn goes on, and the caller awaits `settled` before anything reads the
   * log or calls the model again (a work turn does, before each call and when it ends); the
   * chat, whose replies are not time-critical, writes each result before going on.
   */
  constructor(
    private readonly db: Db,
    private readonly conversationId: string,
    options: {
      follower?: LogFollower;
      resultsInBackground?: boolean;
      onResultAhead?: () => void;
      heldBy?: string;
      task?: () => string | null;
    } = {},
  ) {
    this.heldBy = options.heldBy;
    this.task = options.task ?? (() => null);
    this.follower = options.follower;
    this.resultsInBackground = options.resultsInBackground ?? false;
    this.onResultAhead = options.onResultAhead;
  }

  /**
   * Stores the model's answer for one step (text, reasoning, tool calls). Given
   * `after` — the last message of the context the call was given — it lands right
   * after that message or not at all (a `conflict:message_chain`): an answer is never
   * stored after input its call did not see.
   */
  recordModelResponse(
    content: readonly ResponsePart[],
    after?: string | null,
    usage?: NewUsage,
  ): Promise<Message | null> {
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
    this.toolCallCount += toolCalls.length;
    this.storedIds.clear();
    const row: NewMessage = {
      role: "assistant",
      content: text,
      thinking: thinking || null,
      toolCalls: toolCalls.length ? toolCalls : null,
      taskId: this.task(),
      ...(after !== undefined ? { previousMessageId: after } : {}),
    };
    // Committed lazily: a Postgres crash before the next durable commit (a tool's writes, an
    // outside tool's result) loses only steps that can be redone, never an effect's record.
    // After the results on their way, so the log keeps its order.
    // A result that could not be stored fails the answer too: the call was given it.
    let sent = false;
    this.lastAssistant = this.writes
      .then(() => {
        this.throwIfFailed();
        sent = true;
        return appendMessage(this.db, this.conversationId, row, { lazyCommit: true, heldBy: this.heldBy, usage });
      })
      .then(
        (message) => {
          this.ownTail = message.id;
          // Stored under the ids the log gave them (a reused id gets a new one), in the model's order.
          for (const [index, call] of (message.toolCalls ?? []).entries()) {
            this.openCalls.set(call.toolCallId, call.toolName);
            const given = toolCalls[index]?.toolCallId;
            if (given !== undefined && given !== call.toolCallId) this.storedIds.set(given, call.toolCallId);
          }
          this.follower?.appended(message);
          return message;
        },
        (error: unknown) => {
          this.failure ??= error;
          // Its calls were never stored: nothing may be recorded as their results.
          this.openCalls.clear();
          // The call was made all the same: its usage row goes alone when the answer's statement never ran.
          // Lost, it would leave the team's budget short of a call the provider bills: say so once.
          if (usage && !sent)
            void recordUsage(this.db, usage).catch((cause: unknown) =>
              logError("[usage] could not record a model call's usage after its answer could not be stored:", cause),
            );
          return null;
        },
      );
    return this.lastAssistant;
  }

  /** The latest step's calls whose id the log changed because the conversation had used it, by the model's id. */
  private readonly storedIds = new Map<string, string>();

  /**
   * The id a call of the latest step is stored under: the model's own, unless the conversation
   * had used it already, for a result or an approval (a provider that numbers its calls per
   * answer, call_0, call_1, …): then the log gave it a new one, and its result and any approval
   * use that.
   */
  storedId(toolCallId: string): string {
    return this.storedIds.get(toolCallId) ?? toolCallId;
  }

  /**
   * Calls of the latest step that wait for the person's decision: they keep no result for now,
   * on purpose, so nothing fills one in as the step ends (see approvals.ts). Returns them under
   * the ids the log stored them with (see storedId), which their approvals must use.
   */
  holdForDecision<T extends { toolCallId: string }>(calls: readonly T[]): T[] {
    const held = calls.map((call) => ({ ...call, toolCallId: this.storedId(call.toolCallId) }));
    for (const { toolCallId } of held) this.openCalls.delete(toolCallId);
    this.heldForDecision += held.length;
    return held;
  }

  /** How many calls this recorder held for a decision. */
  heldForDecision = 0;

  /** What a result is stored with, before the tool's own output (a call the person edited says so). */
  private readonly resultNotes = new Map<string, string>();

  /**
   * A call stored earlier (held for a decision) that is about to run: its result is recorded
   * like any other, after `note` when there is one.
   */
  expectResult(toolCallId: string, toolName: string, note?: string): void {
    this.openCalls.set(toolCallId, toolName);
    if (note) this.resultNotes.set(toolCallId, note);
  }

  private resultText(toolCallId: string, text: string): string {
    const note = this.resultNotes.get(toolCallId);
    return cappedResult(note ? `${note}\n\n${text}` : text);
  }

  /** Whether the latest answer was stored (its calls exist in the log). */
  async stored(): Promise<boolean> {
    return (await this.lastAssistant) !== null;
  }

  /** Rethrows the failure to store an answer, so the session ends loudly instead of working on an answer it lost. */
  throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** Stores what the text of an unfinished step was, when it was cut off. */
  async recordPartialText(text: string, marker: string): Promise<void> {
    await appendMessage(
      this.db,
      this.conversationId,
      { role: "assistant", content: text ? `${text}\n\n${marker}` : marker, taskId: this.task() },
      { heldBy: this.heldBy },
    );
  }

  /**
   * Records a call's result after the results before it. The call stops being open at once, so
   * nothing else records one for it meanwhile; `settled` waits for the write. `lazy`: the result
   * of a call that changed nothing, which a Postgres crash may lose like the answer (see wrapTools).
   */
  private recordResult(toolCallId: string, content: string, lazy = false): Promise<void> {
    if (!this.openCalls.has(toolCallId)) return this.writes;
    this.openCalls.delete(toolCallId);
    const text = this.resultText(toolCallId, content);
    if (this.resultsInBackground && this.follower && this.ownTail !== null)
      return this.recordResultAhead(this.follower, toolCallId, text, lazy);
    this.writes = this.unannounced = this.writes.then(async () => {
      try {
        // Written first, then told: \`follower?.appended(await …)\` would skip the write without a follower.
        const message = await appendMessage(
          this.db,
          this.conversationId,
          { role: "tool", toolCallId, content: text, taskId: this.task() },
          { lazyCommit: lazy, heldBy: this.heldBy },
        );
        this.follower?.appended(message);
      } catch (error) {
        // Someone (a redelivered run of this step) recorded it first: one result is the point.
        if (isUniqueViolation(error)) this.follower?.moved();
        else this.failure ??= error;
      }
    });
    return this.writes;
  }

  /**
   * A result in a work turn: named now and told to the follower at once, so the next model call
   * is prepared while the write is on its way (the follower's reads wait for it). The write lands
   * right after the row before it (this recorder's own) or not there: the next answer, which
   * must follow it, is stored only after it, and only when it landed where the call saw it.
   */
  private recordResultAhead(follower: LogFollower, toolCallId: string, content: string, lazy: boolean): Promise<void> {
    const id = randomUUID();
    const after = this.ownTail;
    this.ownTail = id;
    this.writes = this.writes.then(async () => {
      try {
        await appendMessage(
          this.db,
          this.conversationId,
          { id, role: "tool", toolCallId, content, taskId: this.task(), previousMessageId: after },
          { lazyCommit: lazy, heldBy: this.heldBy },
        );
      } catch (error) {
        // Someone else wrote first (a Stop's marker, another run's result): the log has moved
        // on from what the next call is given, so that call's answer will not be stored; the
        // result is kept where it can go, so the call is not left without one.
        follower.moved();
        if (isUniqueViolation(error)) return;
        if (!(error instanceof CadreError && error.code === "conflict:message_chain")) {
          this.failure ??= error;
          return;
        }
        await appendMessage(
          this.db,
          this.conversationId,
          { role: "tool", toolCallId, content, taskId: this.task() },
          { heldBy: this.heldBy },
        ).catch((retryError: unknown) => {
          if (!isUniqueViolation(retryError)) this.failure ??= retryError;
        });
      }
    });
    follower.appending(
      {
        id,
        conversationId: this.conversationId,
        role: "tool",
        content,
        thinking: null,
        toolCalls: null,
        toolCallId,
        inboxItemId: null,
        taskId: this.task(),
        previousMessageId: after,
        createdAt: new Date(),
      },
      this.writes,
    );
    this.onResultAhead?.();
    return this.writes;
  }

  /**
   * Waits for the results on their way to the log, and rethrows a failure to store one or an
   * answer: before the next model call (which must see them) and when the turn ends.
   */
  async settled(): Promise<void> {
    await this.writes;
    this.throwIfFailed();
  }

  /**
   * Before the next model call of a work turn: waits for the results its context cannot hold
   * yet (the follower was not told of them ahead), and rethrows a failure to store one so far.
   */
  async announced(): Promise<void> {
    if (this.unannounced) await this.unannounced;
    this.unannounced = null;
    this.throwIfFailed();
  }

  /** Waits for the results on their way to the log; a failure stays for throwIfFailed. */
  drained(): Promise<void> {
    return this.writes;
  }

  /**
   * Runs a tool's database writes and records its result in one transaction, the
   * way durable-execution systems record a step: after a crash either both exist or
   * neither, so the effect happens once. A second run of the same call (same
   * toolCallId) finds the result taken and rolls its writes back.
   */
  async runEffect<T>(modelToolCallId: string, write: (tx: Db, call: EffectCall) => Promise<T>): Promise<T> {
    const last = await this.lastAssistant;
    await this.writes;
    const toolCallId = this.storedId(modelToolCallId);
    this.effectsRun += 1;
    let recorded: Message | undefined;
    const output = await this.db.transaction(async (tx) => {
      // The step's own message, or (a call approved later) the older message that holds it.
      const holder = last?.toolCalls?.some((call) => call.toolCallId === toolCallId)
        ? last.id
        : await this.messageHolding(tx, toolCallId);
      const result = await write(tx, { messageId: holder });
      if (this.openCalls.has(toolCallId)) {
        recorded = await appendMessage(
          tx,
          this.conversationId,
          {
            role: "tool",
            toolCallId,
            content: this.resultText(toolCallId, toolOutputToText(result)),
            taskId: this.task(),
          },
          { heldBy: this.heldBy },
        );
      }
      return result;
    });
    this.openCalls.delete(toolCallId);
    if (recorded) {
      this.ownTail = recorded.id;
      this.follower?.appended(recorded);
    }
    return output;
  }

  private async messageHolding(tx: Db, toolCallId: string): Promise<string | null> {
    return findMessageHoldingCall(tx, this.conversationId, toolCallId);
  }

  /**
   * Gives every call of the latest step that has no result one now: the error the
   * SDK produced (a malformed or unknown tool call never reaches `execute`), or a
   * marker such as "(stopped by the person)". A stored call never stays without its result.
   */
  async recordMissingResults(
    fallback: string,
    errors: readonly { toolCallId: string; error: unknown }[] = [],
  ): Promise<void> {
    await this.lastAssistant;
    for (const { toolCallId, error } of errors)
      void this.recordResult(this.storedId(toolCallId), describeToolError(error));
    for (const toolCallId of [...this.openCalls.keys()]) void this.recordResult(toolCallId, fallback);
    // In the background the writes go on beside the next call's reads (settled waits for them there).
    if (!this.resultsInBackground) await this.writes;
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
      // What this wrapper records of one of Cadre's own tools is the result of a call that wrote
      // nothing (a tool's writes commit with their result, in runEffect): a search, a read. Lost in
      // a Postgres crash, it is redone with its step, so it commits lazily, like the answer. An
      // outside tool's result is the record that its effect happened: durable.
      const lazy = toolEffects(name) === "cadre";
      wrapped[name] = {
        ...definition,
        // Converted once: given a bare zod schema, the SDK converts it to JSON Schema again on
        // every step; and the tools' schemas are module constants, so once per process.
        inputSchema: convertedSchema(definition.inputSchema),
        execute: async (input: unknown, options: Parameters<typeof execute>[1]) => {
          // The call's own row goes first, so a result never precedes its call; with no row, no tool runs.
          await this.lastAssistant;
          this.throwIfFailed();
          let output: unknown;
          try {
            output = await execute(input, options);
          } catch (error) {
            // An aborted tool gets its marker from whoever aborted it.
            const aborted = options.abortSignal?.aborted || (error instanceof Error && error.name === "AbortError");
            if (!aborted) {
              await this.recordResult(this.storedId(options.toolCallId), describeToolError(error), lazy);
              if (!this.resultsInBackground) await this.settled();
            }
            throw error;
          }
          this.executedTools.push(name);
          // In the background, the write goes out beside the next call's reads, which wait for
          // it (settled) before the model is called: the model never answers without it.
          const recording = this.recordResult(this.storedId(options.toolCallId), toolOutputToText(output), lazy);
          if (!this.resultsInBackground) await this.settled();
          else void recording;
          return output;
        },
      } as typeof definition;
    }
    return wrapped as T;
  }
}

/**
 * The most of one tool result the log stores, in characters. A tool's output is whatever an
 * outside server or page sent (an MCP tool answered 3 MB once): stored whole, every later read
 * of the conversation (context, timeline, export) carries it. The model is given a cut copy of
 * long results anyway; the head is what it and a reader use.
 */
export const STORED_TOOL_RESULT_MAX_CHARS = 100_000;

/** A result no longer than STORED_TOOL_RESULT_MAX_CHARS: its head, then how much was cut. */
function cappedResult(text: string): string {
  if (text.length <= STORED_TOOL_RESULT_MAX_CHARS) return text;
  return `${text.slice(0, STORED_TOOL_RESULT_MAX_CHARS)}\n…(${text.length - STORED_TOOL_RESULT_MAX_CHARS} characters cut)`;
}

const convertedSchemas = new WeakMap<object, ReturnType<typeof asSchema>>();

function convertedSchema(schema: Parameters<typeof asSchema>[0]): ReturnType<typeof asSchema> {
  if (typeof schema !== "object" || schema === null) return asSchema(schema);
  let converted = convertedSchemas.get(schema);
  if (!converted) {
    converted = asSchema(schema);
    convertedSchemas.set(schema, converted);
  }
  return converted;
}

/**
 * The errors of a step's tool calls that never reached their tool: a malformed or
 * unknown call (the SDK keeps the original error on the call, with the fields to fix)
 * or a tool that threw. For recordMissingResults.
 */
export function stepToolErrors(
  content: readonly { type: string; toolCallId?: string; invalid?: boolean; error?: unknown }[],
) {
  const errors: { toolCallId: string; error: unknown }[] = [];
  for (const part of content) {
    if (!part.toolCallId) continue;
    if ((part.type === "tool-call" && part.invalid) || part.type === "tool-error")
      errors.push({ toolCallId: part.toolCallId, error: part.error });
  }
  return errors;
}
