import "server-only";
import { APICallError, RetryError, ToolChoiceViolationError, tool, type ModelMessage, type ToolChoice } from "ai";
import { z } from "zod";
import type { Db } from "@/lib/db/client";
import type { NewModelProfile } from "@/lib/db/queries/model-profiles";
import { logError } from "@/lib/telemetry/log";
import { ModelTimeoutError } from "./errors";
import { generateModelText, type ModelCall } from "./model-call";
import type { ModelChoice } from "./provider";

/**
 * What a model does when asked, seen in a few small requests (item 4 of issue 33): does it call
 * a tool when told to (naming it, or "required"), keep to words under tool_choice "none", make
 * two calls in one answer, take two user messages in a row, send token counts (and cached ones),
 * and what context window its server states. Each answer is true, false, or null when its
 * request failed for another reason (a timeout, a 500): a check never claims what it did not see.
 */
export type ModelBehaviour = Omit<NewModelProfile, "model" | "baseUrl">;

/** One request of the check may take this long; a local model loading from disk may need most of it. */
export const MODEL_CHECK_TIMEOUT_MS = 30_000;
/** Enough for a reasoning model to think a little before its call; the prompts are a few dozen tokens. */
const MAX_OUTPUT_TOKENS = 512;
const LIST_TIMEOUT_MS = 5_000;

const lookUpCity = tool({
  description: "Look up the country a city is in.",
  inputSchema: z.object({ city: z.string().describe("The city's name") }),
});
const tools = { lookUpCity };

type Probe = { answered: true; toolCalls: number; usage: UsageSeen } | { answered: false; error: unknown };
type UsageSeen = { counted: boolean; cachedFigure: boolean };

export type ModelCheckOptions = {
  db: Db;
  model: ModelChoice;
  /** The server's base URL (modelServerUrl), for its model list; its key, if it wants one. */
  baseUrl: string;
  apiKey?: string;
  /** Each request's time limit; MODEL_CHECK_TIMEOUT_MS when not given. */
  timeoutMs?: number;
  abortSignal?: AbortSignal;
};

/**
 * Asks the model the check's requests one after the other (a local server answers one at a time
 * anyway), through the one model-call helper, so each writes a usage row ("model_check", no
 * agent). The first request's failure for a reason other than the model's behaviour (the server
 * unreachable, the key refused, the model unknown) ends the check with that reason as `problem`.
 */
export async function checkModelBehaviour(options: ModelCheckOptions): Promise<ModelBehaviour> {
  const call: ModelCall = {
    db: options.db,
    model: options.model,
    purpose: "model_check",
    agentId: null,
    teamId: null,
    timeoutMs: options.timeoutMs ?? MODEL_CHECK_TIMEOUT_MS,
    abortSignal: options.abortSignal,
  };
  const contextTokens = statedContextTokens(options);

  const named = await ask(call, {
    toolChoice: { type: "tool", toolName: "lookUpCity" },
    prompt: "Which country is Lyon in?",
  });
  const stopper = named.answered ? null : blockingProblem(named.error);
  if (stopper) return { ...unknownBehaviour(), contextTokens: await contextTokens, problem: stopper };

  const required = await ask(call, { toolChoice: "required", prompt: "Say hello in one word." });
  const none = await ask(call, {
    toolChoice: "none",
    prompt: "Look up the city Lyon with the lookUpCity tool. If you cannot use tools now, answer in one word: Lyon.",
  });
  const parallel = await ask(call, {
    toolChoice: "auto",
    prompt: "Look up both Lyon and Osaka with lookUpCity: make both calls now, in one answer, without asking.",
  });
  // Sent as built: the engine joins such messages in every other request, so only this one can tell.
  const roles = await ask(
    { ...call, sentAsBuilt: true },
    {
      messages: [
        { role: "user", content: "Hello." },
        { role: "user", content: "Reply with the single word: ready." },
      ],
    },
  );
  const probes = [named, required, none, parallel, roles];
  const answers = probes.filter((probe) => probe.answered);
  return {
    // A server that refuses a request with tools (a model without tool support) did not call one either.
    callsNamedTool: obeyed(named, (calls) => calls > 0) ?? (refusedRequest(failure(named)) ? false : null),
    callsToolWhenRequired: obeyed(required, (calls) => calls > 0) ?? (refusedRequest(failure(required)) ? false : null),
    respectsNoTools: obeyed(none, (calls) => calls === 0),
    // No call at all says nothing about making two at once.
    parallelToolCalls: parallel.answered ? (parallel.toolCalls === 0 ? null : parallel.toolCalls >= 2) : null,
    acceptsConsecutiveRoles: roles.answered ? true : refusedRequest(failure(roles)) ? false : null,
    reportsUsage: answers.length === 0 ? null : answers.some((probe) => probe.usage.counted),
    reportsCachedTokens: answers.length === 0 ? null : answers.some((probe) => probe.usage.cachedFigure),
    contextTokens: await contextTokens,
    // Nothing answered and nothing it did was seen: what the first request met is why.
    problem: answers.length === 0 && !probes.some((probe) => violated(probe)) ? problemOf(failure(named)) : null,
  };
}

function unknownBehaviour(): Omit<ModelBehaviour, "contextTokens" | "problem"> {
  return {
    callsNamedTool: null,
    callsToolWhenRequired: null,
    respectsNoTools: null,
    parallelToolCalls: null,
    acceptsConsecutiveRoles: null,
    reportsUsage: null,
    reportsCachedTokens: null,
  };
}

async function ask(
  call: ModelCall,
  request: { toolChoice?: ToolChoice<typeof tools>; prompt?: string; messages?: ModelMessage[] },
): Promise<Probe> {
  try {
    const input = request.messages ? { messages: request.messages } : { prompt: request.prompt ?? "" };
    const result = await generateModelText<typeof tools>(call, {
      ...input,
      ...(request.toolChoice && { tools, toolChoice: request.toolChoice }),
      maxOutputTokens: MAX_OUTPUT_TOKENS,
    });
    return { answered: true, toolCalls: result.toolCalls.length, usage: usageSeen(result.usage) };
  } catch (error) {
    return { answered: false, error };
  }
}

function violated(probe: Probe): boolean {
  return !probe.answered && ToolChoiceViolationError.isInstance(probe.error);
}

function failure(probe: Probe): unknown {
  return probe.answered ? null : probe.error;
}

/** Whether the model kept to the tool choice: its answer's calls, or the SDK's refusal of an answer that broke it. */
function obeyed(probe: Probe, kept: (toolCalls: number) => boolean): boolean | null {
  if (probe.answered) return kept(probe.toolCalls);
  return violated(probe) ? false : null;
}

/** Token counts at all (a server that sends no `usage` leaves them undefined), and a cached-token figure in them, even 0. */
function usageSeen(usage: { inputTokens: number | undefined; raw?: unknown }): UsageSeen {
  const raw = (usage.raw ?? {}) as {
    prompt_tokens_details?: { cached_tokens?: unknown };
    input_tokens_details?: { cached_tokens?: unknown };
  };
  const cached = raw.prompt_tokens_details?.cached_tokens ?? raw.input_tokens_details?.cached_tokens;
  return { counted: usage.inputTokens !== undefined, cachedFigure: typeof cached === "number" };
}

function apiErrorOf(error: unknown): APICallError | null {
  const root = RetryError.isInstance(error) ? (error.lastError ?? error) : error;
  return APICallError.isInstance(root) ? root : null;
}

/** A 400 or 422: the server read the request and would not take it (as chat templates refuse roles that do not alternate). */
function refusedRequest(error: unknown): boolean {
  const status = apiErrorOf(error)?.statusCode;
  return status === 400 || status === 422;
}

/**
 * A failure that will fail every request alike, so the check stops at the first: no answer at
 * all (unreachable), the key refused, the model unknown. A 400 is not one: a server may refuse
 * a forced tool choice it does not support and answer the rest.
 */
function blockingProblem(error: unknown): string | null {
  const status = apiErrorOf(error)?.statusCode;
  if (status === 400 || status === 422 || ToolChoiceViolationError.isInstance(error)) return null;
  if (status !== undefined && status < 500 && status !== 429 && status !== 408) return problemOf(error);
  return unreachable(error) ? problemOf(error) : null;
}

function unreachable(error: unknown): boolean {
  const root = RetryError.isInstance(error) ? (error.lastError ?? error) : error;
  const text = root instanceof Error ? `${root.message} ${String(root.cause ?? "")}` : String(root);
  return /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|fetch failed|Cannot connect/i.test(text);
}

/**
 * Why a check could not finish, in words for the model's card (which names no settings: the
 * README's Models section does). The error itself goes to the log.
 */
function problemOf(error: unknown): string {
  const status = apiErrorOf(error)?.statusCode;
  if (status === 401 || status === 403) return `The server refused the key Cadre sends (HTTP ${status}).`;
  if (status === 404) return "The server does not serve a model by this name.";
  if (status === 429) return "The server is limiting requests (HTTP 429): try again in a while.";
  if (status !== undefined) return `The server answered with an error (HTTP ${status}).`;
  if (
    ModelTimeoutError.isInstance(error) ||
    (RetryError.isInstance(error) && ModelTimeoutError.isInstance(error.lastError))
  )
    return "The model did not answer in time.";
  if (unreachable(error)) return "The server could not be reached: is it running, at the address Cadre is set to?";
  logError("A model check failed:", error);
  return "The request failed; the server's log has the details.";
}

/** Where servers state a model's context window in GET /models, the nearest to what it serves first. */
const CONTEXT_FIELDS = [
  ["loaded_context_length"], // LM Studio: as loaded now
  ["max_model_len"], // vLLM
  ["context_length"], // OpenRouter, others
  ["context_window"], // Groq, others
  ["max_context_length"], // LM Studio: the most it can load
  ["top_provider", "context_length"], // OpenRouter
  ["meta", "n_ctx"], // llama.cpp's server
  ["meta", "n_ctx_train"], // llama.cpp's server: what the model was trained for
] as const;
const listedModel = z.looseObject({ id: z.string() });
const modelList = z.object({ data: z.array(z.unknown()) });

/**
 * The context window the server states for the model in GET {base}/models, in tokens; null
 * when it states none (OpenAI, Ollama) or does not answer. Some servers state what the model
 * was trained for (llama.cpp's n_ctx_train) rather than what they serve: the card says so.
 */
async function statedContextTokens(options: Pick<ModelCheckOptions, "baseUrl" | "apiKey" | "model">) {
  try {
    const response = await fetch(`${options.baseUrl}/models`, {
      headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
      signal: AbortSignal.timeout(LIST_TIMEOUT_MS),
    });
    if (!response.ok) return null;
    const listed = modelList.safeParse(await response.json());
    if (!listed.success) return null;
    const entry = listed.data.data
      .map((item) => listedModel.safeParse(item))
      .find((item) => item.success && item.data.id === options.model.modelId)?.data;
    if (!entry) return null;
    for (const path of CONTEXT_FIELDS) {
      const value = path.reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], entry);
      if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
    }
    return null;
  } catch {
    return null;
  }
}
