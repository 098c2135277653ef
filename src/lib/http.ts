import { z } from "zod";
import { CadreError } from "@/lib/errors";

/** `{ error: { code, message } }` with a status: the one error shape of the HTTP API. */
export function errorResponse(status: number, code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status });
}

/** Turns anything thrown in a handler into a JSON error. Only the unexpected becomes a 500, and it is logged with its cause. */
export function toErrorResponse(error: unknown): Response {
  if (error instanceof CadreError) return errorResponse(error.status, error.code, error.message);
  if (error instanceof z.ZodError) {
    const message = error.issues.map((issue) => (issue.path.length ? `${issue.path.join(".")}: ${issue.message}` : issue.message)).join("; ");
    return errorResponse(400, "bad_request:validation", message);
  }
  console.error("Unhandled error in a route handler:", error);
  return errorResponse(500, "internal:unexpected", "Something went wrong on the server. The error was logged; try again.");
}

/** Wraps a route handler so every failure answers with the JSON error shape. */
export function route<Args extends unknown[]>(handler: (...args: Args) => Promise<Response>) {
  return async (...args: Args): Promise<Response> => {
    try {
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

/** Parses a JSON body against a schema; malformed JSON and wrong shapes are 400s. */
export async function parseJsonBody<T extends z.ZodType>(request: Request, schema: T): Promise<z.infer<T>> {
  let body: unknown;
  try {
    body = await request.json();
  } catch (error) {
    throw new CadreError("bad_request:json", "The request body is not valid JSON.", { cause: error });
  }
  if (containsNul(body)) throw nulError();
  return schema.parse(body);
}

// Postgres text cannot hold U+0000: refused here, it would otherwise fail the query and surface as a 500.
function nulError(): CadreError {
  return new CadreError("bad_request:validation", "Text may not contain the NUL character (\\u0000).");
}

/** Any string (or key) in a parsed JSON value that holds U+0000; iterative, so a deeply nested body cannot overflow the stack. */
function containsNul(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === "string") {
      if (next.includes("\0")) return true;
    } else if (Array.isArray(next)) {
      for (const item of next) pending.push(item);
    } else if (next !== null && typeof next === "object") {
      for (const [key, item] of Object.entries(next)) {
        if (key.includes("\0")) return true;
        pending.push(item);
      }
    }
  }
  return false;
}

/** Parses a query string against a schema. An empty parameter (`?q=`, as forms send it) counts as absent. */
export function parseSearchParams<T extends z.ZodType>(request: Request, schema: T): z.infer<T> {
  const present = [...new URL(request.url).searchParams].filter(([, value]) => value !== "");
  if (present.some(([key, value]) => containsNul(key) || containsNul(value))) throw nulError();
  return schema.parse(Object.fromEntries(present));
}
