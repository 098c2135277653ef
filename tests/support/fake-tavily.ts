import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/**
 * A local stand-in for the Tavily API, for `tavily({ apiKey, apiBaseURL: fake.url })`:
 * search (POST /search) and extract (POST /extract, what readWebPage calls).
 */

type FakeTavilySearchBody = { query: string; [key: string]: unknown };

type FakeTavilyResult = { title: string; url: string; content: string };

type FakeTavilyReply = { results: FakeTavilyResult[] } | { status: number; error: string };

export type FakeTavilyHandler = (body: FakeTavilySearchBody) => FakeTavilyReply | Promise<FakeTavilyReply>;

type FakeTavilyRequest = {
  path: string;
  /** The Authorization header as sent, e.g. "Bearer tvly-test". */
  authorization: string | undefined;
  body: FakeTavilySearchBody;
};

/** What @tavily/core's extract sends: the urls, and its options in snake_case. */
type FakeTavilyExtractBody = { urls: string[]; [key: string]: unknown };

type FakeTavilyPage = { url: string; title?: string | null; content: string };

/** Pages read, and urls Tavily could not read (its `failed_results`); or the whole request failing. */
type FakeTavilyExtractReply =
  | { pages: FakeTavilyPage[]; failed?: { url: string; error: string }[] }
  | { status: number; error: string };

export type FakeTavilyExtractHandler = (
  body: FakeTavilyExtractBody,
) => FakeTavilyExtractReply | Promise<FakeTavilyExtractReply>;

type FakeTavilyExtractRequest = { path: string; authorization: string | undefined; body: FakeTavilyExtractBody };

export type FakeTavily = {
  url: string;
  /** Search requests, in order. */
  requests: FakeTavilyRequest[];
  /** Extract requests (page reads), in order. */
  extracts: FakeTavilyExtractRequest[];
  /** How extract answers; a test may swap it at any time (success, a failure status, a read that hangs). */
  extract: FakeTavilyExtractHandler;
  close(): Promise<void>;
};

const defaultHandler: FakeTavilyHandler = ({ query }) => ({
  results: [
    { title: `About ${query}`, url: "https://example.com/about", content: `What the web says about ${query}.` },
    { title: `${query}: the latest`, url: "https://example.com/latest", content: `Recent news on ${query}.` },
  ],
});

/** Every url reads as a short page that names it. */
const defaultExtractHandler: FakeTavilyExtractHandler = ({ urls }) => ({
  pages: urls.map((url) => ({
    url,
    title: `The page at ${url}`,
    content: `# The page at ${url}\n\nThe full text of the page at ${url}.`,
  })),
});

export async function startFakeTavily(
  handler: FakeTavilyHandler = defaultHandler,
  /** `apiKey`: the only key it accepts; others get Tavily's 401 (default: any key). */
  options: { extract?: FakeTavilyExtractHandler; apiKey?: string } = {},
): Promise<FakeTavily> {
  const requests: FakeTavilyRequest[] = [];
  const extracts: FakeTavilyExtractRequest[] = [];
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    void respond(req, res).catch((error: unknown) => sendJson(res, 500, { detail: { error: String(error) } }));
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  async function respond(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = req.url ?? "/";
    const route = path.split("?")[0] ?? "";
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return sendJson(res, 401, { detail: { error: "Unauthorized: missing or invalid API key." } });
    }
    if (req.method === "POST" && route.endsWith("/extract")) return respondToExtract(req, res, path);
    if (req.method !== "POST" || !route.endsWith("/search")) {
      return sendJson(res, 404, { detail: { error: `No route for ${req.method} ${path}` } });
    }
    const body = JSON.parse(await readBody(req)) as FakeTavilySearchBody;
    requests.push({ path, authorization: req.headers.authorization, body });
    const started = performance.now();
    const reply = await handler(body);
    // The client reads detail.error from a failure, as the real API sends it.
    if ("error" in reply) return sendJson(res, reply.status, { detail: { error: reply.error } });
    sendJson(res, 200, {
      query: body.query,
      answer: null,
      follow_up_questions: null,
      images: [],
      results: reply.results.map((result, index) => ({
        ...result,
        score: Math.max(0.1, 0.9 - index * 0.1),
        raw_content: null,
        published_date: "",
      })),
      response_time: (performance.now() - started) / 1000,
      request_id: `fake-${requests.length}`,
    });
  }

  async function respondToExtract(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const body = JSON.parse(await readBody(req)) as FakeTavilyExtractBody;
    extracts.push({ path, authorization: req.headers.authorization, body });
    const started = performance.now();
    const reply = await fake.extract(body);
    if ("error" in reply) return sendJson(res, reply.status, { detail: { error: reply.error } });
    sendJson(res, 200, {
      results: reply.pages.map((page) => ({
        url: page.url,
        title: page.title ?? null,
        raw_content: page.content,
        images: [],
      })),
      failed_results: reply.failed ?? [],
      response_time: (performance.now() - started) / 1000,
      request_id: `fake-extract-${extracts.length}`,
    });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  const fake: FakeTavily = {
    url: `http://127.0.0.1:${port}`,
    requests,
    extracts,
    extract: options.extract ?? defaultExtractHandler,
    close() {
      for (const socket of sockets) socket.destroy(); // keep-alive sockets would hold close() open
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}

function sendJson(res: ServerResponse, status: number, body: object): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const piece of req) chunks.push(piece as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
