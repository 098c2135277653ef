import "server-only";
import { randomUUID } from "node:crypto";
import type { LanguageModelV4CallOptions, LanguageModelV4StreamPart } from "@ai-sdk/provider";
import type { LanguageModelCallStartEvent } from "ai";
import { discardUsageStart, recordUsage, recordUsageStart, type NewUsage } from "@/lib/db/queries/usage";
import type { Db } from "@/lib/db/client";
import { estimateTokens, tokensOfChars } from "./token-estimate";

/** Why a call ended without the provider's count: the caller stopped it, or its time limit did. */
export type CutOff = "aborted" | "timeout";

/** A usage row's keys and purpose: what the call is for, not what it spent. */
export type CallRow = Omit<
  NewUsage,
  "id" | "inputTokens" | "outputTokens" | "cachedTokens" | "durationMs" | "finishReason" | "estimated"
>;

type Attempt = {
  /** The usage row's id, written as the request goes out. */
  readonly id: string;
  readonly inputTokens: number;
  readonly startedAt: number;
  /** The start's write; awaited only before the row is removed (a settle overwrites it in any order). */
  readonly started: Promise<unknown>;
  /** Characters of output streamed so far (text, reasoning, tool input). */
  outputChars: number;
  /** Tool calls whose input streamed (their tool-call part repeats it). */
  readonly streamedCalls: Set<string>;
  /** Answered (the SDK's onLanguageModelCallEnd settles the row) or settled here: nothing more is written. */
  done: boolean;
};

/**
 * The usage rows of the model calls one generateModelText or streamModelText makes (each
 * step's call, each retry of it). A call's row is written as its request goes out, marked
 * estimated: the input estimated from the request, no output. So a call whose process dies
 * mid-call (kill -9) is counted, as the provider may bill it. Then, as the call ends:
 * - answered: the SDK's onLanguageModelCallEnd writes the provider's count over the row
 *   (recordUsage, or the caller's own write with the id from takeRow); a server that sent no
 *   count leaves the estimate, its output estimated from the answer, still marked estimated;
 * - stopped by its caller or cut off by its time limit, or failed after output began: the row
 *   keeps the estimate, with the output streamed so far, its duration and why it ended;
 * - failed before any output (a 429, a 5xx, a refused request: not billed): the row is removed.
 * The start costs one statement per call, sent without waiting: the request does not wait for it.
 */
export class CallUsage {
  private inputEstimate: number | null = null;
  private current: Attempt | null = null;

  constructor(
    private readonly db: Db,
    private readonly row: CallRow,
    private readonly log: (message: string, error?: unknown) => void,
    /** After an estimated row is written for a call cut off (see ModelCall.onUsageRecorded). */
    private readonly onEstimated?: (row: NewUsage) => void,
  ) {}

  /**
   * What the next call sends, in tokens, from the SDK's onLanguageModelCallStart: the messages'
   * estimate is kept with them (token-estimate.ts), so a long context is not serialized again.
   */
  estimateInput(event: Pick<LanguageModelCallStartEvent, "instructions" | "messages" | "tools">): void {
    const instructions =
      event.instructions === undefined
        ? ""
        : typeof event.instructions === "string"
          ? event.instructions
          : JSON.stringify(event.instructions);
    this.inputEstimate =
      estimateTokens(instructions) +
      estimateTokens(event.messages) +
      (event.tools ? estimateTokens(JSON.stringify(event.tools)) : 0);
  }

  /**
   * An attempt's request is going out: its row, estimated. None when it was stopped before (the
   * request is never sent). `inputTokens`: the estimate when the caller has its own (an
   * embedding's values), else the one from the call's start or its prompt.
   */
  start(params: Pick<LanguageModelV4CallOptions, "abortSignal"> & { prompt?: unknown }, inputTokens?: number): Attempt {
    const id = randomUUID();
    if (params.abortSignal?.aborted) {
      this.current = null;
      return {
        id,
        inputTokens: 0,
        startedAt: Date.now(),
        started: Promise.resolve(),
        outputChars: 0,
        streamedCalls: new Set(),
        done: true,
      };
    }
    const estimate = inputTokens ?? this.inputEstimate ?? estimateTokens(JSON.stringify(params.prompt ?? []));
    const started = recordUsageStart(this.db, { ...this.row, id, inputTokens: estimate, outputTokens: 0 }).catch(
      (error: unknown) => this.log(`Could not record the start of a ${this.row.purpose} model call`, error),
    );
    const attempt: Attempt = {
      id,
      inputTokens: estimate,
      startedAt: Date.now(),
      started,
      outputChars: 0,
      streamedCalls: new Set(),
      done: false,
    };
    this.current = attempt;
    return attempt;
  }

  /** A part of an attempt's streamed answer: its output so far, and whether the provider has counted it (the finish part). */
  saw(attempt: Attempt, part: LanguageModelV4StreamPart): void {
    switch (part.type) {
      case "text-delta":
      case "reasoning-delta":
        attempt.outputChars += part.delta.length;
        break;
      case "tool-input-delta":
        attempt.streamedCalls.add(part.id);
        attempt.outputChars += part.delta.length;
        break;
      case "tool-call":
        if (!attempt.streamedCalls.has(part.toolCallId)) attempt.outputChars += part.input.length;
        break;
      case "finish":
        this.answered(attempt);
        break;
    }
  }

  /** The provider answered: the SDK's onLanguageModelCallEnd writes its count over the row. */
  answered(attempt: Attempt): void {
    attempt.done = true;
  }

  /**
   * An embedding attempt answered: its row settled with the provider's count of its input (an
   * embedding has no output), or kept as the estimate when the provider gave none.
   */
  async settleEmbedding(attempt: Attempt, inputTokens: number | undefined): Promise<void> {
    if (attempt.done) return;
    attempt.done = true;
    try {
      await recordUsage(this.db, {
        ...this.row,
        id: attempt.id,
        inputTokens: inputTokens ?? attempt.inputTokens,
        outputTokens: 0,
        durationMs: Date.now() - attempt.startedAt,
        estimated: inputTokens === undefined,
      });
    } catch (error) {
      this.log(`Could not record the usage of a ${this.row.purpose} model call`, error);
    }
  }

  /**
   * An attempt ended without the provider's count: `cutOff` when the caller or the time limit
   * stopped it, null when it failed. What was sent stays counted (estimated) unless it failed
   * before any output. Errors are logged: the caller's own error is what it should see.
   */
  async ended(attempt: Attempt, cutOff: CutOff | null): Promise<void> {
    if (attempt.done) return;
    attempt.done = true;
    try {
      if (cutOff === null && attempt.outputChars === 0) {
        await attempt.started;
        await discardUsageStart(this.db, attempt.id);
        return;
      }
      const row: NewUsage = {
        ...this.row,
        id: attempt.id,
        inputTokens: attempt.inputTokens,
        outputTokens: tokensOfChars(attempt.outputChars),
        durationMs: Date.now() - attempt.startedAt,
        finishReason: cutOff ?? "error",
        estimated: true,
      };
      await recordUsage(this.db, row);
      this.onEstimated?.(row);
    } catch (error) {
      this.log(`Could not record the usage of a ${this.row.purpose} model call that was cut off`, error);
    }
  }

  /**
   * The row the current call's start wrote, for the write that settles it with the provider's
   * count (onLanguageModelCallEnd): its id (nothing here writes over it after) and its input
   * estimate, which stands when the provider sent no count.
   */
  takeRow(): { id: string | undefined; inputTokens: number } {
    const attempt = this.current;
    if (!attempt) return { id: undefined, inputTokens: this.inputEstimate ?? 0 };
    attempt.done = true;
    return { id: attempt.id, inputTokens: attempt.inputTokens };
  }
}
