import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { CONVERSATION_OPENING, JOINED_MESSAGES_SEPARATOR } from "@/lib/core/prompts";
import { offlineEmbedding } from "@/lib/llm/offline-model";
import type { PromptCache } from "./prompt-cache";

/**
 * A local OpenAI-compatible Chat Completions and Embeddings server, so tests exercise the real
 * provider path (`createOpenAI({ baseURL }).chat(id)` and `.embedding(id)`: HTTP, SSE parsing,
 * retries) without a network.
 */

export type FakeChatMessage = {
  role: string;
  content?: string | { type: string; text?: string }[] | null;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
};

export type FakeChatRequest = {
  model: string;
  messages: FakeChatMessage[];
  tools?: { type: "function"; function: { name: string; description?: string; parameters?: unknown } }[];
  stream?: boolean;
  response_format?: unknown;
  [key: string]: unknown;
};

/** Each request body as the server parsed it, in arrival order. */
type RecordedRequest = FakeChatRequest;

export type FakeToolCall = { id?: string; name: string; arguments: object };

type FakeAnswer = {
  text?: string;
  toolCalls?: FakeToolCall[];
  usage?: { prompt_tokens: number; completion_tokens: number; cached_tokens?: number };
  /** Wait before the first byte (headers included). */
  delayMs?: number;
  /** Wait between streamed chunks. */
  chunkDelayMs?: number;
};

type FakeFault =
  | { fault: "status"; status: number; retryAfterSeconds?: number; body?: object }
  | { fault: "reset" }
  | { fault: "hang" }
  | { fault: "cut" }
  /** A tool call whose arguments are not JSON; `id`, `name` and `arguments` default to a fixed id, the first tool, `{"query": "cats`. */
  | { fault: "malformed-tool-call"; id?: string; name?: string; arguments?: string };

export type FakeReply = FakeAnswer | FakeFault;

export type FakeOpenAIHandler = (request: FakeChatRequest) => FakeReply | Promise<FakeReply>;

/** A POST /v1/embeddings body as the server parsed it. */
type FakeEmbeddingRequest = { model: string; input: string[]; dimensions?: number; encoding_format?: string };

/**
 * How the server answers an embeddings request: with vectors (the offline embedding of each
 * input, so meaning compares as it does offline; cut to `dimensions` when asked), after
 * `delayMs`; or with a fault.
 */
export type FakeEmbeddingReply =
  | { delayMs?: number }
  | { fault: "status"; status: number; retryAfterSeconds?: number }
  | { fault: "hang" };

type FakeEmbeddingHandler = (request: FakeEmbeddingRequest) => FakeEmbeddingReply | Promise<FakeEmbeddingReply>;

export type FakeOpenAI = {
  /** Base URL ending in /v1, for `createOpenAI({ baseURL })`. */
  url: string;
  requests: RecordedRequest[];
  /** Each chat request a misbehaviour refused (strictRoles), with the reason the server gave, in arrival order. */
  refusals: FakeRefusal[];
  /** Each embeddings request, in arrival order (whatever its reply). */
  embeddingRequests: FakeEmbeddingRequest[];
  setHandler(handler: FakeOpenAIHandler): void;
  setEmbeddingHandler(handler: FakeEmbeddingHandler): void;
  close(): Promise<void>;
};

const defaultHandler: FakeOpenAIHandler = () => ({ text: "Hello from the fake model." });

/**
 * A way a real OpenAI-compatible server departs from OpenAI, reproduced by the fake whatever its
 * handler answers (tests/integration/misbehaving-models.test.ts runs the engine's flows under each):
 *
 * - `ignoreToolChoice`: `tool_choice` is not honoured either way, as Ollama does (ollama#8421): under
 *   "none" the answer is a tool call all the same (the handler's, or the first tool offered), and a
 *   forced tool ("required" or a named function) gets plain text.
 * - `strictRoles`: the request goes through a strict chat template first, as llama.cpp's server and
 *   vLLM apply the model's Jinja template: a system message anywhere but first, a conversation that
 *   does not start with the user, or two adjacent messages of one role (tool results aside) is
 *   refused with HTTP 400 and the template's own words.
 */
export type FakeMisbehaviour = "ignoreToolChoice" | "strictRoles";

/** A request a misbehaviour refused: why (the server's words), and the request. */
type FakeRefusal = { reason: string; request: FakeChatRequest };

/** What strict chat templates raise (Llama 2, Mistral, Gemma; Qwen's for a late system message). */
export const ROLES_MUST_ALTERNATE = "Conversation roles must alternate user/assistant/user/assistant/...";
export const SYSTEM_MESSAGE_FIRST = "System message must be at the beginning.";

export type FakeOpenAIOptions = {
  /** Keep every request in `requests` (default true). Long runs turn it off to bound memory. */
  record?: boolean;
  /** What GET /v1/models lists (default: one model, "fake-model"). */
  models?: string[];
  /** The only key it accepts (`Authorization: Bearer KEY`); others get a 401 like OpenAI's. Default: any. */
  apiKey?: string;
  /**
   * Count each request's tokens, and the cached ones, by OpenAI's prompt cache rule (see
   * prompt-cache.ts) and report them as OpenAI does (`prompt_tokens_details.cached_tokens`),
   * unless the reply names its own usage. Without it, prompt tokens are the messages' length / 4
   * and none are cached.
   */
  promptCache?: PromptCache;
  /** How the server departs from OpenAI's behaviour (see FakeMisbehaviour); none by default. */
  misbehaviours?: readonly FakeMisbehaviour[];
  /** How the server gets its answers wrong, as some OpenAI-compatible servers do (see AnswerModes). */
  answerModes?: AnswerModes;
};

export async function startFakeOpenAI(
  handler: FakeOpenAIHandler = defaultHandler,
  options: FakeOpenAIOptions = {},
): Promise<FakeOpenAI> {
  let current = handler;
  let embeddingHandler: FakeEmbeddingHandler = () => ({});
  let closed = false;
  const requests: RecordedRequest[] = [];
  const refusals: FakeRefusal[] = [];
  const misbehaves = (what: FakeMisbehaviour) => options.misbehaviours?.includes(what) ?? false;
  const embeddingRequests: FakeEmbeddingRequest[] = [];
  let received = 0;
  const sockets = new Set<Socket>();
  const answers = answerModesOf(options.answerModes);

  const server = createServer((req, res) => {
    void respond(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(error), type: "fake_server_error" } });
      else res.destroy();
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  async function respond(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return sendJson(res, 401, {
        error: { message: "Incorrect API key provided.", type: "invalid_request_error", code: "invalid_api_key" },
      });
    }
    if (req.method === "GET" && req.url?.endsWith("/models")) {
      const data = (options.models ?? ["fake-model"]).map((id) => ({
        id,
        object: "model",
        created: 0,
        owned_by: "fake",
      }));
      return sendJson(res, 200, { object: "list", data });
    }
    if (req.method === "POST" && req.url?.endsWith("/embeddings")) {
      const request = JSON.parse(await readBody(req)) as FakeEmbeddingRequest;
      if (typeof request.input === "string") request.input = [request.input];
      if (options.record !== false) embeddingRequests.push(request);
      const reply = await embeddingHandler(request);
      if ("fault" in reply) {
        if (reply.fault === "hang") return; // close() destroys the socket
        const headers: Record<string, string> =
          reply.retryAfterSeconds === undefined ? {} : { "retry-after": String(reply.retryAfterSeconds) };
        return sendJson(
          res,
          reply.status,
          { error: { message: `Fake failure (${reply.status})`, type: "server_error", code: null } },
          headers,
        );
      }
      if (reply.delayMs) await sleep(reply.delayMs);
      if (closed || res.destroyed) return;
      const tokens = request.input.reduce((sum, text) => sum + Math.ceil(text.length / 4), 0);
      return sendJson(res, 200, {
        object: "list",
        model: request.model,
        data: request.input.map((text, index) => ({
          object: "embedding",
          index,
          embedding: fakeEmbedding(text, request.dimensions),
        })),
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      });
    }
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      return sendJson(res, 404, {
        error: { message: `No route for ${req.method} ${req.url}`, type: "invalid_request_error" },
      });
    }
    const request = JSON.parse(await readBody(req)) as FakeChatRequest;
    received += 1;
    // Measured as it arrives, so the cache holds every request, whatever its reply.
    const cached = options.promptCache?.measure(request);
    if (options.record !== false) requests.push(request);
    const refused = misbehaves("strictRoles") ? templateRefusal(request.messages) : null;
    if (refused) {
      refusals.push({ reason: refused, request });
      return sendJson(res, 400, { error: { message: refused, type: "invalid_request_error", code: null } });
    }
    const refusal = answers.refusal(request);
    if (refusal) return sendJson(res, refusal.status, refusal.body);
    const answer = await current(request);
    const obeyed =
      misbehaves("ignoreToolChoice") && !("fault" in answer) ? ignoringToolChoice(request, answer) : answer;
    const reply = answers.reshape(request, obeyed);
    // Gone: the client aborted, or close() destroyed the socket while the handler ran.
    const gone = () => closed || res.destroyed;

    if ("fault" in reply) {
      switch (reply.fault) {
        case "reset":
          return void req.socket.destroy();
        case "hang":
          return; // close() destroys the socket
        case "status": {
          const headers: Record<string, string> =
            reply.retryAfterSeconds === undefined ? {} : { "retry-after": String(reply.retryAfterSeconds) };
          const body = reply.body ?? {
            error: { message: `Fake failure (${reply.status})`, type: "server_error", code: null },
          };
          return sendJson(res, reply.status, body, headers);
        }
        case "cut":
          if (!request.stream) {
            res.writeHead(200, { "content-type": "application/json" });
            return void res.end('{"id":"chatcmpl-fake","choices":[{"index":0,"message":{"role":"assi');
          }
          res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
          for (const delta of [{ role: "assistant", content: "This answer " }, { content: "was cut " }]) {
            writeEvent(res, chunk(request, { delta, finish_reason: null }));
          }
          return void res.end();
        case "malformed-tool-call": {
          const name = reply.name ?? request.tools?.[0]?.function.name ?? "unknownTool";
          const call = {
            id: reply.id ?? "call_malformed",
            type: "function",
            function: { name, arguments: reply.arguments ?? '{"query": "cats' },
          };
          return send(request, res, { text: "", toolCalls: [] }, [call], gone, cached, answers);
        }
      }
    }

    if (reply.delayMs) await sleep(reply.delayMs);
    if (gone()) return;
    const calls = (reply.toolCalls ?? []).map((call, index) => ({
      id: call.id ?? `call_${received}_${index}`,
      type: "function",
      function: { name: call.name, arguments: JSON.stringify(call.arguments) },
    }));
    return send(request, res, reply, calls, gone, cached, answers);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    refusals,
    embeddingRequests,
    setHandler(next) {
      current = next;
    },
    setEmbeddingHandler(next) {
      embeddingHandler = next;
    },
    close() {
      closed = true;
      // Hanging and keep-alive connections would keep server.close() waiting forever.
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Why a strict chat template refuses these messages, or null when it renders them: one system
 * message at most, first; then the user first, and user and assistant turns alternating, where
 * tool results (after the assistant message that called them) count as neither.
 */
function templateRefusal(messages: readonly FakeChatMessage[]): string | null {
  if (messages.some((message, index) => message.role === "system" && index > 0)) return SYSTEM_MESSAGE_FIRST;
  const turns = messages.filter((message) => message.role !== "system");
  if (turns[0] && turns[0].role !== "user") return ROLES_MUST_ALTERNATE;
  for (let index = 1; index < turns.length; index++) {
    const [before, message] = [turns[index - 1]!, turns[index]!];
    if (message.role !== "tool" && message.role === before.role) return ROLES_MUST_ALTERNATE;
  }
  return null;
}

/** The answer of a server that does not honour `tool_choice` (see FakeMisbehaviour). */
function ignoringToolChoice(request: FakeChatRequest, answer: FakeAnswer): FakeAnswer {
  const choice = request.tool_choice;
  const first = request.tools?.[0]?.function.name;
  if (choice === "none" && !answer.toolCalls?.length && first)
    return { ...answer, text: "", toolCalls: [{ name: first, arguments: {} }] };
  const forced = choice === "required" || (typeof choice === "object" && choice !== null);
  if (forced && answer.toolCalls?.length)
    return { ...answer, toolCalls: [], text: answer.text || "I would rather answer in words." };
  return answer;
}

/** The offline embedding of `text`, cut to `dimensions` and normalized again when asked (as text-embedding-3 shortens). */
function fakeEmbedding(text: string, dimensions: number | undefined): number[] {
  const full = offlineEmbedding(text);
  const cut = dimensions ? Array.from({ length: dimensions }, (_, i) => full[i] ?? 0) : full;
  const norm = Math.sqrt(cut.reduce((sum, value) => sum + value * value, 0)) || 1;
  return cut.map((value) => value / norm);
}

type WireToolCall = { id: string; type: string; function: { name: string; arguments: string } };

async function send(
  request: FakeChatRequest,
  res: ServerResponse,
  reply: FakeAnswer,
  answered: WireToolCall[],
  gone: () => boolean,
  cached: { promptTokens: number; cachedTokens: number } | undefined,
  answers: AnswerModesState,
): Promise<void> {
  const cut = answers.cut(request);
  const text = cut ? cutInHalf(reply.text ?? "") : (reply.text ?? "");
  const calls = cut ? answered.map(cutArguments) : answered;
  const finishReason = cut ? "length" : calls.length > 0 ? "tool_calls" : "stop";
  const completionChars = text.length + calls.reduce((sum, call) => sum + call.function.arguments.length, 0);
  const usage = answers.withoutUsage(request)
    ? undefined
    : wireUsage(
        reply.usage ?? {
          prompt_tokens: cached?.promptTokens ?? Math.ceil(JSON.stringify(request.messages).length / 4),
          completion_tokens: Math.ceil(completionChars / 4),
          cached_tokens: cached?.cachedTokens,
        },
      );

  if (!request.stream) {
    const message = {
      role: "assistant",
      content: text || (calls.length > 0 ? null : ""),
      ...(calls.length > 0 && { tool_calls: calls }),
    };
    return sendJson(res, 200, {
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: request.model,
      choices: [{ index: 0, message, finish_reason: finishReason }],
      ...(usage && { usage }),
    });
  }

  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const events: object[] = [chunk(request, { delta: { role: "assistant", content: "" }, finish_reason: null })];
  for (const piece of text.match(/\S+\s*/g) ?? []) {
    events.push(chunk(request, { delta: { content: piece }, finish_reason: null }));
  }
  calls.forEach((call, index) => {
    const opening = { index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } };
    events.push(chunk(request, { delta: { tool_calls: [opening] }, finish_reason: null }));
    // Arguments arrive in two pieces, as real servers split them.
    const middle = Math.ceil(call.function.arguments.length / 2);
    for (const part of [call.function.arguments.slice(0, middle), call.function.arguments.slice(middle)]) {
      events.push(
        chunk(request, { delta: { tool_calls: [{ index, function: { arguments: part } }] }, finish_reason: null }),
      );
    }
  });
  events.push(chunk(request, { delta: {}, finish_reason: finishReason }));
  if (usage) events.push({ ...chunk(request, undefined), usage });

  for (const event of events) {
    if (gone()) return;
    writeEvent(res, event);
    if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
  }
  if (gone()) return;
  res.end("data: [DONE]\n\n");
}

function chunk(request: FakeChatRequest, choice: { delta: object; finish_reason: string | null } | undefined): object {
  return {
    id: "chatcmpl-fake",
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    choices: choice ? [{ index: 0, ...choice }] : [],
  };
}

function wireUsage(usage: NonNullable<FakeAnswer["usage"]>): object {
  return {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.prompt_tokens + usage.completion_tokens,
    prompt_tokens_details: { cached_tokens: usage.cached_tokens ?? 0 },
  };
}

function writeEvent(res: ServerResponse, event: object): void {
  res.write(`data: ${JSON.stringify(event)}\n\n`);
}

function sendJson(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const piece of req) chunks.push(piece as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Replies in order, one per request; the last one repeats. */
export function scriptedHandler(steps: FakeReply[]): FakeOpenAIHandler {
  const last = steps.at(-1);
  if (!last) throw new Error("scriptedHandler needs at least one reply");
  let next = 0;
  return () => steps[next++] ?? last;
}

/**
 * The text of the last user input, whether its message's content is a string or an array of
 * parts: the last of the inputs a request joined into that message (see alternatingPrompt).
 */
export function lastUserText(request: FakeChatRequest): string {
  return textOf(separatedMessages(request.messages).findLast((message) => message.role === "user"));
}

/**
 * The messages as the engine's log holds them, before the request joined adjacent ones of one
 * role (see alternatingPrompt): each joined message split at the separator again, the opening
 * line of a conversation that starts with the agent's words left out. For scripts that read a
 * log's inputs one by one.
 */
export function separatedMessages(messages: readonly FakeChatMessage[]): FakeChatMessage[] {
  return messages.flatMap((message, index) => {
    if (message.role !== "user" && message.role !== "assistant") return [message];
    const text = textOf(message);
    if (message.role === "user" && index <= 1 && text === CONVERSATION_OPENING) return [];
    const pieces = text.split(JOINED_MESSAGES_SEPARATOR);
    if (pieces.length === 1) return [message];
    // An answer's calls belong with its last words.
    return pieces.map((piece, at) => ({
      ...message,
      content: piece,
      tool_calls: at === pieces.length - 1 ? message.tool_calls : undefined,
    }));
  });
}

function textOf(message: FakeChatMessage | undefined): string {
  if (!message?.content) return "";
  if (typeof message.content === "string") return message.content;
  return message.content.map((part) => (part.type === "text" ? (part.text ?? "") : "")).join("");
}

// ---- Answer modes: a server that gets its answers wrong (issue 33, item 3) ----------------------
// Kept in one block (the options' `answerModes`, and the hooks named `answers` above) so other
// modes of misbehaviour sit beside it without touching it.

/**
 * When a mode applies: `true` to every chat request, a number to that many first requests it
 * could apply to, a function to the requests it picks.
 */
type AnswerModeWhen = boolean | number | ((request: FakeChatRequest) => boolean);

export type AnswerModes = {
  /** No `usage` in the answer: none in a completion, and no usage chunk in a stream (as many local servers do). */
  noUsage?: AnswerModeWhen;
  /** The answer says nothing: empty content and no tool calls, whatever the handler answered (a fault still fails). */
  emptyAnswers?: AnswerModeWhen;
  /** The answer is cut by the length limit: half its text, half of each call's arguments, finish_reason "length". */
  lengthCut?: AnswerModeWhen;
  /** A request that offers tools is refused with a 400, as Ollama refuses it for a model without tool support. */
  noTools?: AnswerModeWhen;
};

type AnswerModesState = {
  /** The error a request gets instead of an answer (noTools), or null. */
  refusal(request: FakeChatRequest): { status: number; body: object } | null;
  /** The handler's reply as the mode changes it (emptyAnswers). */
  reshape(request: FakeChatRequest, reply: FakeReply): FakeReply;
  /** Whether this answer is cut by the length limit (lengthCut). */
  cut(request: FakeChatRequest): boolean;
  /** Whether this answer goes without usage (noUsage). */
  withoutUsage(request: FakeChatRequest): boolean;
};

function answerModesOf(modes: AnswerModes = {}): AnswerModesState {
  const applies = (when: AnswerModeWhen | undefined) => {
    let left = typeof when === "number" ? when : 0;
    return (request: FakeChatRequest): boolean => {
      if (when === undefined || when === false) return false;
      if (when === true) return true;
      if (typeof when === "function") return when(request);
      if (left <= 0) return false;
      left -= 1;
      return true;
    };
  };
  const [noUsage, empty, cut, noTools] = [
    applies(modes.noUsage),
    applies(modes.emptyAnswers),
    applies(modes.lengthCut),
    applies(modes.noTools),
  ];
  return {
    refusal: (request) =>
      (request.tools?.length ?? 0) > 0 && noTools(request)
        ? {
            status: 400,
            body: {
              error: {
                message: `registry.ollama.ai/library/${request.model} does not support tools`,
                type: "api_error",
                param: null,
                code: null,
              },
            },
          }
        : null,
    reshape: (request, reply) => ("fault" in reply || !empty(request) ? reply : { ...reply, text: "", toolCalls: [] }),
    cut,
    withoutUsage: noUsage,
  };
}

function cutInHalf(text: string): string {
  return text.slice(0, Math.ceil(text.length / 2));
}

/** A call whose arguments stop half-way: no longer JSON, as a length cut leaves them. */
function cutArguments(call: WireToolCall): WireToolCall {
  return { ...call, function: { ...call.function, arguments: cutInHalf(call.function.arguments) } };
}
