import "server-only";
import { AISDKError, APICallError, RetryError } from "ai";
import postgres from "postgres";

const modelTimeout = Symbol.for("cadre.model-timeout");

/**
 * A model call that did not answer within its time limit (MODEL_TIMEOUT_MS). Not named
 * like an abort on purpose: the SDK treats "AbortError"/"TimeoutError" as the caller's
 * cancellation, and this is a failure the person should hear about.
 */
export class ModelTimeoutError extends Error {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: the marker isInstance looks for with `in`
  private readonly [modelTimeout] = true;

  constructor(
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(`The model did not answer within ${timeoutMs} ms.`, options);
    this.name = "ModelTimeoutError";
  }

  /** By a marker, not instanceof, so a second copy of this module still recognises it (as the SDK does). */
  static isInstance(error: unknown): error is ModelTimeoutError {
    return typeof error === "object" && error !== null && modelTimeout in error;
  }
}

/**
 * True when a model call failed: any AI SDK error (API failures, retries given up, tool
 * calls the model garbled, structured output that does not parse, and the SDK's own
 * argument and prompt checks, which retrying would not fix either) and our per-call
 * timeout. Not a model failure: the caller's abort (a Stop), and anything caused by the
 * database, even when it surfaces through a model call.
 */
export function isModelFailure(error: unknown): boolean {
  if (causedByDatabase(error)) return false;
  return AISDKError.isInstance(error) || ModelTimeoutError.isInstance(error) || isTimeoutSignal(error);
}

/**
 * A model failure in words a person can act on. The raw error stays in the log;
 * this is what the chat, the work log and a failed task show.
 */
export function describeModelError(error: unknown): string {
  const root = RetryError.isInstance(error) ? (error.lastError ?? error) : error;
  if (APICallError.isInstance(root)) {
    const status = root.statusCode;
    if (status === 401 || status === 403)
      return `The model server refused the credentials (HTTP ${status}). Check OPENAI_API_KEY.`;
    if (status === 404)
      return `The model server does not know this model (HTTP 404). Check LLM_MODEL or the agent's model override.`;
    if (status === 429)
      return "The model server is rate-limiting requests (HTTP 429). Wait a little and try again, or raise your plan's limits.";
    if (status !== undefined && status >= 500)
      return `The model server failed (HTTP ${status}). Try again in a moment.`;
    if (cannotCallTools(root)) {
      const model = requestedModel(root);
      return `The model ${model ?? "in use"} cannot call tools (its server says: ${root.message}), and Cadre's agents work through tools. Choose a model that supports tool calling, in LLM_MODEL or as this agent's own model.`;
    }
    if (status !== undefined && status < 300)
      return `The model server's answer was cut off or malformed (${root.message}). Try again; if it keeps happening, check the server's logs.`;
    if (status !== undefined) return `The model server rejected the request (HTTP ${status}): ${root.message}`;
    return `Could not reach the model server at ${safeUrl(root.url)}: ${root.message}. Check OPENAI_BASE_URL and that the server is running.`;
  }
  if (ModelTimeoutError.isInstance(root)) {
    return `The model server did not answer in time (${formatSeconds(root.timeoutMs)}). Try again, or raise MODEL_TIMEOUT_MS for a slow local model.`;
  }
  // The SDK's own `timeout` option aborts with a TimeoutError. An abort that gets this far
  // was not the caller's (callers check their own signal first): a model that reports its
  // time limit as a plain AbortError.
  if (isTimeoutSignal(root) || (root instanceof Error && root.name === "AbortError")) {
    return "The model server did not answer in time. Try again, or raise MODEL_TIMEOUT_MS for a slow local model.";
  }
  const message = root instanceof Error ? root.message : String(root);
  // Network failures and some servers' own time limits reach us as plain errors: the SDK
  // has no class for them, so their messages are all there is to go on.
  if (/ECONNREFUSED|ENOTFOUND|fetch failed|ECONNRESET|socket hang up/i.test(message)) {
    return `Could not reach the model server (${message}). Check OPENAI_BASE_URL and that the server is running.`;
  }
  if (/timed? ?out|timeout/i.test(message)) return `The model server did not answer in time (${message}). Try again.`;
  return `The model call failed: ${message}`;
}

/**
 * A server's refusal to take tools for this model (Ollama: "registry.ollama.ai/library/x does
 * not support tools"; others say "tools are not supported", "tool calling is not supported").
 */
const NO_TOOLS = /does not support tools|tools? (?:use |calling |calls )?(?:is |are )?not supported/i;

/**
 * The model that cannot call tools at all, as its server said (no retry or other task will fare
 * better): its name as the request gave it, or "the model"; null for any other error.
 */
export function modelWithoutTools(error: unknown): string | null {
  const root = RetryError.isInstance(error) ? (error.lastError ?? error) : error;
  if (!cannotCallTools(root) || !APICallError.isInstance(root)) return null;
  return requestedModel(root) ?? "the model";
}

function cannotCallTools(error: unknown): boolean {
  const root = RetryError.isInstance(error) ? (error.lastError ?? error) : error;
  return (
    APICallError.isInstance(root) &&
    root.statusCode !== undefined &&
    root.statusCode >= 400 &&
    root.statusCode < 500 &&
    NO_TOOLS.test(`${root.message} ${root.responseBody ?? ""}`)
  );
}

/** The model's name as the request gave it, for words that name it. */
function requestedModel(error: APICallError): string | null {
  const body = error.requestBodyValues;
  return body && typeof body === "object" && "model" in body && typeof body.model === "string" ? body.model : null;
}

// What a model sent that is no answer, in words (the work loop and the chat use them).

/** A task's turn ended with nothing said or done, even after the model was told so and asked again. */
export function emptyAnswerReason(modelId: string): string {
  return `The model ${modelId} answered with nothing, even when asked again, so the task was not done. Try it again, or choose another model for this agent.`;
}

/** A task's last answer was cut off at the model's output limit, even after it was asked for a shorter one. */
export function cutAnswerReason(modelId: string): string {
  return `The model ${modelId} was cut off at its output length limit, even when asked for a shorter answer, so the task was not done. Raise the model server's output limit, or choose another model for this agent.`;
}

/** A turn's model kept sending answers nothing could be done with (see UnusableAnswers in work-loop.ts). */
export function unusableAnswersReason(modelId: string, answers: number): string {
  return `The model ${modelId} sent ${answers} answers in a row that could not be used (tool calls whose arguments were not JSON, or that named a tool it was not offered), so its task was stopped. Try it again, or choose another model for this agent.`;
}

/**
 * A task's model wrote its tool calls as text, even after it was told text is not run: its server
 * does not pass tool calls for it (a chat template without tools), so no work can be done with it.
 */
export function toolCallsAsTextReason(modelId: string): string {
  return `The model ${modelId} writes its tool calls as text instead of calling the tools, even when told, so the task was not done: its server does not pass tool calls for this model. Choose a model that supports tool calling, in LLM_MODEL or as this agent's own model.`;
}

/** A chat reply that said nothing and called nothing. */
export function emptyReplyMessage(modelId: string): string {
  return `The model ${modelId} answered with nothing. Try again, or choose another model for this agent.`;
}

/** A chat reply whose last answer was cut off at the model's output limit: what came is kept, and the person told it is not all. */
export function cutReplyMessage(modelId: string): string {
  return `The reply was cut off at the output limit of the model ${modelId}. Ask for a shorter answer, raise the model server's output limit, or choose another model for this agent.`;
}

function isTimeoutSignal(error: unknown): boolean {
  return error instanceof DOMException && error.name === "TimeoutError";
}

/** A Postgres error, or an error caused by one (drizzle wraps them in DrizzleQueryError). */
function causedByDatabase(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (current instanceof postgres.PostgresError) return true;
    current = current.cause;
  }
  return false;
}

function formatSeconds(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}

function safeUrl(url: string | undefined): string {
  if (!url) return "the configured URL";
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return "the configured URL";
  }
}
