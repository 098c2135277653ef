"use client";

import Link from "next/link";
import { Fragment, useState } from "react";
import { api, messageOf } from "@/lib/client/api-client";
import { plainSnippet } from "@/lib/views/plain-words";
import { MATCH_END, MATCH_START } from "@/lib/util/search-marks";
import type { SearchHit, SearchPage } from "@/lib/views/message-search";
import { ErrorNote, LocalTime } from "./ui";

/** The search box: a plain GET form, so a search is a URL the person can keep. */
export function ConversationSearchForm({ teamId, q = "" }: { teamId: string; q?: string }) {
  return (
    <search aria-label="Search this team's conversations">
      <form method="get" action={`/teams/${teamId}/search`} className="conversation-search">
        <label className="field field-grow">
          <span className="visually-hidden">Search chats and work logs</span>
          <input
            type="search"
            name="q"
            defaultValue={q}
            placeholder="Search chats and work logs…"
            maxLength={200}
            required
          />
        </label>
        <button type="submit" className="button">
          Search
        </button>
      </form>
    </search>
  );
}

/** A snippet with its matches marked; the text is never read as HTML. */
function Snippet({ text }: { text: string }) {
  const parts = text.split(new RegExp(`(${MATCH_START}[^${MATCH_END}]*${MATCH_END})`));
  return (
    <p className="search-snippet">
      {parts.map((part, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the pieces of one fixed text; their place is all that tells them apart
        <Fragment key={index}>{part.startsWith(MATCH_START) ? <mark>{part.slice(1, -1)}</mark> : part}</Fragment>
      ))}
    </p>
  );
}

function Hit({ hit }: { hit: SearchHit }) {
  const where = hit.mode === "foreground" ? `Chat with ${hit.agentName}` : `${hit.agentName}'s work log`;
  const who =
    hit.role === "assistant" ? hit.agentName : hit.mode === "foreground" ? "You" : `Input to ${hit.agentName}`;
  return (
    <li className="search-hit">
      <div className="search-hit-meta">
        <span className="search-hit-who">{who}</span> ·{" "}
        <Link href={hit.href} aria-label={`Open ${where}`}>
          {where}
        </Link>{" "}
        · <LocalTime value={hit.createdAt} />
      </div>
      <Snippet text={plainSnippet(hit.snippet)} />
    </li>
  );
}

/** Matches, newest first; older ones load with the cursor the last page gave. */
export function SearchResults({ teamId, q, first }: { teamId: string; q: string; first: SearchPage }) {
  const [hits, setHits] = useState(first.hits);
  const [cursor, setCursor] = useState(first.nextCursor);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const loadOlder = async () => {
    if (!cursor || busy) return;
    setBusy(true);
    try {
      const page = await api<SearchPage>(`/api/teams/${teamId}/search?q=${encodeURIComponent(q)}&before=${cursor}`);
      setHits((shown) => [...shown, ...page.hits.filter((hit) => !shown.some((seen) => seen.id === hit.id))]);
      setCursor(page.nextCursor);
      setError(null);
    } catch (cause) {
      setError(`Could not load older matches: ${messageOf(cause)}`);
    } finally {
      setBusy(false);
    }
  };
  if (hits.length === 0) return <p className="hint">Nothing in this team&apos;s chats and work logs matches “{q}”.</p>;
  return (
    <>
      <ol className="search-hits" aria-label={`Matches for “${q}”, newest first`}>
        {hits.map((hit) => (
          <Hit key={hit.id} hit={hit} />
        ))}
      </ol>
      {error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
      {cursor ? (
        <p className="load-older">
          <button type="button" className="button" onClick={() => void loadOlder()} disabled={busy}>
            {busy ? "Loading…" : "Load older matches"}
          </button>
        </p>
      ) : (
        <p className="hint">No older matches.</p>
      )}
    </>
  );
}
