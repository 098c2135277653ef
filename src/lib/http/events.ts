import "server-only";
import { listenWithRecovery, type Listener as DatabaseListener } from "@/lib/db/listener";
import { databaseUrl, sessionDatabaseUrl } from "@/lib/env";
import { logError } from "@/lib/telemetry/log";

/**
 * Something a page may show changed. Postgres triggers (drizzle/0003_live_events.sql)
 * announce every change on the `cadre_events` channel, whichever process wrote it.
 */
export type LiveEvent = {
  table:
    | "messages"
    | "tasks"
    | "inbox_items"
    | "knowledge_items"
    | "work_sessions"
    | "agents"
    | "teams"
    | "workers"
    | "approvals"
    | "notifications"
    | "mcp_servers";
  op: "insert" | "update" | "delete";
  id: string;
  agentId?: string;
  teamId?: string;
  conversationId?: string;
  mode?: "foreground" | "background";
  role?: string;
  status?: string;
};

export const EVENTS_CHANNEL = "cadre_events";

type Listener = (event: LiveEvent) => void;
/** Told when events may have been missed: the LISTEN connection was lost and is back. */
type GapListener = () => void;
/** Told to refetch everything shown: with no LISTEN (a transaction pooler and no direct URL), every LIVE_POLL_MS. */
type RefreshListener = () => void;
type Hub = {
  listeners: Set<Listener>;
  gapListeners: Set<GapListener>;
  refreshListeners: Set<RefreshListener>;
  listening?: Promise<DatabaseListener>;
};

/** How often open pages refetch when changes cannot be heard (README: "Behind a pooler"). */
const LIVE_POLL_MS = 5_000;

// One LISTEN per web process (kept on globalThis across dev reloads), fanned out in memory.
const holder = globalThis as typeof globalThis & { cadreEventHub?: Hub };

function hub(): Hub {
  holder.cadreEventHub ??= { listeners: new Set(), gapListeners: new Set(), refreshListeners: new Set() };
  return holder.cadreEventHub;
}

function startListening(state: Hub): Promise<unknown> {
  const sessionUrl = sessionDatabaseUrl();
  if (sessionUrl === null && !state.listening) {
    // Behind a transaction pooler a LISTEN would be lost between transactions: open pages are
    // told to refetch every few seconds instead.
    console.log(
      `[web] DATABASE_URL goes through a transaction pooler and DATABASE_DIRECT_URL is not set: open pages refresh every ${LIVE_POLL_MS / 1000} s instead of at each change.`,
    );
    const timer = setInterval(() => {
      for (const refresh of [...state.refreshListeners]) refresh();
    }, LIVE_POLL_MS);
    timer.unref();
    state.listening = Promise.resolve({ stop: async () => clearInterval(timer) });
  }
  // A connection of its own listens, and listens again after it was lost (db/listener.ts). What
  // was announced in between reached nobody: every subscriber hears of the gap (a live stream
  // then ends, and its page reconnects and refetches) rather than missing a change for good.
  state.listening ??= listenWithRecovery(
    sessionUrl ?? databaseUrl(),
    EVENTS_CHANNEL,
    (payload) => {
      let event: LiveEvent;
      try {
        event = JSON.parse(payload) as LiveEvent;
      } catch (error) {
        console.error("Ignoring a malformed live event:", payload, error);
        return;
      }
      for (const listener of state.listeners) listener(event);
    },
    {
      purpose: "live updates",
      log: (line) => console.log(`[web] ${line}`),
      onReconnect: () => {
        for (const gap of [...state.gapListeners]) gap();
      },
    },
  ).catch((error: unknown) => {
    state.listening = undefined;
    throw new Error(`Could not listen for live events: ${error instanceof Error ? error.message : error}`, {
      cause: error,
    });
  });
  return state.listening;
}

/** Closes this process's LISTEN for live events (tests; the web server's connections end with it). */
export async function stopLiveEvents(): Promise<void> {
  const state = hub();
  const listening = state.listening;
  state.listening = undefined;
  await (await listening?.catch(() => undefined))?.stop();
}

/** How many listeners the hub holds now (each open live-events stream is one): what a leak would show first. */
export function countLiveSubscribers(): number {
  return hub().listeners.size;
}

/**
 * Calls `listener` for every change until the returned function is called, and `onGap` when
 * changes may have been missed (the database connection was lost and is back). Resolves once
 * LISTEN is active.
 */
export async function subscribeToEvents(
  listener: Listener,
  onGap?: GapListener,
  onRefresh?: RefreshListener,
): Promise<() => void> {
  const state = hub();
  state.listeners.add(listener);
  if (onGap) state.gapListeners.add(onGap);
  if (onRefresh) state.refreshListeners.add(onRefresh);
  const unsubscribe = () => {
    state.listeners.delete(listener);
    if (onGap) state.gapListeners.delete(onGap);
    if (onRefresh) state.refreshListeners.delete(onRefresh);
  };
  try {
    await startListening(state);
  } catch (error) {
    unsubscribe();
    throw error;
  }
  return unsubscribe;
}

/** What one consumer may leave unread before it is dropped: about a thousand events. */
export const MAX_UNREAD_BYTES = 256 * 1024;
const KEEP_ALIVE_MS = 15_000;

/**
 * The server-sent events of GET /api/events: a `ready` event, then one `data:` line per
 * change, and a comment every 15 s so proxies keep the connection. Its subscription ends
 * with the request, however that happens: the client goes away (`signal`), the reader
 * cancels, or the reader falls `maxUnreadBytes` behind (a stuck or very slow client; the
 * stream then closes, and EventSource reconnects and refetches after reading what was
 * queued). So no subscriber outlives its consumer, and none holds more than the limit.
 */
export function liveEventStream(
  request: Request,
  options: { maxUnreadBytes?: number } = {},
): ReadableStream<Uint8Array> {
  // The stream holds the request, not only its signal: a Request's signal follows the client's
  // abort through a weak reference that is gone once the Request is garbage-collected, and the
  // subscriber would then outlive its client until the next keep-alive found the socket closed.
  const signal = request.signal;
  const encoder = new TextEncoder();
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  let unsubscribe: (() => void) | undefined;
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  let ended = false;

  const end = () => {
    if (ended) return;
    ended = true;
    clearInterval(keepAlive);
    unsubscribe?.();
    request.signal.removeEventListener("abort", end);
    try {
      controller?.close();
    } catch {
      // already closed or cancelled
    }
  };
  const send = (text: string) => {
    if (ended || !controller) return;
    // desiredSize is the limit minus what is queued and unread: at zero the reader is that far behind.
    if ((controller.desiredSize ?? 0) <= 0) return end();
    try {
      controller.enqueue(encoder.encode(text));
    } catch {
      end();
    }
  };

  return new ReadableStream<Uint8Array>(
    {
      async start(streamController) {
        controller = streamController;
        if (signal.aborted) return end();
        signal.addEventListener("abort", end, { once: true });
        try {
          // A gap ends the stream: EventSource reconnects, and the page refetches on `ready`.
          // With no LISTEN, a periodic `ready` makes the page refetch without reconnecting.
          const stop = await subscribeToEvents(
            (event) => send(`data: ${JSON.stringify(event)}\n\n`),
            end,
            () => send("event: ready\ndata: {}\n\n"),
          );
          unsubscribe = stop;
          // The request may have ended while LISTEN was being set up.
          if (ended) return void stop();
        } catch (error) {
          logError("A live event listener failed:", error);
          send(
            `retry: 5000\nevent: failure\ndata: ${JSON.stringify({ message: "Live updates are unavailable: the database does not answer." })}\n\n`,
          );
          return end();
        }
        keepAlive = setInterval(() => send(": keep-alive\n\n"), KEEP_ALIVE_MS);
        send("retry: 1000\nevent: ready\ndata: {}\n\n");
      },
      cancel() {
        end();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: options.maxUnreadBytes ?? MAX_UNREAD_BYTES }),
  );
}
