"use client";

import { useState } from "react";
import { messageOf } from "@/lib/client/api-client";
import { ErrorNote } from "./ui";

/** What the timeline's lists are filtered by. */
export type ListFilter = { agentId?: string; kind?: string };

/** A filtered list's query string: its filter, the cursor to page back from, how many. */
export function pageQuery(filter: ListFilter, before?: string | null, limit?: number): string {
  const params = new URLSearchParams();
  if (filter.agentId) params.set("agentId", filter.agentId);
  if (filter.kind) params.set("kind", filter.kind);
  if (before) params.set("before", before);
  if (limit) params.set("limit", String(limit));
  const text = params.toString();
  return text ? `?${text}` : "";
}

/**
 * Paging a server-rendered list back in time: the cursor the last page gave, and `loadOlder`,
 * which asks `load` for the page before it (`load` merges what it got and returns the next
 * cursor, null at the beginning). A failure is kept to be said once.
 */
export function useOlderPages(initialCursor: string | null, load: (cursor: string) => Promise<string | null>) {
  const [cursor, setCursor] = useState(initialCursor);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function loadOlder() {
    if (!cursor) return;
    setLoading(true);
    setError(null);
    try {
      setCursor(await load(cursor));
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setLoading(false);
    }
  }
  return { cursor, setCursor, loading, error, clearError: () => setError(null), loadOlder };
}

/** Under a list paged back: what went wrong, then the button for the page before, or that this is the beginning. */
export function OlderPagesFoot({ pages, label }: { pages: ReturnType<typeof useOlderPages>; label: string }) {
  return (
    <>
      {pages.error && <ErrorNote message={pages.error} onDismiss={pages.clearError} />}
      <div className="timeline-foot">
        {pages.cursor ? (
          <button type="button" className="button" onClick={pages.loadOlder} disabled={pages.loading}>
            {pages.loading ? "Loading…" : label}
          </button>
        ) : (
          <p className="hint">The beginning of this team&apos;s history.</p>
        )}
      </div>
    </>
  );
}
