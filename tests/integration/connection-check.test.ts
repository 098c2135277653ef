// "Check connection": the configured model server and Tavily, each answered in words, against
// the fake OpenAI-compatible server and the fake Tavily (a refused key, a missing model, a
// server that is not there, nothing configured), and the route that serves it.
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkConnections } from "@/lib/telemetry/connection-check";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";

let openai: FakeOpenAI;
let search: FakeTavily;
/** An address where nothing listens. */
let closedUrl: string;

beforeAll(async () => {
  openai = await startFakeOpenAI(undefined, { models: ["qwen3-8b", "llama-3.1-8b"], apiKey: "sk-right" });
  search = await startFakeTavily(undefined, { apiKey: "tvly-right" });
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  closedUrl = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await openai?.close();
  await search?.close();
});

const none = {
  OPENAI_API_KEY: undefined,
  OPENAI_BASE_URL: undefined,
  LLM_MODEL: undefined,
  TAVILY_API_KEY: undefined,
  TAVILY_BASE_URL: undefined,
};

describe("checkConnections", () => {
  it("says both are not configured on the offline model, and asks nobody", async () => {
    const before = openai.requests.length + search.requests.length;
    const result = await checkConnections(none);
    expect(result.model).toEqual({
      state: "not_configured",
      message: expect.stringMatching(
        /^Not configured: answers come from the built-in demo model\. Set OPENAI_API_KEY, or OPENAI_BASE_URL and LLM_MODEL/,
      ),
    });
    expect(result.search).toEqual({
      state: "not_configured",
      message: expect.stringMatching(/^Not configured: agents cannot search the web\. Set TAVILY_API_KEY/),
    });
    expect(openai.requests.length + search.requests.length).toBe(before);
  });

  it("reaches both with the right keys and a model the server serves", async () => {
    const result = await checkConnections({
      ...none,
      OPENAI_BASE_URL: openai.url,
      OPENAI_API_KEY: "sk-right",
      LLM_MODEL: "qwen3-8b",
      TAVILY_API_KEY: "tvly-right",
      TAVILY_BASE_URL: search.url,
    });
    expect(result.model).toEqual({ state: "reachable", message: `Reachable: ${openai.url} serves qwen3-8b.` });
    expect(result.search).toEqual({ state: "reachable", message: `Reachable: ${search.url} answered a test search.` });
    // One small search with the key, through the client the agents use.
    expect(search.requests.at(-1)).toMatchObject({
      authorization: "Bearer tvly-right",
      body: { query: "Cadre connection check", max_results: 1 },
    });
  });

  it("says a refused key is refused, for each service", async () => {
    const result = await checkConnections({
      ...none,
      OPENAI_BASE_URL: openai.url,
      OPENAI_API_KEY: "sk-wrong",
      LLM_MODEL: "qwen3-8b",
      TAVILY_API_KEY: "tvly-wrong",
      TAVILY_BASE_URL: search.url,
    });
    expect(result.model).toEqual({
      state: "key_refused",
      message: `Key refused: ${openai.url} refused the key in OPENAI_API_KEY (HTTP 401).`,
    });
    expect(result.search).toEqual({
      state: "key_refused",
      message: `Key refused: ${search.url} refused the key in TAVILY_API_KEY.`,
    });
  });

  it("names a missing model and what the server serves instead", async () => {
    const result = await checkConnections({
      ...none,
      OPENAI_BASE_URL: openai.url,
      OPENAI_API_KEY: "sk-right",
      LLM_MODEL: "gpt-5",
    });
    expect(result.model).toEqual({
      state: "model_missing",
      message: `Model missing: ${openai.url} answers, but does not serve gpt-5 (it lists 2 models: llama-3.1-8b, qwen3-8b). Set LLM_MODEL to one it serves.`,
    });
  });

  it("says a server that is not there is unreachable, for each service", async () => {
    const result = await checkConnections({
      ...none,
      OPENAI_BASE_URL: closedUrl,
      LLM_MODEL: "qwen3-8b",
      TAVILY_API_KEY: "tvly-right",
      TAVILY_BASE_URL: closedUrl,
    });
    expect(result.model).toEqual({
      state: "unreachable",
      message: `Unreachable: ${closedUrl} refused the connection (nothing listens there). Check OPENAI_BASE_URL and that the server is running.`,
    });
    expect(result.search.state).toBe("unreachable");
    expect(result.search.message).toMatch(
      new RegExp(`^Unreachable: ${closedUrl.replace(/\./g, "\\.")} .+\\. Check TAVILY_BASE_URL`),
    );
  });

  it("says a server that does not answer in time is unreachable, without waiting longer", async () => {
    // Accepts connections and never answers.
    const held = new Set<import("node:net").Socket>();
    const silent = createServer((socket) => void held.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    try {
      const started = Date.now();
      const result = await checkConnections(
        { ...none, OPENAI_BASE_URL: silentUrl, TAVILY_API_KEY: "k", TAVILY_BASE_URL: silentUrl },
        500,
      );
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(result.model).toEqual({
        state: "unreachable",
        message: `Unreachable: ${silentUrl} did not answer within 0.5 s. Check OPENAI_BASE_URL and that the server is running.`,
      });
      expect(result.search).toEqual({
        state: "unreachable",
        message: `Unreachable: ${silentUrl} did not answer within 0.5 s. Check TAVILY_BASE_URL and this machine's network.`,
      });
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

describe("POST /api/connection-check", () => {
  it("answers both checks as JSON with the app's configuration", async () => {
    for (const name of Object.keys(none)) delete process.env[name];
    delete process.env.APP_PASSWORD;
    const { POST } = await import("@/app/api/connection-check/route");
    const response = await POST(
      new Request("http://localhost/api/connection-check", { method: "POST", headers: { host: "localhost" } }),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      model: { state: "not_configured", message: expect.any(String) },
      search: { state: "not_configured", message: expect.any(String) },
      compatibility: null,
    });
  });
});
