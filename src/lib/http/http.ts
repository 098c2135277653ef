import "server-only";
import { z } from "zod";
import { checkApiAccess, type Access } from "@/lib/auth/auth";
import { databaseUnavailableReason } from "@/lib/db/errors";
import { CadreError } from "@/lib/errors";
import { describeForLog, logError } from "@/lib/telemetry/log";

/** `{ error: { code, message } }` with a status: the one error shape of the HTTP API. A 503 says when to come back (Retry-After). */
export function errorResponse(status: number, code: string, message: string, headers?: HeadersInit): Response {
  const response = Response.json({ error: { code, message } }, { status, headers });
  if (status === 503 && !response.headers.has("retry-after"))
    response.headers.set("retry-after", String(RETRY_AFTER_SECONDS));
  return response;
}

/** When a client should try again after a 503: the database is starting, full or back within seconds. */
const RETRY_AFTER_SECONDS = 5;

/** Turns anything thrown in a handler into a JSON error. Only the unexpected becomes a 500, and it is logged with its cause. */
export function toErrorResponse(error: unknown): Response {
  if (error instanceof CadreError) {
    const retryAfter =
      error.retryAfterSeconds === undefined ? undefined : { "retry-after": String(error.retryAfterSeconds) };
    return errorResponse(error.status, error.code, error.message, retryAfter);
  }
  if (error instanceof z.ZodError) {
    const message = error.issues
      .map((issue) => (issue.path.length ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
      .join("; ");
    return errorResponse(400, "bad_request:validation", message);
  }
  // The database starting, full or gone is no fault of the request: a 503 to come back to, and one line in the log.
  const unavailable = databaseUnavailableReason(error);
  if (unavailable) {
    console.error(`A request could not reach the database: ${unavailable}.`);
    return errorResponse(
      503,
      "unavailable:database",
      `The database does not answer right now (${unavailable}). Try again in a few seconds.`,
    );
  }
  logError("Unhandled error in a route handler:", error);
  return errorResponse(
    500,
    "internal:unexpected",
    "Something went wrong on the server. The error was logged; try again.",
  );
}

/**
 * Wraps a route handler: checks access first (a session when APP_PASSWORD is set, the
 * Origin of state-changing requests; see checkApiAccess), and answers every failure with
 * the JSON error shape. `access.public` is for the few routes reachable signed out.
 */
export function route<Args extends unknown[]>(handler: (...args: Args) => Promise<Response>, access: Access = {}) {
  return async (...args: Args): Promise<Response> => {
    try {
      // Next passes the request first; tests may call a handler that takes none without it.
      await checkApiAccess(args[0] instanceof Request ? args[0] : undefined, access);
      return await handler(...args);
    } catch (error) {
      return toErrorResponse(error);
    }
  };
}

const uuidSchema = z.uuid();

/** A path id that must be a uuid: anything else is a 404 (no such resource can exist), not a 500. */
export function parseId(value: string, what: string): string {
  if (!uuidSchema.safeParse(value).success) throw new CadreError(`not_found:${what}`, `No ${what} with id ${value}.`);
  return value;
}

/** The largest JSON body a route reads unless it says otherwise. */
const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

function tooLarge(maxBytes: number): CadreError {
  return new CadreError("too_large:body", `The request body is larger than ${formatBytes(maxBytes)}.`);
}

function formatBytes(bytes: number): string {
  return bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;
}

/**
 * The raw body, read with a cap: a declared Content-Length over it is refused before
 * reading, and a body that grows past it (chunked, or lying about its length) is cut off.
 */
export async function readBodyBytes(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  if (!request.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = request.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge(maxBytes);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof CadreError) throw error;
    // Nearly always a client that gave up half-way (closed the tab, lost the network): no fault of
    // the server and nothing to debug, so one line without a stack. Nobody is left to read the 400.
    const where = `${request.method} ${new URL(request.url).pathname.slice(0, 200)}`;
    const why = isClientAbort(error) ? "the client closed the connection" : `reading failed: ${describeForLog(error)}`;
    console.warn(
      `[http] ${where}: the request body stopped after ${total.toLocaleString("en-US")} bytes (${why}); the request was dropped.`,
    );
    throw new CadreError("bad_request:body", "The request body could not be read.", { cause: error });
  }
  const body = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

/**
 * True for the error Node gives a request whose client closed the connection before its body
 * had all arrived ("aborted", ECONNRESET), as our body reading and Next's see it.
 */
export function isClientAbort(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.message === "aborted" && (error as NodeJS.ErrnoException).code === "ECONNRESET") return true;
  return error.cause !== undefined && error.cause !== error && isClientAbort(error.cause);
}

/** `application/json`, with or without parameters (`; charset=utf-8`). */
function isJsonContentType(value: string | null): boolean {
  return value !== null && /^application\/json\s*(;|$)/i.test(value.trim());
}

/**
 * Parses a JSON body (at most `maxBytes`, 1 MiB by default) against a schema; malformed JSON
 * and wrong shapes are 400s, an oversize body 413, a body that is not declared
 * `application/json` 415. The media type is defence in depth against cross-site requests: a
 * page on another site can send text/plain, form and multipart bodies without asking, but a
 * JSON one only after a CORS preflight, which Cadre never grants. A request with no body needs
 * no Content-Type (there is nothing to misread); one whose body is empty gets the JSON error.
 */
export async function parseJsonBody<T extends z.ZodType>(
  request: Request,
  schema: T,
  options: { maxBytes?: number } = {},
): Promise<z.infer<T>> {
  const contentType = request.headers.get("content-type");
  const json = isJsonContentType(contentType);
  const declared = request.headers.get("content-length");
  // Refused unread when the headers already say there is a body; else once it turns out to have one.
  if (!json && declared !== null && declared.trim() !== "0") throw unsupportedMediaType(contentType);
  const bytes = await readBodyBytes(request, options.maxBytes ?? DEFAULT_BODY_LIMIT_BYTES);
  if (!json && bytes.byteLength > 0) throw unsupportedMediaType(contentType);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (error) {
    throw new CadreError("bad_request:json", "The request body is not valid JSON (UTF-8).", { cause: error });
  }
  return parseJsonText(text, schema, "The request body is not valid JSON (UTF-8).");
}

/**
 * Parses JSON text against a schema with the same rules as a body (no U+0000, no `__proto__`
 * keys): for JSON that arrives inside something else, such as Slack's `payload` form field.
 */
export function parseJsonText<T extends z.ZodType>(text: string, schema: T, notJson: string): z.infer<T> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new CadreError("bad_request:json", notJson, { cause: error });
  }
  const problem = forbiddenContent(body);
  if (problem) throw new CadreError("bad_request:validation", problem);
  return schema.parse(body);
}

function unsupportedMediaType(contentType: string | null): CadreError {
  const given = contentType === null ? "no Content-Type" : `Content-Type ${contentType.slice(0, 100)}`;
  return new CadreError(
    "unsupported_media_type:content_type",
    `Send the body as JSON with Content-Type: application/json (this request had ${given}).`,
  );
}

// Postgres text cannot hold U+0000: refused here, it would otherwise fail the query and surface as a 500.
const NUL_MESSAGE = "Text may not contain the NUL character (\\u0000).";

/**
 * What no body may hold, or null: U+0000 in any string or key, and `__proto__` keys (a
 * loose schema would copy one onto its output object and change that object's prototype).
 * Iterative, so a deeply nested body cannot overflow the stack.
 */
function forbiddenContent(value: unknown): string | null {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === "string") {
      if (next.includes("\0")) return NUL_MESSAGE;
    } else if (Array.isArray(next)) {
      for (const item of next) pending.push(item);
    } else if (next !== null && typeof next === "object") {
      for (const [key, item] of Object.entries(next)) {
        if (key.includes("\0")) return NUL_MESSAGE;
        if (key === "__proto__") return "The key __proto__ is not allowed.";
        pending.push(item);
      }
    }
  }
  return null;
}

/** Parses a query string against a schema. An empty parameter (`?q=`, as forms send it) counts as absent. */
export function parseSearchParams<T extends z.ZodType>(request: Request, schema: T): z.infer<T> {
  const present = [...new URL(request.url).searchParams].filter(([, value]) => value !== "");
  if (present.some(([key, value]) => key.includes("\0") || value.includes("\0")))
    throw new CadreError("bad_request:validation", NUL_MESSAGE);
  return schema.parse(Object.fromEntries(present));
}
