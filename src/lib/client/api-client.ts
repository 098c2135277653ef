// The pages' side of the HTTP API: JSON in and out, errors as the server's own message.

/** A row as it reaches the browser through JSON (or a server page's props): its dates as ISO strings. */
export type Wire<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };

/** A row in its JSON shape, for passing from a server page to a client component. */
export function toWire<T extends object>(row: T): Wire<T> {
  return JSON.parse(JSON.stringify(row)) as Wire<T>;
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code?: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** The `{error: {message}}` of an API error body, or the text itself. */
export function errorMessageFrom(text: string, fallback = "The server did not answer as expected."): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: string } | string };
    if (typeof body.error === "string") return body.error;
    if (body.error?.message) return body.error.message;
  } catch {
    // not JSON
  }
  return text.trim() || fallback;
}

export async function api<T = unknown>(url: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: init.method ?? "GET",
      headers: init.body === undefined ? undefined : { "content-type": "application/json" },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      cache: "no-store",
    });
  } catch (error) {
    throw new ApiError(
      `Could not reach the Cadre server (${error instanceof Error ? error.message : error}). Is it running?`,
      0,
    );
  }
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  if (!response.ok) {
    let code: string | undefined;
    try {
      code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
    } catch {
      // not JSON
    }
    throw new ApiError(errorMessageFrom(text, `The server answered ${response.status}.`), response.status, code);
  }
  return JSON.parse(text) as T;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
