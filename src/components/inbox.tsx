"use client";

import Link from "next/link";
import { useRouter } from "next/navigation";
import { useEffect } from "react";
import { api } from "@/lib/api-client";
import { Markdown } from "./markdown";
import { EmptyState, ErrorNote, LocalTime } from "./ui";
import { useAction } from "./use-action";

export type InboxRow = {
  id: string;
  type: string;
  title: string;
  summary: string;
  teamId: string;
  teamName: string;
  agentId: string;
  agentName: string;
  read: boolean;
  createdAt: string;
};

export function InboxList({ items }: { items: InboxRow[] }) {
  const { busy, error, clearError, run } = useAction();
  const unread = items.filter((item) => !item.read).length;

  return (
    <>
      <header className="page-header">
        <div>
          <h1>Inbox</h1>
          <p className="lede">{unread === 0 ? "You're all caught up." : `${unread} unread item${unread === 1 ? "" : "s"}.`}</p>
        </div>
        <div className="header-actions">
          <button type="button" className="button" disabled={busy || unread === 0} onClick={() => run(() => api("/api/inbox/read-all", { method: "POST" }))}>
            Mark all read
          </button>
        </div>
      </header>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      {items.length === 0 ? (
        <EmptyState title="Nothing in your inbox yet">
          <p>When a team lead has something you should know, its briefing lands here and in your chat with the lead. When work fails, an alert lands here too.</p>
        </EmptyState>
      ) : (
        <ul className="inbox-list">
          {items.map((item) => (
            <li key={item.id} className={`inbox-item${item.read ? "" : " unread"}${item.type === "alert" ? " inbox-alert" : ""}`}>
              <span className="unread-dot" aria-hidden="true" />
              <div className="inbox-main">
                <Link href={`/inbox/${item.id}`} className="inbox-title">
                  {item.title}
                  {!item.read && <span className="visually-hidden"> (unread)</span>}
                </Link>
                <div className="inbox-summary">
                  <Markdown text={item.summary} />
                </div>
                <div className="meta">
                  <span className={`pill pill-${item.type}`}>{item.type}</span> {item.teamName} · {item.agentName} · <LocalTime value={item.createdAt} relative />
                  {item.type === "alert" && (
                    <>
                      {" · "}
                      <Link href={`/agents/${item.agentId}`}>Open {item.agentName}&apos;s work log</Link>
                    </>
                  )}
                </div>
              </div>
              {!item.read && (
                <button
                  type="button"
                  className="button button-quiet"
                  disabled={busy}
                  aria-label={`Mark “${item.title}” read`}
                  onClick={() => run(() => api(`/api/inbox/${item.id}`, { method: "PATCH", body: { read: true } }))}
                >
                  Mark read
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

/** Opening a briefing marks it read. */
export function MarkReadOnOpen({ itemId, read }: { itemId: string; read: boolean }) {
  const router = useRouter();
  useEffect(() => {
    if (read) return;
    void api(`/api/inbox/${itemId}`, { method: "PATCH", body: { read: true } })
      .then(() => router.refresh())
      .catch(() => {});
  }, [itemId, read, router]);
  return null;
}

export function MarkUnreadButton({ itemId }: { itemId: string }) {
  const router = useRouter();
  return (
    <button
      type="button"
      className="button button-quiet"
      onClick={() => void api(`/api/inbox/${itemId}`, { method: "PATCH", body: { read: false } }).then(() => router.push("/inbox"))}
    >
      Mark unread
    </button>
  );
}
