// The web a mission's team researches, all on this machine: the corpus's pages served over
// HTTP (so every address in a briefing can be opened), and a stand-in for Tavily whose search
// ranks those pages and whose extract reads them, as Tavily would fetch them.
import { createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { startFakeTavily, type FakeTavily } from "../../tests/support/fake-tavily";
import { loadCorpus, pageMarkdown, searchCorpus, type Page } from "./corpus";

export type EvalWeb = {
  /** Where the pages are: "http://127.0.0.1:PORT". */
  origin: string;
  /** Tavily's stand-in, for TAVILY_BASE_URL. */
  tavily: FakeTavily;
  pages: Page[];
  close(): Promise<void>;
};

/** What the stand-in accepts as TAVILY_API_KEY. */
export const EVAL_TAVILY_KEY = "tvly-eval";

export async function startEvalWeb(): Promise<EvalWeb> {
  const pages = await loadCorpus();
  const byPath = new Map(pages.map((page) => [page.path, page]));
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const page = byPath.get(pagePath(req.url ?? "/"));
    if (req.method !== "GET" || !page) {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("No such page.\n");
      return;
    }
    res.writeHead(200, { "content-type": "text/markdown; charset=utf-8" }).end(pageMarkdown(page));
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const tavily = await startFakeTavily(
    ({ query, max_results }) => ({
      results: searchCorpus(pages, query, typeof max_results === "number" ? max_results : 5).map((hit) => ({
        title: hit.page.title,
        url: `${origin}${hit.page.path}`,
        content: hit.snippet,
      })),
    }),
    {
      apiKey: EVAL_TAVILY_KEY,
      // Read by path, whatever host the model wrote (localhost for 127.0.0.1, say); an address
      // that is no page fails the way Tavily says it could not read one.
      extract: ({ urls }) => {
        const read = urls.map((url) => ({ url, page: byPath.get(pagePath(url)) }));
        return {
          pages: read.flatMap(({ page }) =>
            page ? [{ url: `${origin}${page.path}`, title: page.title, content: pageMarkdown(page) }] : [],
          ),
          failed: read.flatMap(({ url, page }) => (page ? [] : [{ url, error: "404: no page at this address" }])),
        };
      },
    },
  );

  return {
    origin,
    tavily,
    pages,
    async close() {
      for (const socket of sockets) socket.destroy();
      await Promise.all([new Promise<void>((resolve) => server.close(() => resolve())), tavily.close()]);
    },
  };
}

/** "/site/page" of an address or a request path: no origin, query, fragment or trailing slash. */
export function pagePath(address: string): string {
  let path: string;
  try {
    path = new URL(address, "http://x").pathname;
  } catch {
    return address;
  }
  return decodeURIComponent(path).replace(/\/+$/, "") || "/";
}
