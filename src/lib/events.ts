import { database } from "@/lib/db/client";

/**
 * Something a page may show changed. Postgres triggers (drizzle/0003_live_events.sql)
 * announce every change on the `cadre_events` channel, whichever process wrote it.
 */
export type LiveEvent = {
  table: "messages" | "tasks" | "inbox_items" | "knowledge_items" | "work_sessions" | "agents" | "teams" | "workers";
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
type Hub = { listeners: Set<Listener>; listening?: Promise<unknown> };

// One LISTEN per web process (kept on globalThis across dev reloads), fanned out in memory.
const holder = globalThis as typeof globalThis & { cadreEventHub?: Hub };

function hub(): Hub {
  holder.cadreEventHub ??= { listeners: new Set() };
  return holder.cadreEventHub;
}

function startListening(state: Hub): Promise<unknown> {
  // postgres-js keeps a dedicated connection for LISTEN and re-listens after a reconnect.
  state.listening ??= database()
    .sql.listen(EVENTS_CHANNEL, (payload) => {
      let event: LiveEvent;
      try {
        event = JSON.parse(payload) as LiveEvent;
      } catch (error) {
        console.error("Ignoring a malformed live event:", payload, error);
        return;
      }
      for (const listener of state.listeners) listener(event);
    })
    .catch((error: unknown) => {
      state.listening = undefined;
      throw new Error(`Could not listen for live events: ${error instanceof Error ? error.message : error}`, { cause: error });
    });
  return state.listening;
}

/** Calls `listener` for every change until the returned function is called. Resolves once LISTEN is active. */
export async function subscribeToEvents(listener: Listener): Promise<() => void> {
  const state = hub();
  state.listeners.add(listener);
  try {
    await startListening(state);
  } catch (error) {
    state.listeners.delete(listener);
    throw error;
  }
  return () => state.listeners.delete(listener);
}
