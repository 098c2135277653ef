import { createOpenAI } from "@ai-sdk/openai";
import { tavily } from "@tavily/core";
import { APICallError, generateText, type ModelMessage, stepCountIs, streamText, tool } from "ai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  type FakeOpenAI,
  lastUserText,
  ROLES_MUST_ALTERNATE,
  SYSTEM_MESSAGE_FIRST,
  scriptedHandler,
  startFakeOpenAI,
} from "./fake-openai";
import { startFakeTavily } from "./fake-tavily";
import { CACHE_BLOCK_TOKENS, CHARS_PER_TOKEN, extension, PromptCache, promptText } from "./prompt-cache";

describe("fake OpenAI server through @ai-sdk/openai", () => {
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });
  const model = () => createOpenAI({ baseURL: fake.url, apiKey: "test" }).chat("fake-model");

  it("streams a tool loop across two requests, sending the tool result back", async () => {
    fake.setHandler(
      scriptedHandler([
        { toolCalls: [{ id: "call_1", name: "search", arguments: { query: "cats" } }] },
        { text: "Cats are popular pets.", usage: { prompt_tokens: 50, completion_tokens: 10, cached_tokens: 32 } },
      ]),
    );
    const searched: string[] = [];
    const result = streamText({
      model: model(),
      messages: [{ role: "user", content: "Tell me about cats" }],
      tools: {
        search: tool({
          description: "Search the web",
          inputSchema: z.object({ query: z.string() }),
          execute: async ({ query }) => {
            searched.push(query);
            return { hits: [`${query} are great`] };
          },
        }),
      },
      stopWhen: stepCountIs(3),
    });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);

    expect(searched).toEqual(["cats"]);
    expect(deltas.join("")).toBe("Cats are popular pets.");
    expect(deltas.length).toBeGreaterThan(1);
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[0]).toMatchObject({ model: "fake-model", stream: true });
    expect(fake.requests[0]?.tools?.[0]?.function.name).toBe("search");
    expect(lastUserText(fake.requests[0]!)).toBe("Tell me about cats");
    expect(fake.requests[1]?.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "call_1",
      content: JSON.stringify({ hits: ["cats are great"] }),
    });
    const steps = await result.steps;
    expect(steps.at(-1)?.usage).toMatchObject({
      inputTokens: 50,
      outputTokens: 10,
      inputTokenDetails: { cacheReadTokens: 32 },
    });
  });

  it("answers a non-streaming generateText with the default reply and estimated usage", async () => {
    fake.setHandler(() => ({ text: "Hello from the fake model." }));
    const { text, usage } = await generateText({ model: model(), prompt: "hi" });

    expect(text).toBe("Hello from the fake model.");
    expect(fake.requests[0]?.stream).toBeUndefined();
    expect(usage.inputTokens).toBe(Math.ceil(JSON.stringify(fake.requests[0]?.messages).length / 4));
    expect(usage.outputTokens).toBe(Math.ceil("Hello from the fake model.".length / 4));
  });

  it("surfaces a 500 as an error", async () => {
    fake.setHandler(() => ({ fault: "status", status: 500 }));
    await expect(generateText({ model: model(), prompt: "hi", maxRetries: 0 })).rejects.toThrow(/Fake failure/);
  });

  it("sends Retry-After with a 429 so the client retries", async () => {
    fake.setHandler(scriptedHandler([{ fault: "status", status: 429, retryAfterSeconds: 0 }, { text: "Second try." }]));
    const { text } = await generateText({ model: model(), prompt: "hi", maxRetries: 1 });
    expect(text).toBe("Second try.");
    expect(fake.requests).toHaveLength(2);
  });

  it("ends a cut stream without a finish reason", async () => {
    fake.setHandler(() => ({ fault: "cut" }));
    const result = streamText({ model: model(), prompt: "hi", maxRetries: 0 });
    expect(await result.text).toBe("This answer was cut ");
    expect(await result.finishReason).toBe("interrupted");
  });

  it("drops a reset connection and releases a hanging one on close", async () => {
    fake.setHandler(() => ({ fault: "reset" }));
    await expect(generateText({ model: model(), prompt: "hi", maxRetries: 0 })).rejects.toThrow();

    const hanging = await startFakeOpenAI(() => ({ fault: "hang" }));
    const pending = generateText({
      model: createOpenAI({ baseURL: hanging.url, apiKey: "test" }).chat("fake-model"),
      prompt: "hi",
      maxRetries: 0,
    });
    pending.catch(() => undefined); // the rejection is asserted below, after close()
    await expect.poll(() => hanging.requests.length).toBe(1);
    await hanging.close();
    await expect(pending).rejects.toThrow();
  });

  it("sends a tool call with invalid JSON arguments", async () => {
    fake.setHandler(scriptedHandler([{ fault: "malformed-tool-call" }, { text: "Sorry." }]));
    const result = await generateText({
      model: model(),
      prompt: "search cats",
      tools: { search: tool({ inputSchema: z.object({ query: z.string() }), execute: async () => "never" }) },
      stopWhen: stepCountIs(2),
    });
    expect(result.steps[0]?.content.some((part) => part.type === "tool-error")).toBe(true);
    expect(result.text).toBe("Sorry.");
  });
});

describe("fake Tavily server through @tavily/core", () => {
  it("returns the results and records the bearer key", async () => {
    const fake = await startFakeTavily();
    try {
      const response = await tavily({ apiKey: "tvly-test", apiBaseURL: fake.url }).search("cats", { maxResults: 2 });

      expect(response.results.map((result) => result.title)).toEqual(["About cats", "cats: the latest"]);
      expect(response.results[0]).toMatchObject({ url: "https://example.com/about", score: 0.9 });
      expect(fake.requests).toEqual([
        {
          path: "/search",
          authorization: "Bearer tvly-test",
          body: expect.objectContaining({ query: "cats", max_results: 2 }),
        },
      ]);
    } finally {
      await fake.close();
    }
  });

  it("turns an error reply into the client's error message", async () => {
    const fake = await startFakeTavily(() => ({ status: 401, error: "Unauthorized: missing or invalid API key." }));
    try {
      await expect(tavily({ apiKey: "tvly-bad", apiBaseURL: fake.url }).search("cats")).rejects.toThrow(
        /invalid API key/,
      );
    } finally {
      await fake.close();
    }
  });

  it("reads pages through extract, reports unreadable ones, and fails with the status a test sets", async () => {
    const fake = await startFakeTavily();
    try {
      const client = tavily({ apiKey: "tvly-test", apiBaseURL: fake.url });
      const read = await client.extract(["https://example.com/a"], { format: "markdown" });
      expect(read.results).toEqual([
        expect.objectContaining({
          url: "https://example.com/a",
          title: "The page at https://example.com/a",
          rawContent: expect.stringContaining("full text"),
        }),
      ]);
      expect(fake.extracts).toEqual([
        {
          path: "/extract",
          authorization: "Bearer tvly-test",
          body: expect.objectContaining({ urls: ["https://example.com/a"], format: "markdown" }),
        },
      ]);
      expect(fake.requests).toEqual([]);

      fake.extract = ({ urls }) => ({
        pages: [],
        failed: urls.map((url) => ({ url, error: "Could not fetch the page." })),
      });
      expect((await client.extract(["https://example.com/b"])).failedResults).toEqual([
        { url: "https://example.com/b", error: "Could not fetch the page." },
      ]);

      fake.extract = () => ({ status: 432, error: "Plan limit reached." });
      await expect(client.extract(["https://example.com/c"])).rejects.toThrow(/Plan limit reached/);
    } finally {
      await fake.close();
    }
  });
});

describe("the prompt cache stand-in", () => {
  const block = "x".repeat(CACHE_BLOCK_TOKENS * CHARS_PER_TOKEN);
  it("serves the start an earlier request shares, in 128-token blocks, from 1,024 tokens on", () => {
    const cache = new PromptCache();
    const long = block.repeat(10);
    expect(cache.measureText(long)).toEqual({ promptTokens: 1280, cachedTokens: 0 });
    // The same start plus a bit: ten whole blocks repeat; the tail is new.
    expect(cache.measureText(`${long}and more`)).toEqual({ promptTokens: 1282, cachedTokens: 1280 });
    // One character changed early voids everything after it.
    expect(cache.measureText(`y${long.slice(1)}`).cachedTokens).toBe(0);
    // Under 1,024 tokens in common is not served from the cache.
    expect(cache.measureText(`${block.repeat(7)}z${block.repeat(3)}`).cachedTokens).toBe(0);
  });

  it("renders tools before messages, so a changed tool set voids the messages behind it", () => {
    const cache = new PromptCache();
    const messages = [{ role: "system", content: block.repeat(12) }];
    const tool = (name: string) => ({ type: "function" as const, function: { name } });
    cache.measure({ messages, tools: [tool("a"), tool("b")] });
    expect(cache.measure({ messages, tools: [tool("a"), tool("b")] }).cachedTokens).toBeGreaterThanOrEqual(1024);
    expect(cache.measure({ messages, tools: [tool("b")] }).cachedTokens).toBe(0);
    expect(
      extension(
        promptText({ messages: messages.slice(0, 1) }),
        promptText({ messages: [...messages, { role: "user", content: "hi" }] }),
      ).extends,
    ).toBe(true);
  });
});

describe("fake OpenAI server's answer modes", () => {
  const servers: FakeOpenAI[] = [];
  afterAll(async () => {
    for (const server of servers) await server.close();
  });
  const on = async (modes: Parameters<typeof startFakeOpenAI>[1]) => {
    const fake = await startFakeOpenAI(
      () => ({ text: "Twelve words that the model meant to say in full, and more." }),
      modes,
    );
    servers.push(fake);
    return createOpenAI({ baseURL: fake.url, apiKey: "test" }).chat("tiny");
  };
  const tools = { search: tool({ inputSchema: z.object({ query: z.string() }), execute: async () => "hit" }) };

  it("noUsage: no usage in a completion, nor a usage chunk in a stream", async () => {
    const model = await on({ answerModes: { noUsage: true } });
    const generated = await generateText({ model, prompt: "hi" });
    expect(generated.usage.inputTokens).toBeUndefined();
    const streamed = streamText({ model, prompt: "hi" });
    expect(await streamed.text).toMatch(/^Twelve/);
    expect((await streamed.usage).inputTokens).toBeUndefined();
  });

  it("emptyAnswers (the first N): empty content and no calls, then the handler's answers", async () => {
    const model = await on({ answerModes: { emptyAnswers: 1 } });
    expect((await generateText({ model, prompt: "hi" })).text).toBe("");
    expect((await generateText({ model, prompt: "hi" })).text).toMatch(/^Twelve/);
  });

  it("lengthCut: half the text, finish reason length", async () => {
    const model = await on({ answerModes: { lengthCut: true } });
    const result = await generateText({ model, prompt: "hi" });
    expect(result.finishReason).toBe("length");
    expect(result.text).toBe("Twelve words that the model me");
  });

  it("noTools: a request that offers tools gets Ollama's 400; one without tools is answered", async () => {
    const model = await on({ answerModes: { noTools: true } });
    await expect(generateText({ model, prompt: "hi", tools, maxRetries: 0 })).rejects.toMatchObject({
      statusCode: 400,
      message: "registry.ollama.ai/library/tiny does not support tools",
    });
    expect((await generateText({ model, prompt: "hi" })).text).toMatch(/^Twelve/);
  });
});

describe("fake OpenAI server misbehaving as real servers do", () => {
  const tools = { search: tool({ description: "Search", inputSchema: z.object({ query: z.string() }) }) };

  it("ignoreToolChoice: a tool call under tool_choice none, words when a tool is forced", async () => {
    const fake = await startFakeOpenAI(() => ({ text: "A summary." }), { misbehaviours: ["ignoreToolChoice"] });
    try {
      const model = createOpenAI({ baseURL: fake.url, apiKey: "test" }).chat("fake-model");
      const none = generateText({ model, prompt: "Summarize.", tools, toolChoice: "none", maxRetries: 0 });
      await expect(none).rejects.toThrow(/tool call even though tool choice was none/);
      fake.setHandler(() => ({ toolCalls: [{ name: "search", arguments: { query: "cats" } }] }));
      const forced = generateText({ model, prompt: "Search.", tools, toolChoice: "required", maxRetries: 0 });
      await expect(forced).rejects.toThrow(/did not contain a tool call/);
      expect(fake.requests.map((request) => request.tool_choice)).toEqual(["none", "required"]);
    } finally {
      await fake.close();
    }
  });

  it("strictRoles: HTTP 400 in the template's words for adjacent roles, the assistant first, a late system message", async () => {
    const fake = await startFakeOpenAI(() => ({ text: "Fine." }), { misbehaviours: ["strictRoles"] });
    try {
      const model = createOpenAI({ baseURL: fake.url, apiKey: "test" }).chat("fake-model");
      const ask = (messages: ModelMessage[]) =>
        generateText({ model, system: "S", messages, allowSystemInMessages: true, maxRetries: 0 }).then(
          (result) => result.text,
          (error: unknown) => (APICallError.isInstance(error) ? `${error.statusCode} ${error.message}` : String(error)),
        );
      expect(
        await ask([
          { role: "user", content: "Hi" },
          { role: "assistant", content: "Hello" },
          { role: "user", content: "Go" },
        ]),
      ).toBe("Fine.");
      expect(
        await ask([
          { role: "user", content: "R1" },
          { role: "user", content: "R2" },
        ]),
      ).toBe(`400 ${ROLES_MUST_ALTERNATE}`);
      expect(
        await ask([
          { role: "assistant", content: "Briefing" },
          { role: "user", content: "Hi" },
        ]),
      ).toBe(`400 ${ROLES_MUST_ALTERNATE}`);
      expect(
        await ask([
          { role: "user", content: "Hi" },
          { role: "system", content: "Late" },
        ]),
      ).toBe(`400 ${SYSTEM_MESSAGE_FIRST}`);
      expect(fake.refusals.map((refusal) => refusal.reason)).toEqual([
        ROLES_MUST_ALTERNATE,
        ROLES_MUST_ALTERNATE,
        SYSTEM_MESSAGE_FIRST,
      ]);
    } finally {
      await fake.close();
    }
  });
});
