import { describe, expect, it } from "vitest";
import { toErrorResponse } from "./http";

describe("toErrorResponse", () => {
  it("answers a database that is full or gone with a 503 to come back to, not a 500", async () => {
    const full = new Error("Failed query: update agents set wake_requested_at = clock_timestamp() where id = $1", {
      cause: Object.assign(new Error("sorry, too many clients already"), { code: "53300" }),
    });
    const response = toErrorResponse(full);
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("5");
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("unavailable:database");
    // No query, no parameters: what happened and what to do.
    expect(body.error.message).not.toMatch(/update agents|\$1/);
    expect(toErrorResponse(new TypeError("boom")).status).toBe(500);
  });
});
