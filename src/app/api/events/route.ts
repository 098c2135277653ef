import { subscribeToEvents, type LiveEvent } from "@/lib/events";
import { errorResponse, route } from "@/lib/http";

export const dynamic = "force-dynamic";

const KEEP_ALIVE_MS = 15_000;

/**
 * GET /api/events: server-sent events, one `data:` line per database change (ids only;
 * pages refetch what they show). A `ready` event opens each connection, so a client that
 * reconnects knows it may have missed changes and refetches everything it shows.
 */
export const GET = route(async (request: Request): Promise<Response> => {
  const encoder = new TextEncoder();
  let cleanup = () => {};
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (text: string) => {
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          cleanup();
        }
      };
      let unsubscribe: () => void;
      try {
        unsubscribe = await subscribeToEvents((event: LiveEvent) => send(`data: ${JSON.stringify(event)}\n\n`));
      } catch (error) {
        console.error(error);
        send(`retry: 5000\nevent: failure\ndata: ${JSON.stringify({ message: "Live updates are unavailable: the database does not answer." })}\n\n`);
        controller.close();
        return;
      }
      const keepAlive = setInterval(() => send(": keep-alive\n\n"), KEEP_ALIVE_MS);
      cleanup = () => {
        clearInterval(keepAlive);
        unsubscribe();
        cleanup = () => {};
      };
      request.signal.addEventListener("abort", () => {
        cleanup();
        try {
          controller.close();
        } catch {
          // already closed
        }
      });
      send(`retry: 1000\nevent: ready\ndata: {}\n\n`);
    },
    cancel() {
      cleanup();
    },
  });
  if (request.signal.aborted) return errorResponse(499, "aborted:events", "The client went away.");
  return new Response(stream, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    },
  });
});
