"use client";

import Link from "next/link";
import { useRouter } from "next/navigation";
import { useEffect } from "react";
import { api } from "@/lib/api-client";
import type { InboxItemType } from "@/lib/db/schema";
import { ApprovalCard, type ApprovalData } from "./approval-card";
import { Markdown } from "./markdown";
import { QuestionCard, type QuestionData } from "./question-card";
import { EmptyState, ErrorNote, LocalTime } from "./ui";
import { useAction } from "./use-action";

export type InboxRow = {
  id: string;
  type: InboxItemType;
  title: string;
  summary: string;
  teamId: string;
  teamName: string;
  agentId: string;
  agentName: string;
  read: boolean;
  createdAt: string;
  question: QuestionData | null;
  approval: ApprovalData | null;
};

/** An open question or a pending approval: the agent's work waits for the person. */
export function waitsForPerson(item: Pick<InboxRow, "question" | "approval">): boolean {
  return item.question?.status === "open" || item.approval?.status === "pending";
}

const FILTERS: { type: InboxItemType | null; label: string; empty: string; hint: string }[] = [
  {
    type: null,
    label: "All",
    empty: "Nothing in your inbox yet",
    hint: "When a team lead has something you should know, its briefing lands here and in your chat with the lead. Questions and calls that wait for your approval land here too, and so do alerts when work fails.",
  },
  { type: "briefing", label: "Briefings", empty: "No briefings yet", hint: "When a team lead has something you should know, its briefing lands here and in your chat with the lead." },
  { type: "question", label: "Questions", empty: "No questions waiting", hint: "When an agent needs a decision only you can make, it asks here and in the chat, and its task waits for your answer." },
  {
    type: "approval",
    label: "Approvals",
    empty: "No approvals waiting",
    hint: "When an agent wants to use a tool you set to “Ask me first” (team page, Approvals), the call waits here for your decision.",
  },
  { type: "alert", label: "Alerts", empty: "No alerts", hint: "When work fails or waits with no worker to run it, an alert lands here." },
];

function InboxFilters({ current }: { current: InboxItemType | null }) {
  return (
    <nav aria-label="Filter by type" className="filter-tabs">
      {FILTERS.map(({ type, label }) => (
        <Link key={label} href={type ? `/inbox?type=${type}` : "/inbox"} className={type === current ? "filter-tab active" : "filter-tab"} aria-current={type === current ? "page" : undefined}>
          {label}
        </Link>
      ))}
    </nav>
  );
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

/** The inbox: filters by type, each item with what the person can do about it right there. */
export function InboxList({ items, filter, unreadCount, waitingCount }: { items: InboxRow[]; filter: InboxItemType | null; unreadCount: number; waitingCount: number }) {
  const { busy, error, clearError, run } = useAction();
  const shown = FILTERS.find((entry) => entry.type === filter) ?? FILTERS[0]!;
  const status = [waitingCount > 0 ? `${plural(waitingCount, "item")} waiting for you` : null, unreadCount > 0 ? `${unreadCount} unread` : null].filter(Boolean);

  return (
    <>
      <header className="page-header">
        <div>
          <h1>Inbox</h1>
          <p className="lede">{status.length === 0 ? "You're all caught up." : `${status.join(" · ")}.`}</p>
        </div>
        <div className="header-actions">
          <button type="button" className="button" disabled={busy || unreadCount === 0} onClick={() => run(() => api("/api/inbox/read-all", { method: "POST" }))}>
            Mark all read
          </button>
        </div>
      </header>
      <InboxFilters current={filter} />
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      {items.length === 0 ? (
        <EmptyState title={shown.empty}>
          <p>{shown.hint}</p>
        </EmptyState>
      ) : (
        <ul className="inbox-list">
          {items.map((item) => {
            const waiting = waitsForPerson(item);
            const classes = ["inbox-item", item.read ? "" : "unread", item.type === "alert" ? "inbox-alert" : "", waiting ? "inbox-waiting" : ""].filter(Boolean).join(" ");
            return (
              <li key={item.id} className={classes}>
                <span className="unread-dot" aria-hidden="true" />
                <div className="inbox-main">
                  <Link href={`/inbox/${item.id}`} className="inbox-title">
                    {item.title}
                    {!item.read && <span className="visually-hidden"> (unread)</span>}
                  </Link>
                  {!item.question && !item.approval && (
                    <div className="inbox-summary">
                      <Markdown text={item.summary} />
                    </div>
                  )}
                  <div className="meta">
                    <span className={`pill pill-${item.type}`}>{item.type}</span>
                    {waiting && (
                      <>
                        {" "}
                        <span className="pill pill-waiting">waits for you</span>
                      </>
                    )}{" "}
                    {item.teamName} · {item.agentName} · <LocalTime value={item.createdAt} relative />
                    {item.type === "alert" && (
                      <>
                        {" · "}
                        <Link href={`/agents/${item.agentId}`}>Open {item.agentName}&apos;s work log</Link>
                      </>
                    )}
                  </div>
                  {item.question && <QuestionCard question={item.question} agentName={item.agentName} showQuestion={false} />}
                  {item.approval && <ApprovalCard approval={item.approval} agentName={item.agentName} heading={false} compact />}
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
            );
          })}
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
