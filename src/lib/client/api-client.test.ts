import { afterEach, describe, expect, it, vi } from "vitest";
import { api } from "./api-client";

// The server takes JSON bodies only as application/json (415 otherwise); a request with no
// body needs no Content-Type. What the pages send must match (issue 10, item 4).
describe("api()", () => {
  afterEach(() => vi.unstubAllGlobals());

  function captureFetch() {
    const calls: { url: string; init: RequestInit }[] = [];
    vi.stubGlobal(
      "fetch",
      vi.fn(async (url: string, init: RequestInit) => {
        calls.push({ url, init });
        return new Response("{}", { status: 200, headers: { "content-type": "application/json" } });
      }),
    );
    return calls;
  }

  it("sends a body as JSON with Content-Type: application/json", async () => {
    const calls = captureFetch();
    await api("/api/teams", { method: "POST", body: { name: "n", mission: "m" } });
    await api("/api/inbox/x", { method: "PATCH", body: { read: true } });
    for (const { init } of calls) {
      expect(new Headers(init.headers).get("content-type")).toBe("application/json");
      expect(typeof init.body).toBe("string");
      JSON.parse(init.body as string);
    }
  });

  it("sends a bodiless POST or DELETE with neither body nor Content-Type", async () => {
    const calls = captureFetch();
    await api("/api/inbox/read-all", { method: "POST" });
    await api("/api/agents/x/stop", { method: "POST" });
    await api("/api/knowledge/x", { method: "DELETE" });
    for (const { init } of calls) {
      expect(init.body).toBeUndefined();
      expect(new Headers(init.headers).has("content-type")).toBe(false);
    }
  });
});
