import "server-only";
// What server logs may show of an error. drizzle wraps a failed query as "Failed query: <sql>
// params: <values>" and keeps the values as a property, so logging the error as it is would
// print whatever the query was given: a session token's hash, a person's message, an API key.
// The SQL says which query failed; its values stay out of the log.

const PARAMS_LINE = /\nparams: [\s\S]*$/;

/** `error` as it may be logged: the same chain of causes and stacks, without query parameters. */
export function loggable(error: unknown, depth = 0): unknown {
  if (!(error instanceof Error) || depth > 5) return error;
  const hasParams = PARAMS_LINE.test(error.message) || "params" in error;
  const cause = loggable(error.cause, depth + 1);
  if (!hasParams && cause === error.cause) return error;
  const message = error.message.replace(PARAMS_LINE, "");
  const copy = new Error(message, cause === undefined ? undefined : { cause });
  copy.name = error.name;
  const frames = (error.stack ?? "").split("\n").filter((line) => /^\s+at /.test(line));
  copy.stack = [`${error.name}: ${message}`, ...frames].join("\n");
  return copy;
}

/** The error in one line for a log: its message (parameters left out) and its cause's, no stack. */
export function describeForLog(error: unknown): string {
  const parts: string[] = [];
  for (let current: unknown = error, depth = 0; current !== undefined && current !== null && depth < 4; depth++) {
    const message = current instanceof Error ? current.message.replace(PARAMS_LINE, "") : String(current);
    const line = message.split("\n")[0]!.trim();
    if (line && !parts.includes(line)) parts.push(line);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(": ") || "unknown error";
}

/** console.error for server code: `message`, then the error without query parameters. */
export function logError(message: string, error: unknown): void {
  console.error(message, loggable(error));
}
