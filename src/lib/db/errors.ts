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
