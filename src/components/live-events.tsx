"use client";

import { useRouter } from "next/navigation";
import { createContext, useContext, useEffect, useRef, useState, type ReactNode } from "react";
import type { LiveEvent } from "@/lib/http/events";

/** `null` means "you may have missed events" (a reconnect): refetch everything shown. */
type Listener = (event: LiveEvent | null) => void;
type LiveState = "connecting" | "live" | "offline";

class EventBus {
  readonly listeners = new Set<Listener>();
  emit(event: LiveEvent | null) {
    for (const listener of this.listeners) listener(event);
  }
}

const BusContext = createContext<EventBus | null>(null);
const StateContext = createContext<LiveState>("connecting");

/** One EventSource per tab on /api/events; components subscribe with useLiveEvents. */
export function LiveEventsProvider({ children }: { children: ReactNode }) {
  const [bus] = useState(() => new EventBus());
  const [state, setState] = useState<LiveState>("connecting");
  useEffect(() => {
    const source = new EventSource("/api/events");
    let connectedBefore = false;
    source.addEventListener("ready", () => {
      setState("live");
      if (connectedBefore) bus.emit(null);
      connectedBefore = true;
    });
    source.onmessage = (message) => {
      try {
        bus.emit(JSON.parse(message.data) as LiveEvent);
      } catch {
        // not ours
      }
    };
    // EventSource reconnects by itself; say so meanwhile.
    source.onerror = () => setState("offline");
    return () => source.close();
  }, [bus]);
  return (
    <BusContext.Provider value={bus}>
      <StateContext.Provider value={state}>{children}</StateContext.Provider>
    </BusContext.Provider>
  );
}

export function useLiveState(): LiveState {
  return useContext(StateContext);
}

/** Calls the latest `handler` for every live event (and `null` after a reconnect). */
export function useLiveEvents(handler: Listener) {
  const bus = useContext(BusContext);
  const latest = useRef(handler);
  useEffect(() => {
    latest.current = handler;
  });
  useEffect(() => {
    if (!bus) return;
    const listener: Listener = (event) => latest.current(event);
    bus.listeners.add(listener);
    return () => {
      bus.listeners.delete(listener);
    };
  }, [bus]);
}

/** Runs `action` at most once per `ms`, trailing: a burst of events costs one refetch. */
export function useCoalesced(action: () => void, ms = 150): () => void {
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const latest = useRef(action);
  useEffect(() => {
    latest.current = action;
  });
  useEffect(
    () => () => {
      if (timer.current) clearTimeout(timer.current);
    },
    [],
  );
  return () => {
    if (timer.current) return;
    timer.current = setTimeout(() => {
      timer.current = null;
      latest.current();
    }, ms);
  };
}

export type LiveFilter = {
  tables: LiveEvent["table"][];
  agentIds?: string[];
  teamIds?: string[];
  mode?: "foreground" | "background";
};

export function matches(filter: LiveFilter, event: LiveEvent): boolean {
  if (!filter.tables.includes(event.table)) return false;
  if (event.op === "delete") return true; // deletes carry only an id
  if (filter.mode && event.table === "messages" && event.mode !== filter.mode) return false;
  if (filter.agentIds && !(event.agentId && filter.agentIds.includes(event.agentId))) return false;
  if (filter.teamIds && !(event.teamId && filter.teamIds.includes(event.teamId))) return false;
  return true;
}

/** Re-renders the server page around it when a matching change happens. */
export function LiveRefresh(props: LiveFilter) {
  const router = useRouter();
  const refresh = useCoalesced(() => router.refresh());
  useLiveEvents((event) => {
    if (event === null || matches(props, event)) refresh();
  });
  return null;
}
