import "server-only";
import type {
  EmbeddingModelV4,
  LanguageModelV4,
  LanguageModelV4StreamPart,
  SharedV4ProviderOptions,
} from "@ai-sdk/provider";
import type { Context } from "@ai-sdk/provider-utils";
import {
  embedMany,
  gateway,
  generateText,
  streamText,
  wrapLanguageModel,
  type GenerateTextResult,
  type LanguageModel,
  type LanguageModelCallEndEvent,
  type LanguageModelCallStartEvent,
  type OutputInterface,
  type StreamTextResult,
  type ToolSet,
} from "ai";
import type { Db } from "@/lib/db/client";
import type { UsagePurpose } from "@/lib/db/schema";
import { env } from "@/lib/env";
import { modelCallTelemetry } from "@/lib/telemetry/tracing";
import { alternatingPrompt } from "./alternating-prompt";
import { ModelTimeoutError } from "./errors";
import type { ModelChoice } from "./provider";
import { recordUsage, type NewUsage } from "@/lib/db/queries/usage";
import { CallUsage, type CallRow, type CutOff } from "./call-usage";
import { modelUsageRow } from "./usage";
import { logError } from "@/lib/telemetry/log";
import { embeddingOf, type Embedding, type EmbeddingChoice } from "./embeddings";
import { tokensOfChars } from "./token-estimate";

/**
 * Retries after a failed attempt (a 429, a 5xx, a dropped connection): the SDK's backoff,
 * honouring Retry-After. A timed-out attempt is not retried.
 */
export const MODEL_CALL_RETRIES = 2;

/** Who a model call is for and what it may take: the part every call site shares. */
export type ModelCall = {
  db: Db;
  model: ModelChoice;
  /** The usage row's purpose. */
  purpose: UsagePurpose;
  /** Null for a call made for no agent yet (drafting a new team's lead instructions). */
  agentId: string | null;
  /** The agent's team, for the usage row: the agent may be removed while the call runs. */
  teamId: string | null;
  conversationId?: string | null;
  /** The work session the call is made in, so its trace can show it; null for chat and drafting. */
  workSessionId?: string | null;
  /** The task a work session's call worked on, for a story's cost (usage.task_id). */
  taskId?: string | null;
  /** How long one model call may take (each attempt); MODEL_TIMEOUT_MS when not given. */
  timeoutMs?: number;
  /** The caller's cancellation (a Stop, a closed request): it reads as an abort, never as a timeout. */
  abortSignal?: AbortSignal;
  /** Where a usage row that could not be written is reported; logError when not given. */
  log?: (message: string, error?: unknown) => void;
  /**
   * After the call's usage row is settled (or could not be), with the provider's count or, for
   * a call cut off, the estimate: a team's budget counts the call here, so a read of the usage
   * rows sent later sees it and one sent earlier is not counted twice.
   */
  onUsageRecorded?: (row: NewUsage) => void;
  /**
   * The caller stores each answered call's usage row in its own write (a work step's answer:
   * one statement instead of two, see appendMessage's `usage`): its onLanguageModelCallEnd
   * takes the row from usageRowOf and calls onUsageRecorded once it is written. Such a
   * ModelCall serves one generateModelText at a time (usageRowOf finds the row by it). A call
   * cut off is still settled here.
   */
  usageStoredByCaller?: boolean;
  /**
   * The prompt goes out as built, its messages of one role in a row not joined (alternatingPrompt):
   * only for the model check, which asks whether the server's chat template refuses them.
   */
  sentAsBuilt?: boolean;
};

/** What the helper sets for every call; a call site cannot override them. */
type CommonOption =
  | "model"
  | "abortSignal"
  | "maxRetries"
  | "timeout"
  | "onLanguageModelCallStart"
  | "experimental_onLanguageModelCallStart"
  | "experimental_onLanguageModelCallEnd"
  | "telemetry"
  | "experimental_telemetry";
/** Omit over each branch of a union, so "prompt or messages, not both" survives. */
type WithoutCommon<T> = T extends unknown ? Omit<T, CommonOption> : never;

type GenerateOptions<TOOLS extends ToolSet, OUTPUT extends OutputInterface> = Parameters<
  typeof generateText<TOOLS, Context, OUTPUT>
>[0];
type StreamOptions<TOOLS extends ToolSet, OUTPUT extends OutputInterface> = Parameters<
  typeof streamText<TOOLS, Context, OUTPUT>
>[0];

/**
 * `generateText` with what every model call needs: the per-call timeout, bounded retries,
 * the caller's abort, one usage row per model call (written as it starts, see CallUsage) and its telemetry. The caller passes everything else
 * (prompt, tools, output, prepareStep, stopWhen, callbacks); its `onLanguageModelCallEnd`
 * runs alongside the usage write.
 */
export function generateModelText<
  TOOLS extends ToolSet = Record<string, never>,
  OUTPUT extends OutputInterface = OutputInterface<string, string>,
>(
  call: ModelCall,
  options: WithoutCommon<GenerateOptions<TOOLS, OUTPUT>>,
): Promise<GenerateTextResult<TOOLS, Context, OUTPUT>> {
  // Putting back the keys WithoutCommon took out gives the full options; TypeScript cannot follow that through the generics.
  return generateText({
    ...options,
    ...commonOptions(call, options.onLanguageModelCallEnd, options.providerOptions),
  } as GenerateOptions<TOOLS, OUTPUT>);
}

/** `streamText` with the same common part as generateModelText. A timeout ends the stream with an error part (onError), not an abort. */
export function streamModelText<
  TOOLS extends ToolSet = Record<string, never>,
  OUTPUT extends OutputInterface = OutputInterface<string, string, never>,
>(call: ModelCall, options: WithoutCommon<StreamOptions<TOOLS, OUTPUT>>): StreamTextResult<TOOLS, Context, OUTPUT> {
  return streamText({
    ...options,
    ...commonOptions(call, options.onLanguageModelCallEnd, options.providerOptions),
  } as StreamOptions<TOOLS, OUTPUT>);
}

function commonOptions<TOOLS extends ToolSet>(
  call: ModelCall,
  onCallEnd: ((event: LanguageModelCallEndEvent<TOOLS>) => PromiseLike<void> | void) | undefined,
  providerOptions: SharedV4ProviderOptions | undefined,
) {
  const log = call.log ?? logError;
  const usage = new CallUsage(call.db, callRow(call), log, call.onUsageRecorded);
  if (call.usageStoredByCaller) usageOfCalls.set(call, usage);
  return {
    providerOptions: withCacheKey(call, providerOptions),
    model: guardedModel(call.model.model, call.timeoutMs ?? env().MODEL_TIMEOUT_MS, usage, !call.sentAsBuilt),
    abortSignal: call.abortSignal,
    maxRetries: MODEL_CALL_RETRIES,
    // Spans for the call, its model calls and tool calls when OTEL_EXPORTER_OTLP_ENDPOINT is set; off otherwise.
    telemetry: modelCallTelemetry(call),
    onLanguageModelCallStart: (event: LanguageModelCallStartEvent) => usage.estimateInput(event),
    onLanguageModelCallEnd: async (event: LanguageModelCallEndEvent<TOOLS>) => {
      await Promise.all([
        call.usageStoredByCaller ? undefined : recordCallUsage(call, usage, event, log),
        onCallEnd?.(event),
      ]);
    },
  };
}

/** The usage of the calls of a ModelCall whose caller writes their rows (usageStoredByCaller), for usageRowOf. */
const usageOfCalls = new WeakMap<ModelCall, CallUsage>();

/**
 * The conversation's requests carry one `prompt_cache_key` (where the provider takes it: see
 * ModelChoice.cacheKeys), so they are routed to the machine that holds their prefix in its
 * cache: the instructions, the tools and the history up to the last call. A call for no
 * conversation (drafting) has none.
 */
function withCacheKey(
  call: ModelCall,
  providerOptions: SharedV4ProviderOptions | undefined,
): SharedV4ProviderOptions | undefined {
  if (!call.model.cacheKeys || !call.conversationId) return providerOptions;
  // An extraction over the log starts with other instructions: its own key, so it does not
  // crowd the machine that serves the conversation. A summary is the conversation's next request.
  const own = call.purpose === "extraction" ? "-extraction" : "";
  return {
    ...providerOptions,
    openai: { ...providerOptions?.openai, promptCacheKey: `cadre-${call.conversationId}${own}` },
  };
}

/** Who an embedding call is for: a ModelCall's keys (its purpose is "embedding"), with an embedding model. */
export type EmbeddingCall = Omit<ModelCall, "model" | "purpose" | "onUsageRecorded" | "usageStoredByCaller"> & {
  model: EmbeddingChoice;
  /** Retries after a failed attempt; MODEL_CALL_RETRIES when not given (a caller waiting on the answer may give fewer). */
  retries?: number;
};

/**
 * `embedMany` with what every model call needs: the time limit on each attempt, bounded
 * retries, the caller's abort, one usage row per attempt (purpose "embedding": written as it
 * starts, settled with the provider's count, see CallUsage) and its telemetry. The vectors
 * come back in the order of `values`, normalized, each with the space it lives in.
 */
export async function embedModelValues(call: EmbeddingCall, values: readonly string[]): Promise<Embedding[]> {
  if (values.length === 0) return [];
  const keys = { ...call, purpose: "embedding" as const };
  const usage = new CallUsage(call.db, callRow(keys), call.log ?? logError);
  const { embeddings } = await embedMany({
    model: guardedEmbeddingModel(call.model.model, call.timeoutMs ?? env().MODEL_TIMEOUT_MS, usage),
    values: [...values],
    dimensions: call.model.dimensions ?? undefined,
    maxRetries: call.retries ?? MODEL_CALL_RETRIES,
    abortSignal: call.abortSignal,
    telemetry: modelCallTelemetry(keys),
  });
  return embeddings.map((vector) => embeddingOf(call.model, vector));
}

/**
 * The embedding model with guardedModel's time limit on each attempt and a usage row per
 * attempt: written (estimated from the values' length) as the request goes out, settled with
 * the provider's count when it answers, kept as the estimate when it is cut off, removed when
 * it failed (nothing billed).
 */
function guardedEmbeddingModel(model: EmbeddingModelV4, timeoutMs: number, usage: CallUsage): EmbeddingModelV4 {
  return {
    specificationVersion: "v4",
    provider: model.provider,
    modelId: model.modelId,
    maxEmbeddingsPerCall: model.maxEmbeddingsPerCall,
    supportsParallelCalls: model.supportsParallelCalls,
    doEmbed: async (params) => {
      const deadline = new Deadline(timeoutMs, params.abortSignal);
      const chars = params.values.reduce((sum, value) => sum + value.length, 0);
      const attempt = usage.start(params, tokensOfChars(chars));
      try {
        const result = await deadline.race(model.doEmbed({ ...params, abortSignal: deadline.signal }));
        await usage.settleEmbedding(attempt, result.usage?.tokens);
        return result;
      } catch (error) {
        await usage.ended(attempt, deadline.cutOff());
        throw deadline.explain(error);
      } finally {
        deadline.clear();
      }
    },
  };
}

/** What a usage row of `call` names: its agent, team, conversation, work session and task. */
function callRow(call: Omit<ModelCall, "model"> & { model: { modelId: string } }): CallRow {
  return {
    agentId: call.agentId,
    teamId: call.teamId,
    conversationId: call.conversationId ?? null,
    purpose: call.purpose,
    model: call.model.modelId,
    workSessionId: call.workSessionId ?? null,
    taskId: call.taskId ?? null,
  };
}

/**
 * The usage row of one answered model call of `call`, with the provider's count: it settles
 * the row the call's start wrote (see CallUsage) when `call` stores its own rows
 * (usageStoredByCaller), else it is a row of its own.
 */
export function usageRowOf(
  call: ModelCall,
  event: Pick<LanguageModelCallEndEvent<ToolSet>, "finishReason" | "usage" | "performance" | "content">,
): NewUsage {
  return settledRow(call, usageOfCalls.get(call), event);
}

function settledRow(
  call: ModelCall,
  usage: CallUsage | undefined,
  event: Pick<LanguageModelCallEndEvent<ToolSet>, "finishReason" | "usage" | "performance" | "content">,
): NewUsage {
  const started = usage?.takeRow();
  const row = {
    ...modelUsageRow({
      ...callRow(call),
      finishReason: event.finishReason,
      usage: event.usage,
      durationMs: Math.round(event.performance.responseTimeMs),
    }),
    id: started?.id,
  };
  const { inputTokens, outputTokens } = event.usage;
  if (inputTokens !== undefined && outputTokens !== undefined) return row;
  // The server sent no count, or half of one (many local servers send none): the call is counted
  // all the same, what is missing as Cadre estimates it — the input from the request, the output
  // from the answer — and marked estimated, so pages say so and budgets still stop work at their
  // limit. A missing cached figure is no estimate: the input then counts as not cached.
  return {
    ...row,
    inputTokens: inputTokens ?? started?.inputTokens ?? 0,
    outputTokens: outputTokens ?? tokensOfChars(outputChars(event.content)),
    estimated: true,
  };
}

/** The characters of an answer the model wrote: its text, its reasoning, its calls' arguments. */
function outputChars(content: LanguageModelCallEndEvent<ToolSet>["content"]): number {
  let chars = 0;
  for (const part of content) {
    if (part.type === "text" || part.type === "reasoning") chars += part.text.length;
    else if (part.type === "tool-call")
      chars += typeof part.input === "string" ? part.input.length : (JSON.stringify(part.input)?.length ?? 0);
  }
  return chars;
}

/**
 * The SDK swallows errors thrown by its callbacks, so a usage row that cannot be written
 * is reported here rather than lost without a word.
 */
async function recordCallUsage(
  call: ModelCall,
  usage: CallUsage,
  event: LanguageModelCallEndEvent<ToolSet>,
  log: (message: string, error?: unknown) => void,
): Promise<void> {
  const row = settledRow(call, usage, event);
  try {
    await recordUsage(call.db, row);
  } catch (error) {
    log(`Could not record the usage of a ${call.purpose} model call`, error);
  }
  call.onUsageRecorded?.(row);
}

/**
 * The model with its prompt shaped for any chat template (alternatingPrompt), and a time
 * limit on each call (each attempt, when the SDK retries): a call that has not answered by
 * then is aborted and fails with ModelTimeoutError, even if the model ignores its abort signal. Applied around the model rather than through the SDK's
 * `timeout` option, whose step limit also covers prepareStep and tool runs and whose
 * expiry reads as an abort. Each attempt's usage row is written as it starts and settled
 * as it ends (CallUsage): here an attempt that ends without the provider's count.
 */
function guardedModel(model: LanguageModel, timeoutMs: number, usage: CallUsage, alternate = true): LanguageModelV4 {
  return wrapLanguageModel({
    // A bare id means a gateway model, as it does for the SDK itself.
    model: typeof model === "string" ? gateway(model) : model,
    middleware: {
      // Whoever built the request, it goes out as every chat template takes it (see alternatingPrompt).
      transformParams: async ({ params }) =>
        alternate ? { ...params, prompt: alternatingPrompt(params.prompt) } : params,
      wrapGenerate: async ({ params, model: inner }) => {
        const deadline = new Deadline(timeoutMs, params.abortSignal);
        const attempt = usage.start(params);
        try {
          const result = await deadline.race(inner.doGenerate({ ...params, abortSignal: deadline.signal }));
          usage.answered(attempt);
          return { ...result, content: withUniqueCallIds(result.content) };
        } catch (error) {
          await usage.ended(attempt, deadline.cutOff());
          throw deadline.explain(error);
        } finally {
          deadline.clear();
        }
      },
      wrapStream: async ({ params, model: inner }) => {
        const deadline = new Deadline(timeoutMs, params.abortSignal);
        const attempt = usage.start(params);
        const result = await deadline
          .race(inner.doStream({ ...params, abortSignal: deadline.signal }))
          .catch(async (error: unknown) => {
            deadline.clear();
            await usage.ended(attempt, deadline.cutOff());
            throw deadline.explain(error);
          });
        const watch: StreamWatch = {
          part: (part) => usage.saw(attempt, part),
          end: (cutOff) => usage.ended(attempt, cutOff),
        };
        return { ...result, stream: deadline.guard(result.stream, watch).pipeThrough(uniqueCallIdsInStream()) };
      },
    },
  });
}

/**
 * An answer's calls with ids it repeats (two calls both `call_0`) made unique, `call_0~2`, before
 * the SDK pairs calls and results by id: otherwise both results go to one call. Ids reused
 * across answers are the log's business (messages.ts).
 */
function withUniqueCallIds<T extends { type: string }>(content: T[]): T[] {
  const seen = new Set<string>();
  let changed = false;
  const unique = content.map((part) => {
    if (part.type !== "tool-call") return part;
    const call = part as T & { toolCallId: string };
    const id = freshId(call.toolCallId, seen);
    if (id === call.toolCallId) return part;
    changed = true;
    return { ...call, toolCallId: id };
  });
  return changed ? unique : content;
}

function freshId(id: string, seen: Set<string>): string {
  let fresh = id;
  for (let n = 2; seen.has(fresh); n++) fresh = `${id}~${n}`;
  seen.add(fresh);
  return fresh;
}

/** withUniqueCallIds for a streamed answer: a call is named at its first input part, or at the call when its input did not stream. */
function uniqueCallIdsInStream(): TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart> {
  const seen = new Set<string>();
  // Calls whose input is streaming: the id each will have, by the id the provider gave it.
  const streaming = new Map<string, string>();
  return new TransformStream({
    transform(part, controller) {
      if (part.type === "tool-input-start") {
        const id = freshId(part.id, seen);
        streaming.set(part.id, id);
        controller.enqueue(id === part.id ? part : { ...part, id });
      } else if (part.type === "tool-input-delta" || part.type === "tool-input-end") {
        const id = streaming.get(part.id) ?? part.id;
        controller.enqueue(id === part.id ? part : { ...part, id });
      } else if (part.type === "tool-call") {
        let id = streaming.get(part.toolCallId);
        if (id === undefined) id = freshId(part.toolCallId, seen);
        else streaming.delete(part.toolCallId);
        controller.enqueue(id === part.toolCallId ? part : { ...part, toolCallId: id });
      } else {
        controller.enqueue(part);
      }
    },
  });
}

/** What a guarded stream reports: each part, and its end when the provider did not finish it (null: it failed or closed early). */
type StreamWatch = { part: (part: LanguageModelV4StreamPart) => void; end: (cutOff: CutOff | null) => Promise<void> };

/** One model call's time limit, combined with the caller's signal. */
class Deadline {
  /** Aborts on the caller's abort or at the time limit, whichever comes first. */
  readonly signal: AbortSignal;
  private readonly expiry = new AbortController();
  private readonly timer: ReturnType<typeof setTimeout>;

  constructor(
    private readonly timeoutMs: number,
    private readonly caller: AbortSignal | undefined,
  ) {
    this.timer = setTimeout(() => this.expiry.abort(new ModelTimeoutError(timeoutMs)), timeoutMs);
    this.signal = caller ? AbortSignal.any([caller, this.expiry.signal]) : this.expiry.signal;
  }

  private get timedOut(): boolean {
    return this.expiry.signal.aborted && !this.caller?.aborted;
  }

  /** Whether the call was cut off, and by what: the caller's abort, or the time limit; null when neither (it failed by itself). */
  cutOff(): CutOff | null {
    if (this.caller?.aborted) return "aborted";
    return this.timedOut ? "timeout" : null;
  }

  clear(): void {
    clearTimeout(this.timer);
  }

  /** Settles as the promise does, or rejects when the signal aborts, whether or not the model noticed. */
  race<T>(promise: PromiseLike<T>): Promise<T> {
    const signal = this.signal;
    if (signal.aborted) {
      // The model's own promise may still reject (it was aborted too): observed here, or it
      // would be an unhandled rejection that ends the worker process.
      Promise.resolve(promise).catch(() => {});
      return Promise.reject(signal.reason);
    }
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      Promise.resolve(promise)
        .then(resolve, reject)
        .finally(() => signal.removeEventListener("abort", onAbort));
    });
  }

  /** A timed-out call fails as a timeout whatever the model threw when aborted; anything else as it was. */
  explain(error: unknown): unknown {
    return this.timedOut && !ModelTimeoutError.isInstance(error)
      ? new ModelTimeoutError(this.timeoutMs, { cause: error })
      : error;
  }

  /**
   * The model's stream under the time limit, which runs until the stream ends. A timeout
   * becomes an error part, which the SDK reports through onError like any model failure;
   * the caller's abort errors the stream, which the SDK reports as an abort. `watch` sees
   * each part, and the end of a stream that stopped without the provider's finish (its usage
   * row is settled before the SDK hears of the end).
   */
  guard(
    stream: ReadableStream<LanguageModelV4StreamPart>,
    watch: StreamWatch,
  ): ReadableStream<LanguageModelV4StreamPart> {
    const reader = stream.getReader();
    return new ReadableStream<LanguageModelV4StreamPart>({
      pull: async (controller) => {
        try {
          const next = await this.race(reader.read());
          if (!next.done) {
            watch.part(next.value);
            return controller.enqueue(next.value);
          }
          this.clear();
          await watch.end(null);
          controller.close();
        } catch (error) {
          this.clear();
          reader.cancel().catch(() => {});
          await watch.end(this.cutOff());
          if (!this.timedOut) return controller.error(error);
          controller.enqueue({ type: "error", error: this.explain(error) });
          controller.close();
        }
      },
      cancel: async (reason) => {
        this.clear();
        const cancelled = reader.cancel(reason);
        // Whoever cancels the stream stopped the call: the caller, or the SDK on its behalf.
        await watch.end(this.cutOff() ?? "aborted");
        return cancelled;
      },
    });
  }
}
