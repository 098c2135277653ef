import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** A local stand-in for the Tavily search API, for `tavily({ apiKey, apiBaseURL: fake.url })`. */

export type FakeTavilySearchBody = { query: string; [key: string]: unknown };

export type FakeTavilyResult = { title: string; url: string; content: string };

export type FakeTavilyReply = { results: FakeTavilyResult[] } | { status: number; error: string };

export type FakeTavilyHandler = (body: FakeTavilySearchBody) => FakeTavilyReply | Promise<FakeTavilyReply>;

export type FakeTavilyRequest = {
  path: string;
  /** The Authorization header as sent, e.g. "Bearer tvly-test". */
  authorization: string | undefined;
  body: FakeTavilySearchBody;
};

export type FakeTavily = { url: string; requests: FakeTavilyRequest[]; close(): Promise<void> };

const defaultHandler: FakeTavilyHandler = ({ query }) => ({
  results: [
    { title: `About ${query}`, url: "https://example.com/about", content: `What the web says about ${query}.` },
    { title: `${query}: the latest`, url: "https://example.com/latest", content: `Recent news on ${query}.` },
  ],
});

export async function startFakeTavily(handler: FakeTavilyHandler = defaultHandler): Promise<FakeTavily> {
  const requests: FakeTavilyRequest[] = [];
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
    if (req.method !== "POST" || !path.split("?")[0]?.endsWith("/search")) {
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

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close() {
      for (const socket of sockets) socket.destroy(); // keep-alive sockets would hold close() open
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
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
