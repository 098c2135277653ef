import "server-only";
/**
 * An attempt to deliver a notification that did not get through, in words for the delivery
 * log ("HTTP 500 from https://…: …"). `permanent` means retrying cannot help (the server has
 * no SMTP settings): the notification fails at once instead of waiting out its retries.
 */
export class DeliveryError extends Error {
  readonly permanent: boolean;

  constructor(message: string, options: { cause?: unknown; permanent?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.name = "DeliveryError";
    this.permanent = options.permanent ?? false;
  }
}

/** The error's own words for the log, whatever was thrown. */
export function deliveryErrorMessage(error: unknown): string {
  if (error instanceof DeliveryError) return error.message;
  return `Delivery failed unexpectedly: ${error instanceof Error ? error.message : String(error)}`;
}

/** The network error's code (ECONNREFUSED, ENOTFOUND, …) from an error or its causes. */
export function networkErrorCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Object && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && code.length > 0) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Why an aborted attempt stopped: its own time limit, or the worker giving the job up. */
export function isTimeout(error: unknown): boolean {
  return error instanceof Error && error.name === "TimeoutError";
}
