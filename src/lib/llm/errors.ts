import { APICallError, RetryError } from "ai";

/**
 * A model failure in words a person can act on. The raw error stays in the log;
 * this is what the chat, the work log and a failed task show.
 */
export function describeModelError(error: unknown): string {
  const root = error instanceof RetryError ? (error.lastError ?? error) : error;
  if (APICallError.isInstance(root)) {
    const status = root.statusCode;
    if (status === 401 || status === 403) return `The model server refused the credentials (HTTP ${status}). Check OPENAI_API_KEY.`;
    if (status === 404) return `The model server does not know this model (HTTP 404). Check LLM_MODEL or the agent's model override.`;
    if (status === 429) return "The model server is rate-limiting requests (HTTP 429). Wait a little and try again, or raise your plan's limits.";
    if (status !== undefined && status >= 500) return `The model server failed (HTTP ${status}). Try again in a moment.`;
    if (status !== undefined && status < 300) return `The model server's answer was cut off or malformed (${root.message}). Try again; if it keeps happening, check the server's logs.`;
    if (status !== undefined) return `The model server rejected the request (HTTP ${status}): ${root.message}`;
    return `Could not reach the model server at ${safeUrl(root.url)}: ${root.message}. Check OPENAI_BASE_URL and that the server is running.`;
  }
  const message = root instanceof Error ? root.message : String(root);
  // Our own per-call timeout aborts the call (or the wait between its retries).
  if (root instanceof Error && (root.name === "AbortError" || root.name === "TimeoutError")) {
    return "The model server did not answer in time. Try again, or raise MODEL_TIMEOUT_MS for a slow local model.";
  }
  if (/ECONNREFUSED|ENOTFOUND|fetch failed|ECONNRESET|socket hang up/i.test(message)) {
    return `Could not reach the model server (${message}). Check OPENAI_BASE_URL and that the server is running.`;
  }
  if (/timed? ?out|timeout/i.test(message)) return `The model server did not answer in time (${message}). Try again.`;
  return `The model call failed: ${message}`;
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
