"use client";

import { useCallback, useEffect, useState } from "react";
import { useCoalesced, useLiveEvents } from "./live-events";

/** Changes that can start or end "work waits and no worker runs": a worker starting or stopping, new work, work taken up. */
const RELEVANT_TABLES: ReadonlySet<string> = new Set([
  "workers",
  "tasks",
  "work_sessions",
  "agents",
  "agent_inputs",
  "teams",
]);

/** A worker killed outright says nothing; its heartbeat just stops. Look again this often. */
const RECHECK_MS = 15_000;

/**
 * The "no worker" banner at the top of every signed-in page. The server renders the first
 * answer; after that it asks `/api/health` on relevant live events and every RECHECK_MS.
 * The live region is always there so a screen reader hears the banner when it appears.
 */
export function WorkerBanner({ stalled: stalledAtRender }: { stalled: boolean }) {
  const [stalled, setStalled] = useState(stalledAtRender);
  useEffect(() => setStalled(stalledAtRender), [stalledAtRender]);

  const check = useCallback(async () => {
    try {
      const response = await fetch("/api/health", { cache: "no-store" });
      if (!response.ok) return; // the database is down: other parts of the page say so
      const body = (await response.json()) as { status?: string };
      setStalled(body.status === "degraded");
    } catch {
      // offline for a moment: keep what is shown, the next check retries
    }
  }, []);
  const recheck = useCoalesced(() => void check(), 1000);
  useLiveEvents((event) => {
    if (event === null || RELEVANT_TABLES.has(event.table)) recheck();
  });
  useEffect(() => {
    const timer = setInterval(() => void check(), RECHECK_MS);
    return () => clearInterval(timer);
  }, [check]);

  return (
    <div role="status" className="worker-banner-region">
      {stalled && (
        <p className="worker-banner" data-testid="worker-banner">
          Background work is waiting: no worker is running. Start one with <code>npm run worker</code>.
        </p>
      )}
    </div>
  );
}
