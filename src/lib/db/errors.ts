import "server-only";
/** The Postgres error code of a failed query, looking through drizzle's wrapper. */
export function postgresErrorCode(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

export function isUniqueViolation(error: unknown): boolean {
  return postgresErrorCode(error) === "23505";
}

/** A value Postgres cannot take (SQLSTATE class 22: an invalid byte sequence, a number out of range): retrying fails the same way. */
export function isDataException(error: unknown): boolean {
  return postgresErrorCode(error)?.startsWith("22") === true;
}

/** Why waiting may help, in words; null when the error will not go away by itself. */
export function databaseNotReadyYet(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (
    code === "53300" ||
    code === "53400" ||
    /too many clients|too many connections|remaining connection slots are reserved/i.test(message)
  ) {
    return "it has no connections to spare (too many clients)";
  }
  if (
    code === "57P03" ||
    /the database system is (starting up|shutting down|in recovery)|not yet accepting connections/i.test(message)
  )
    return "it is starting up";
  if (code === "ECONNREFUSED" || /ECONNREFUSED/.test(message)) return "nothing answers there yet (connection refused)";
  if (code === "CONNECT_TIMEOUT" || code === "ETIMEDOUT" || /CONNECT_TIMEOUT|ETIMEDOUT/.test(message))
    return "it did not answer in time";
  if (code === "ECONNRESET" || code === "EPIPE" || code === "EAI_AGAIN" || /ECONNRESET|EPIPE|EAI_AGAIN/.test(message))
    return "the connection dropped";
  return null;
}

/**
 * Why a failed query failed for want of a database, looking through drizzle's wrapper: it is
 * starting, full or gone (databaseNotReadyYet), or it dropped the connection (an administrator's
 * or a crash's shutdown, a connection postgres.js saw close); null for any other failure.
 */
export function databaseUnavailableReason(error: unknown): string | null {
  for (let current: unknown = error, depth = 0; current && depth < 5; depth++) {
    const why = databaseNotReadyYet(current);
    if (why) return why;
    const code = (current as { code?: unknown }).code;
    if (code === "57P01" || code === "57P02" || (typeof code === "string" && code.startsWith("08")))
      return "it closed the connection";
    if (code === "CONNECTION_CLOSED" || code === "CONNECTION_ENDED" || code === "CONNECTION_DESTROYED")
      return "the connection closed";
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}
