// Know the model before it fails (issue 33, item 4): a model is checked in a few small requests
// through the real provider path (@ai-sdk/openai over HTTP) against a local OpenAI-compatible
// server that (a) obeys, (b) ignores tool_choice as Ollama does, (c) refuses roles that do not
// alternate with a 400 as many chat templates do, (d) sends no usage, (e) states a context size
// in GET /models, or (f) cannot call tools; what was seen is stored as the model's profile and
// read back as the card's words. The server is this file's own: each behaviour is a switch.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { checkAndStoreModel, listModelsInUse, listTeamModels } from "@/lib/domain/model-profiles";
import { getModelProfile } from "@/lib/db/queries/model-profiles";
import { modelServerUrl } from "@/lib/llm/provider";
import { modelCard, offlineModelCard } from "@/lib/views/model-card";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase, jsonRequest } from "../support/web";

/** How the local server misbehaves; all off: it obeys like OpenAI. */
type Behaviour = {
  /** "ignore": Ollama's way, a forced or required tool gets words, "none" still gets a call. */
  toolChoice?: "obey" | "ignore";
  /** Two messages of one role in a row → 400, as a chat template that wants user/assistant turns. */
  strictRoles?: boolean;
  /** Answers carry no `usage`. */
  noUsage?: boolean;
  /** Any request with tools → 400 "does not support tools", as Ollama answers for such a model. */
  noTools?: boolean;
  /** Calls one tool per answer at most. */
  oneCallAtATime?: boolean;
  /** Every chat request answered with this status (404: a model it does not serve; 401: a key it refuses). */
  refuseWith?: number;
  /** What GET /models lists for each model beside its id (context fields). */
  listed?: Record<string, unknown>;
};

type ChatRequest = {
  model: string;
  messages: { role: string; content?: unknown }[];
  tools?: { function: { name: string } }[];
  tool_choice?: "none" | "auto" | "required" | { type: "function"; function: { name: string } };
};

let behaviour: Behaviour = {};
const received: ChatRequest[] = [];
let server: ReturnType<typeof createServer>;
const sockets = new Set<Socket>();
let baseUrl: string;

function answer(request: ChatRequest): { status: number; body: object } {
  if (behaviour.refuseWith)
    return { status: behaviour.refuseWith, body: { error: { message: "refused", type: "invalid_request_error" } } };
  const roles = request.messages.map((message) => message.role);
  if (behaviour.strictRoles && roles.some((role, index) => index > 0 && role === roles[index - 1]))
    return {
      status: 400,
      body: {
        error: {
          message: "Conversation roles must alternate user/assistant/user/assistant/...",
          type: "invalid_request_error",
        },
      },
    };
  if (behaviour.noTools && request.tools?.length)
    return {
      status: 400,
      body: { error: { message: `registry.local/${request.model} does not support tools`, type: "api_error" } },
    };
  const tool = request.tools?.[0]?.function.name;
  const choice = request.tool_choice ?? "auto";
  let calls = 0;
  if (tool) {
    if (behaviour.toolChoice === "ignore") calls = choice === "none" ? 1 : choice === "auto" ? 1 : 0;
    else if (choice === "none") calls = 0;
    else if (choice === "auto") calls = behaviour.oneCallAtATime ? 1 : 2;
    else calls = 1;
  }
  const toolCalls = Array.from({ length: calls }, (_, index) => ({
    id: `call_${received.length}_${index}`,
    type: "function",
    function: { name: tool, arguments: JSON.stringify({ city: index === 0 ? "Lyon" : "Osaka" }) },
  }));
  const message =
    calls > 0 ? { role: "assistant", content: null, tool_calls: toolCalls } : { role: "assistant", content: "ready" };
  return {
    status: 200,
    body: {
      id: "chatcmpl-local",
      object: "chat.completion",
      created: 0,
      model: request.model,
      choices: [{ index: 0, message, finish_reason: calls > 0 ? "tool_calls" : "stop" }],
      ...(!behaviour.noUsage && {
        usage: {
          prompt_tokens: 40,
          completion_tokens: 5,
          total_tokens: 45,
          prompt_tokens_details: { cached_tokens: 0 },
        },
      }),
    },
  };
}

async function respond(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const send = (status: number, body: object) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  if (req.method === "GET" && req.url?.endsWith("/models"))
    return send(200, {
      object: "list",
      data: ["local-model", "other-model"].map((id) => ({ id, object: "model", ...behaviour.listed })),
    });
  const chunks: Buffer[] = [];
  for await (const piece of req) chunks.push(piece as Buffer);
  const request = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ChatRequest;
  received.push(request);
  const { status, body } = answer(request);
  send(status, body);
}

let database: TestDatabase;
const config = () => ({ OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: undefined, LLM_MODEL: "local-model" });

beforeAll(async () => {
  server = createServer((req, res) => void respond(req, res));
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  // The route handlers read the environment once: the local server is the configured one.
  delete process.env.APP_PASSWORD;
  delete process.env.OPENAI_API_KEY;
  process.env.OPENAI_BASE_URL = baseUrl;
  process.env.LLM_MODEL = "local-model";
  process.env.CONTEXT_TOKEN_BUDGET = "24000";
  database = await createWebTestDatabase();
});

afterAll(async () => {
  await closeWebTestDatabase(database);
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

beforeEach(async () => {
  behaviour = {};
  received.length = 0;
  await database.db.execute(sql`delete from model_profiles`);
  await database.db.execute(sql`delete from usage`);
});

async function check(model: string | null = null) {
  const profile = await checkAndStoreModel(database.db, model, { config: config(), timeoutMs: 5_000 });
  expect(profile).not.toBeNull();
  const stored = await getModelProfile(database.db, { model: model ?? "local-model", baseUrl });
  expect(stored).toEqual(profile);
  return { profile: stored!, card: modelCard(stored!.model, stored, 24_000) };
}

const words = (card: ReturnType<typeof modelCard>) => [card.summary, ...card.lines.map((line) => line.text)].join("\n");

describe("checking a model", () => {
  it("(a) sees a model that obeys do everything asked, through five small requests each with a usage row", async () => {
    const { profile, card } = await check();
    expect(profile).toMatchObject({
      model: "local-model",
      baseUrl,
      callsNamedTool: true,
      callsToolWhenRequired: true,
      respectsNoTools: true,
      parallelToolCalls: true,
      acceptsConsecutiveRoles: true,
      reportsUsage: true,
      reportsCachedTokens: true,
      contextTokens: null,
      problem: null,
    });
    // What the requests asked, as the server saw them.
    expect(received.map((request) => request.tool_choice ?? null)).toEqual([
      { type: "function", function: { name: "lookUpCity" } },
      "required",
      "none",
      "auto",
      null,
    ]);
    expect(received[4]!.messages.map((message) => message.role)).toEqual(["user", "user"]);
    const rows = await database.db.execute<{ purpose: string; agent_id: string | null; model: string }>(
      sql`select purpose, agent_id, model from usage`,
    );
    expect(rows).toHaveLength(5);
    expect(new Set(rows.map((row) => `${row.purpose} ${row.agent_id} ${row.model}`))).toEqual(
      new Set(["model_check null local-model"]),
    );
    expect(card.state).toBe("checked");
    expect(card.summary).toBe("This model does what Cadre asks of it.");
    expect(words(card)).toContain("It keeps to 'no tools now'.");
    expect(words(card)).toContain("It reports token counts, cached tokens included.");
    expect(words(card)).toMatch(/Its server does not say how much context it takes/);
  });

  it("(b) sees a model that ignores tool_choice, and the card says Cadre summarizes without tools", async () => {
    behaviour = { toolChoice: "ignore" };
    const { profile, card } = await check();
    expect(profile).toMatchObject({
      callsNamedTool: false,
      callsToolWhenRequired: false,
      respectsNoTools: false,
      parallelToolCalls: false,
      acceptsConsecutiveRoles: true,
      reportsUsage: true,
      problem: null,
    });
    expect(card.lines.filter((line) => line.tone === "warn").map((line) => line.text)).toContain(
      "This model ignores 'no tools now'; Cadre summarizes without offering tools.",
    );
    expect(words(card)).toContain("It makes one tool call at a time");
  });

  it("(c) sees a server that refuses roles that do not alternate", async () => {
    behaviour = { strictRoles: true };
    const { profile, card } = await check();
    expect(profile).toMatchObject({ acceptsConsecutiveRoles: false, callsNamedTool: true, respectsNoTools: true });
    expect(words(card)).toContain(
      "Its server refuses two messages in a row from the same side; Cadre sends such messages as one.",
    );
  });

  it("(d) sees a server that sends no token counts, and says Cadre estimates them", async () => {
    behaviour = { noUsage: true };
    const { profile, card } = await check();
    expect(profile).toMatchObject({ reportsUsage: false, reportsCachedTokens: false, callsNamedTool: true });
    expect(words(card)).toContain(
      "This server sends no token counts; Cadre estimates them, marks them as estimates, and budgets count them.",
    );
  });

  it("(e) reads the context size the server states in its model list, whichever way it says it", async () => {
    for (const [listed, tokens] of [
      [{ max_model_len: 8192 }, 8192], // vLLM
      [{ context_length: 131072, top_provider: { context_length: 65536 } }, 131072], // OpenRouter
      [{ meta: { n_ctx_train: 4096, n_vocab: 32000 } }, 4096], // llama.cpp's server
      [{ max_context_length: 32768, loaded_context_length: 16384 }, 16384], // LM Studio: as loaded
      [{ context_length: "lots" }, null],
    ] as const) {
      behaviour = { listed };
      const { profile, card } = await check();
      expect(profile.contextTokens).toBe(tokens);
      if (tokens === 8192)
        expect(words(card)).toContain(
          "Context: 8,192 tokens, no more than the 24,000 Cadre lets a conversation reach before summarizing it: set the context budget below 8,192.",
        );
      if (tokens === 131072)
        expect(card.lines.at(-1)).toMatchObject({
          tone: "ok",
          text: expect.stringMatching(/^Context: 131,072 tokens, above/),
        });
    }
  });

  it("(f) sees a model that cannot call tools, and says to choose another", async () => {
    behaviour = { noTools: true };
    const { profile, card } = await check();
    expect(profile).toMatchObject({
      callsNamedTool: false,
      callsToolWhenRequired: false,
      respectsNoTools: null,
      parallelToolCalls: null,
      acceptsConsecutiveRoles: true,
      reportsUsage: true,
      problem: null,
    });
    expect(card.summary).toMatch(/did not call tools when asked.*choose a model that supports tool calling/);
  });

  it("keeps one profile per model and server, replaced by the next check of that pair", async () => {
    await check();
    behaviour = { noUsage: true };
    await check();
    await check("other-model");
    const rows = await database.db.execute<{ model: string; reports_usage: boolean }>(
      sql`select model, reports_usage from model_profiles order by model`,
    );
    expect(rows.map((row) => [row.model, row.reports_usage])).toEqual([
      ["local-model", false],
      ["other-model", false],
    ]);
    // Another server (the same model name elsewhere) has no profile until checked there.
    expect(await getModelProfile(database.db, { model: "local-model", baseUrl: `${baseUrl}/elsewhere` })).toBeNull();
  });

  it("stops at the first request when the server is not there, and stores why", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const nowhere = `http://127.0.0.1:${port}/v1`;
    const profile = await checkAndStoreModel(database.db, null, {
      config: { ...config(), OPENAI_BASE_URL: nowhere },
      timeoutMs: 5_000,
    });
    expect(profile).toMatchObject({ baseUrl: nowhere, callsNamedTool: null, reportsUsage: null });
    expect(profile!.problem).toBe("The server could not be reached: is it running, at the address Cadre is set to?");
    const card = modelCard(profile!.model, profile, 24_000);
    expect(card).toMatchObject({ state: "failed", summary: expect.stringMatching(/^The check could not finish\. /) });
    // One request (with the SDK's retries), not five.
    const attempts = await database.db.execute(sql`select 1 from usage`);
    expect(attempts.length).toBeLessThanOrEqual(3);
  });

  it("stops at the first request when the server does not serve the model or refuses the key, and says which", async () => {
    for (const [status, problem] of [
      [404, "The server does not serve a model by this name."],
      [401, "The server refused the key Cadre sends (HTTP 401)."],
    ] as const) {
      behaviour = { refuseWith: status };
      received.length = 0;
      const { profile, card } = await check();
      expect(profile).toMatchObject({ problem, callsNamedTool: null, acceptsConsecutiveRoles: null });
      expect(received).toHaveLength(1);
      expect(card.summary).toBe(`The check could not finish. ${problem}`);
    }
  });

  it("asks nothing on the offline model, whose card says it needs no check", async () => {
    const offline = { OPENAI_BASE_URL: undefined, OPENAI_API_KEY: undefined, LLM_MODEL: undefined };
    expect(modelServerUrl(offline)).toBeNull();
    expect(await checkAndStoreModel(database.db, null, { config: offline })).toBeNull();
    expect(received).toHaveLength(0);
    expect(offlineModelCard()).toMatchObject({
      state: "offline",
      model: "Built-in demo model",
      summary: expect.stringMatching(/needs no check/),
    });
  });

  it("lists a team's models in use, each with its profile or none yet", async () => {
    const { team, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout", "Sage"] });
    await database.db.execute(sql`update agents set model = 'other-model' where id = ${subordinates[1]!.id}`);
    await check();
    const models = await listTeamModels(database.db, team.id, config());
    expect(models.map(({ model, agents, profile }) => [model, agents, profile?.callsNamedTool ?? "unchecked"])).toEqual(
      [
        ["local-model", [expect.any(String), "Scout"], true],
        ["other-model", ["Sage"], "unchecked"],
      ],
    );
    expect(modelCard("other-model", null, 24_000).state).toBe("unchecked");
    // For `npm run check-model -- --all`: the configured model first, then each agent's own.
    expect(await listModelsInUse(database.db, config())).toEqual(["local-model", "other-model"]);
  });
});

describe("POST /api/models/check", () => {
  it("checks the named model on the configured server and answers its card", async () => {
    behaviour = { toolChoice: "ignore", listed: { max_model_len: 8192 } };
    const { POST } = await import("@/app/api/models/check/route");
    const response = await POST(jsonRequest("POST", "/api/models/check", { model: "other-model" }));
    expect(response.status).toBe(200);
    const { card } = (await response.json()) as { card: ReturnType<typeof modelCard> };
    expect(card).toMatchObject({ model: "other-model", state: "checked", checkedAt: expect.any(String) });
    expect(words(card)).toContain("This model ignores 'no tools now'; Cadre summarizes without offering tools.");
    expect(words(card)).toContain("set the context budget below 8,192");
    expect(await getModelProfile(database.db, { model: "other-model", baseUrl })).toMatchObject({
      respectsNoTools: false,
      contextTokens: 8192,
    });
  });

  it("checks the configured model when none is named, and refuses other fields", async () => {
    const { POST } = await import("@/app/api/models/check/route");
    const response = await POST(jsonRequest("POST", "/api/models/check", {}));
    expect(response.status).toBe(200);
    expect(((await response.json()) as { card: { model: string } }).card.model).toBe("local-model");
    const refused = await POST(jsonRequest("POST", "/api/models/check", { model: "x", baseUrl: "http://evil" }));
    expect(refused.status).toBe(400);
  });
});

describe("POST /api/connection-check", () => {
  it("checks the configured model too once its server serves it, and answers the card", async () => {
    behaviour = { strictRoles: true };
    const { POST } = await import("@/app/api/connection-check/route");
    const response = await POST(jsonRequest("POST", "/api/connection-check"));
    expect(response.status).toBe(200);
    const body = (await response.json()) as { model: { state: string }; compatibility: ReturnType<typeof modelCard> };
    expect(body.model.state).toBe("reachable");
    expect(body.compatibility).toMatchObject({ model: "local-model", state: "checked" });
    expect(words(body.compatibility)).toContain("Cadre sends such messages as one.");
    expect(await getModelProfile(database.db, { model: "local-model", baseUrl })).toMatchObject({
      acceptsConsecutiveRoles: false,
    });
  });
});
