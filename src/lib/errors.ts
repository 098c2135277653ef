import "server-only";
/**
 * One error type for everything a caller should see. `code` is `kind:surface`
 * (e.g. `not_found:agent`); route handlers turn it into a JSON response with the
 * matching status. The original error travels along as `cause`, never swallowed.
 */
export type ErrorKind =
  | "bad_request"
  | "not_found"
  | "conflict"
  | "unauthorized"
  | "forbidden"
  | "too_large"
  | "unsupported_media_type"
  | "rate_limited"
  | "unavailable";

const statusByKind: Record<ErrorKind, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  unavailable: 503,
};

export class CadreError extends Error {
  readonly kind: ErrorKind;
  readonly code: string;
  /** When trying again makes sense (a 429, a 503): the answer's Retry-After, which the message should say in words too. */
  readonly retryAfterSeconds?: number;

  constructor(
    code: `${ErrorKind}:${string}`,
    message: string,
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(message, options);
    this.name = "CadreError";
    this.code = code;
    this.kind = code.split(":")[0] as ErrorKind;
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }

  get status(): number {
    return statusByKind[this.kind];
  }

  toJSON() {
    return { error: { code: this.code, message: this.message } };
  }
}

export function notFound(what: string, id: string): CadreError {
  return new CadreError(`not_found:${what}`, `No ${what} with id ${id}.`);
}
