"use client";

import { inboxTitle, plainText } from "@/lib/views/plain-words";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useEffect } from "react";
import { api } from "@/lib/client/api-client";
import type { InboxItemType } from "@/lib/db/schema";
import { ApprovalCard, type ApprovalData } from "./approval-card";
import { Markdown } from "./markdown";
import { QuestionCard, type QuestionData } from "./question-card";
import { EmptyState, ErrorNote, LocalTime } from "./ui";
import { useAction } from "./use-action";
import { plural } from "@/lib/util/plural";

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
function waitsForPerson(item: Pick<InboxRow, "question" | "approval">): boolean {
  return item.question?.status === "open" || item.approval?.status === "pending";
}

const FILTERS: { type: InboxItemType | null; label: string; empty: string; hint: string }[] = [
  {
    type: null,
    label: "All",
    empty: "Nothing in your inbox yet",
    hint: "When a team lead has something you should know, its briefing lands here and in your chat with the lead. Questions and calls that wait for your approval land here too, and so do alerts when work fails.",
  },
  {
    type: "briefing",
    label: "Briefings",
    empty: "No briefings yet",
    hint: "When a team lead has something you should know, its briefing lands here and in your chat with the lead.",
  },
  {
    type: "question",
    label: "Questions",
    empty: "No questions waiting",
    hint: "When an agent needs a decision only you can make, it asks here and in the chat, and its task waits for your answer.",
  },
  {
    type: "approval",
    label: "Approvals",
    empty: "No approvals waiting",
    hint: "When an agent wants to use a tool you set to “Ask me first” (the team’s Tools, under Approvals), the call waits here for your decision.",
  },
  {
    type: "alert",
    label: "Alerts",
    empty: "No alerts",
    hint: "When work fails or waits with no worker to run it, an alert lands here.",
  },
];

/** What the inbox shows: a type, a team, the archive; `before` pages back. */
export type InboxView = { type: InboxItemType | null; teamId: string | null; archived: boolean; before: string | null };

/** The address of a view of the inbox: the filters kept, paging reset unless given. */
function inboxHref(view: Omit<InboxView, "before"> & { before?: string | null }): string {
  const query = new URLSearchParams();
  if (view.type) query.set("type", view.type);
  if (view.teamId) query.set("team", view.teamId);
  if (view.archived) query.set("archived", "1");
  if (view.before) query.set("before", view.before);
  const text = query.toString();
  return text ? `/inbox?${text}` : "/inbox";
}

function InboxFilters({ view, teams }: { view: InboxView; teams: { id: string; name: string }[] }) {
  const router = useRouter();
  return (
    <div className="inbox-filters">
      <nav aria-label="Filter by type" className="filter-tabs">
        {FILTERS.map(({ type, label }) => (
          <Link
            key={label}
            href={inboxHref({ ...view, type })}
            className={type === view.type ? "filter-tab active" : "filter-tab"}
            aria-current={type === view.type ? "page" : undefined}
          >
            {label}
          </Link>
        ))}
      </nav>
      <div className="inbox-filter-controls">
        {teams.length > 1 && (
          <label className="inline-field">
            <span>Team</span>
            <select
              aria-label="Filter by team"
              value={view.teamId ?? ""}
              onChange={(event) => router.push(inboxHref({ ...view, teamId: event.target.value || null }))}
            >
              <option value="">All teams</option>
              {teams.map((team) => (
                <option key={team.id} value={team.id}>
                  {team.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <Link
          href={inboxHref({ ...view, archived: !view.archived })}
          className="filter-tab"
          aria-current={view.archived ? "page" : undefined}
        >
          {view.archived ? "Back to inbox" : "Archived"}
        </Link>
      </div>
    </div>
  );
}

/** The inbox: filters by type and team, the archive, each item with what the person can do about it right there. */
export function InboxList({
  items,
  view,
  teams,
  nextCursor,
  unreadCount,
  waitingCount,
}: {
  items: InboxRow[];
  view: InboxView;
  teams: { id: string; name: string }[];
  nextCursor: string | null;
  unreadCount: number;
  waitingCount: number;
}) {
  const { busy, error, clearError, run } = useAction();
  const shown = FILTERS.find((entry) => entry.type === view.type) ?? FILTERS[0]!;
  const teamName = teams.find((team) => team.id === view.teamId)?.name;
  const status = [
    waitingCount > 0 ? `${plural(waitingCount, "item")} waiting for you` : null,
    unreadCount > 0 ? `${unreadCount} unread` : null,
  ].filter(Boolean);

  return (
    <>
      <header className="page-header">
        <div>
          <h1>{view.archived ? "Archived" : "Inbox"}</h1>
          <p className="lede">{status.length === 0 ? "You're all caught up." : `${status.join(" · ")}.`}</p>
        </div>
        <div className="header-actions">
          <button
            type="button"
            className="button"
            disabled={busy || unreadCount === 0}
            onClick={() => run(() => api("/api/inbox/read-all", { method: "POST" }))}
          >
            Mark all read
          </button>
        </div>
      </header>
      <InboxFilters view={view} teams={teams} />
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      {items.length === 0 ? (
        view.before ? (
          <EmptyState title="Nothing older">
            <p>
              <Link href={inboxHref({ ...view, before: null })}>Back to the newest</Link>
            </p>
          </EmptyState>
        ) : view.archived ? (
          <EmptyState title={teamName ? `Nothing archived from ${teamName}` : "Nothing archived"}>
            <p>Archive what you have dealt with to keep the inbox short; it stays here, and opening it still works.</p>
          </EmptyState>
        ) : (
          <EmptyState title={teamName ? `${shown.empty} from ${teamName}` : shown.empty}>
            <p>{shown.hint}</p>
          </EmptyState>
        )
      ) : (
        <ul className="inbox-list">
          {items.map((item) => {
            const waiting = waitsForPerson(item);
            const classes = [
              "inbox-item",
              item.read ? "" : "unread",
              item.type === "alert" ? "inbox-alert" : "",
              waiting ? "inbox-waiting" : "",
            ]
              .filter(Boolean)
              .join(" ");
            return (
              <li key={item.id} className={classes}>
                <span className="unread-dot" aria-hidden="true" />
                <div className="inbox-main">
                  <Link href={`/inbox/${item.id}`} className="inbox-title">
                    {inboxTitle(item.title, item.approval)}
                    {!item.read && <span className="visually-hidden"> (unread)</span>}
                  </Link>
                  {!item.question && !item.approval && (
                    <div className="inbox-summary">
                      <Markdown text={plainText(item.summary)} />
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
                  {item.question && (
                    <QuestionCard question={item.question} agentName={item.agentName} showQuestion={false} />
                  )}
                  {item.approval && (
                    <ApprovalCard approval={item.approval} agentName={item.agentName} heading={false} compact />
                  )}
                </div>
                <div className="inbox-actions">
                  {!item.read && (
                    <button
                      type="button"
                      className="button button-quiet"
                      disabled={busy}
                      aria-label={`Mark “${inboxTitle(item.title, item.approval)}” read`}
                      onClick={() => run(() => api(`/api/inbox/${item.id}`, { method: "PATCH", body: { read: true } }))}
                    >
                      Mark read
                    </button>
                  )}
                  {/* A question or approval that waits is not archived: its work would wait unseen (the API says so too). */}
                  {!waiting && (
                    <button
                      type="button"
                      className="button button-quiet"
                      disabled={busy}
                      aria-label={`${view.archived ? "Move back to inbox" : "Archive"} “${inboxTitle(item.title, item.approval)}”`}
                      onClick={() =>
                        run(() => api(`/api/inbox/${item.id}`, { method: "PATCH", body: { archived: !view.archived } }))
                      }
                    >
                      {view.archived ? "Unarchive" : "Archive"}
                    </button>
                  )}
                </div>
              </li>
            );
          })}
        </ul>
      )}
      {(nextCursor || view.before) && (
        <nav aria-label="Inbox pages" className="pager">
          {view.before && <Link href={inboxHref({ ...view, before: null })}>Newest</Link>}
          {nextCursor && <Link href={inboxHref({ ...view, before: nextCursor })}>Older items</Link>}
        </nav>
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
      onClick={() =>
        void api(`/api/inbox/${itemId}`, { method: "PATCH", body: { read: false } }).then(() => router.push("/inbox"))
      }
    >
      Mark unread
    </button>
  );
}
