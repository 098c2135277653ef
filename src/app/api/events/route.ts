import { liveEventStream } from "@/lib/http/events";
import { route } from "@/lib/http/http";

export const dynamic = "force-dynamic";

const headers = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};

/**
 * GET /api/events: server-sent events, one `data:` line per database change (ids only;
 * pages refetch what they show). A `ready` event opens each connection, so a client that
 * reconnects knows it may have missed changes and refetches everything it shows. The
 * subscription ends with the request, and a reader that falls behind is dropped
 * (liveEventStream in src/lib/http/events.ts).
 */
export const GET = route(
  async (request: Request): Promise<Response> => new Response(liveEventStream(request), { headers }),
);

/**
 * HEAD /api/events: the headers alone. Without it Next answers HEAD by calling GET and
 * dropping the body unread and uncancelled, and the request ends without an abort: the
 * subscription behind that body would live, and buffer every event, forever.
 */
export const HEAD = route(async (): Promise<Response> => new Response(null, { headers }));
