"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { useCallback, useEffect, useState } from "react";
import { isFinalTask } from "@/lib/db/task-statuses";
import { useCoalesced, useLiveEvents, useLiveState } from "./live-events";

// Home ("/", since you were last here) is the brand link: a fifth link would crowd the phone's bar.
const links = [
  { href: "/teams", label: "Teams" },
  { href: "/inbox", label: "Inbox" },
  { href: "/knowledge", label: "Knowledge" },
  { href: "/usage", label: "Usage" },
] as const;

/** Items not read yet, and questions and approvals that still wait for the person (the API's badgeCount). */
function useInboxBadgeCount(): number | null {
  const [count, setCount] = useState<number | null>(null);
  const load = useCallback(async () => {
    try {
      // Only the counts are wanted: one item keeps the answer small.
      const response = await fetch("/api/inbox?limit=1", { cache: "no-store" });
      if (!response.ok) return;
      const body = (await response.json()) as { badgeCount: number };
      setCount(body.badgeCount);
    } catch {
      // keep the last count; the next event retries
    }
  }, []);
  useEffect(() => {
    void load();
  }, [load]);
  const reload = useCoalesced(() => void load(), 100);
  useLiveEvents((event) => {
    // A question withdrawn with its task, an approval decided elsewhere: the waiting count moves.
    if (
      event === null ||
      event.table === "inbox_items" ||
      event.table === "teams" ||
      event.table === "approvals" ||
      (event.table === "tasks" && isFinalTask(event.status))
    )
      reload();
  });
  return count;
}

/** The app's navigation. `canSignOut`: sign-in is on (APP_PASSWORD), so there is a session to end. */
export function Nav({ offline, canSignOut }: { offline: boolean; canSignOut: boolean }) {
  const pathname = usePathname();
  const count = useInboxBadgeCount();
  const live = useLiveState();
  return (
    <header className="sidebar">
      <Link href="/" className="brand" aria-label="Cadre home">
        <span className="brand-mark" aria-hidden="true">
          ◆
        </span>{" "}
        Cadre
      </Link>
      <nav aria-label="Main">
        <ul className="nav-links">
          {links.map(({ href, label }) => {
            const active =
              pathname === href ||
              pathname.startsWith(`${href}/`) ||
              (href === "/teams" && pathname.startsWith("/agents/"));
            const showBadge = href === "/inbox" && count !== null && count > 0;
            return (
              <li key={href}>
                <Link
                  href={href}
                  className={active ? "nav-link active" : "nav-link"}
                  aria-current={active ? "page" : undefined}
                  aria-describedby={showBadge ? "inbox-attention" : undefined}
                >
                  <span>{label}</span>
                  {showBadge && (
                    <span className="badge" aria-hidden="true" data-testid="inbox-badge">
                      {count > 99 ? "99+" : count}
                    </span>
                  )}
                </Link>
                {showBadge && (
                  <span id="inbox-attention" className="visually-hidden">
                    {count} unread or waiting for you
                  </span>
                )}
              </li>
            );
          })}
        </ul>
      </nav>
      <div className="sidebar-foot">
        {offline && (
          <span
            className="pill pill-warn"
            title="No model is configured: set OPENAI_API_KEY or OPENAI_BASE_URL to use a real LLM."
          >
            offline<span className="wide-only">&nbsp;model</span>
          </span>
        )}
        {/* Only the browser's connection for live updates, not the app's health: the worker banner says when workers are down. */}
        <span
          className={`live-status live-${live}`}
          title={
            live === "live"
              ? "Live updates: connected — pages update by themselves"
              : "Live updates: reconnecting — reload to see the latest"
          }
        >
          <span className="live-dot" aria-hidden="true" />
          {/* Visible on a phone too: a bare dot says nothing to someone who has not read this code. */}
          <span className="live-label" aria-hidden="true" data-testid="live-label">
            {live === "live" ? (
              "Live"
            ) : (
              <>
                <span className="wide-only">Reconnecting…</span>
                <span className="narrow-only">Retrying</span>
              </>
            )}
          </span>
          <span className="visually-hidden">
            {live === "live" ? "Live updates: connected" : "Live updates: reconnecting"}
          </span>
        </span>
        {canSignOut && (
          // A plain form post: the server ends the session and answers 303 → /sign-in, with or without JavaScript.
          <form method="post" action="/api/auth/sign-out" className="sign-out">
            <button type="submit" className="button button-quiet button-small" title="Sign out">
              <svg className="icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
                <path d="M9 21H5a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2h4M16 17l5-5-5-5M21 12H9" />
              </svg>
              <span className="sign-out-label">Sign out</span>
            </button>
          </form>
        )}
      </div>
    </header>
  );
}
