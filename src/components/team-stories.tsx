"use client";

import Link from "next/link";
import { useEffect, useRef, useState } from "react";
import { formatElapsed } from "@/lib/views/activity";
import { api, messageOf } from "@/lib/client/api-client";
import type { Story, StoryInboxItem, StoryPage, StoryPart, StoryStatus } from "@/lib/views/stories";
import type { TimelineEntry } from "@/lib/views/timeline";
import { taskStatusWords } from "@/lib/views/plain-words";
import { formatTokensShort, formatUsd } from "@/lib/usage/format";
import { matches, useCoalesced, useLiveEvents } from "./live-events";
import { OlderPagesFoot, pageQuery, useOlderPages, type ListFilter } from "./older-pages";
import { Markdown } from "./markdown";
import { TimelineRow } from "./team-timeline";
import { EmptyState, ErrorNote } from "./ui";

/** Newest first, one story per id: a story that moved on replaces the copy shown before. */
function merge(shown: Story[], fresh: Story[]): Story[] {
  const byId = new Map(shown.map((story) => [story.id, story]));
  for (const story of fresh) byId.set(story.id, story);
  return [...byId.values()].sort((a, b) => (a.position < b.position ? 1 : a.position > b.position ? -1 : 0));
}

/**
 * The team's stories: what it did per request, newest first. The first page comes rendered by
 * the server; "Load older stories" pages back; live events re-read the newest page and merge it.
 * `open`: a story to show with its steps (a link from one of its entries).
 */
export function TeamStories({
  teamId,
  initial,
  filter,
  agentIds,
  open,
}: {
  teamId: string;
  initial: StoryPage;
  filter: ListFilter;
  agentIds: string[];
  open?: Story | null;
}) {
  const [stories, setStories] = useState(() => (open ? merge(initial.stories, [open]) : initial.stories));
  const url = `/api/teams/${teamId}/stories`;
  const pages = useOlderPages(initial.nextCursor, async (cursor) => {
    const older = await api<StoryPage>(`${url}${pageQuery(filter, cursor)}`);
    setStories((shown) => merge(shown, older.stories));
    return older.nextCursor;
  });

  const refresh = useCoalesced(async () => {
    try {
      const newest = await api<StoryPage>(`${url}${pageQuery(filter)}`);
      setStories((shown) => merge(shown, newest.stories));
    } catch {
      // The next event, or a reconnect, tries again.
    }
  }, 500);
  useLiveEvents((event) => {
    if (event === null || matches({ tables: ["messages", "tasks", "inbox_items", "approvals"], agentIds }, event))
      refresh();
  });

  if (stories.length === 0) {
    return (
      <EmptyState title={filter.agentId || filter.kind ? "No story matches this filter" : "Nothing has happened yet"}>
        <p>
          Give the lead a task: each request becomes a story here — the plan, what each agent did, their reports and the
          briefing.
        </p>
      </EmptyState>
    );
  }
  return (
    <>
      <ol className="stories" aria-label="Stories, newest first">
        {stories.map((story) => (
          <li key={story.id}>
            <StoryCard teamId={teamId} story={story} startOpen={story.id === open?.id} />
          </li>
        ))}
      </ol>
      <OlderPagesFoot pages={pages} label="Load older stories" />
    </>
  );
}

const STATUS_WORDS: Record<StoryStatus, string> = {
  queued: "Queued",
  working: "Working",
  "waiting-for-you": "Waiting for you",
  done: "Done",
  failed: "Failed",
  cancelled: "Cancelled",
};

function When({ at }: { at: string }) {
  const date = new Date(at);
  return (
    <time dateTime={date.toISOString()} title={date.toLocaleString()} suppressHydrationWarning>
      {date.toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" })}
    </time>
  );
}

/** "2 min 5 s · 12k tokens · $0.0123": what a part of the work took. */
function costLine(durationMs: number | null, cost: Story["cost"]): string {
  const parts: string[] = [];
  if (durationMs !== null) parts.push(durationMs < 1000 ? "under a second" : formatElapsed(durationMs));
  // Estimated: some calls were not counted by the model server (cut off, or it sends no usage).
  if (cost.tokens > 0) parts.push(`${formatTokensShort(cost.tokens)} tokens${cost.estimated ? " (estimated)" : ""}`);
  if (cost.usd > 0) parts.push(formatUsd(cost.usd));
  else if (cost.tokens > 0 && cost.unpriced) parts.push("no price set");
  return parts.join(" · ");
}

/** The first line or so of a longer text, for the collapsed story. */
function firstWords(text: string, max = 220): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1).trimEnd()}…` : flat;
}

function StoryCard({ teamId, story, startOpen }: { teamId: string; story: Story; startOpen: boolean }) {
  const [lead, ...delegated] = story.parts;
  const headingId = `story-title-${story.id}`;
  const ref = useRef<HTMLElement>(null);
  // A story opened from one of its entries comes into view.
  useEffect(() => {
    if (startOpen) ref.current?.scrollIntoView({ block: "start" });
  }, [startOpen]);
  return (
    <article ref={ref} className={`story story-${story.status}`} aria-labelledby={headingId} id={`story-${story.id}`}>
      <header className="story-head">
        <h2 id={headingId} className="story-title">
          {story.title}
        </h2>
        <span className={`pill story-status story-status-${story.status}`}>{STATUS_WORDS[story.status]}</span>
      </header>
      <p className="story-meta">
        {story.startedBy === "You" ? "You asked" : story.startedBy} · <When at={story.createdAt} />
        {costLine(story.durationMs, story.cost) && <> · {costLine(story.durationMs, story.cost)}</>}
      </p>
      {story.request && story.request.trim() !== story.title.trim() && (
        <p className="story-request">{firstWords(story.request)}</p>
      )}
      <ul className="story-parts">
        {lead && <PartLine part={lead} lead />}
        {delegated.map((part) => (
          <PartLine key={part.taskId} part={part} />
        ))}
        {story.inbox.map((item) => (
          <InboxLine key={item.id} item={item} />
        ))}
      </ul>
      {lead?.result && story.status === "done" && (
        <details className="story-answer">
          <summary>
            <span className="story-answer-label">Answer:</span> {firstWords(lead.result, 160)}
          </summary>
          <Markdown text={lead.result} />
        </details>
      )}
      <StorySteps teamId={teamId} story={story} startOpen={startOpen} />
    </article>
  );
}

function PartLine({ part, lead = false }: { part: StoryPart; lead?: boolean }) {
  const took = costLine(part.durationMs, part.cost);
  const work =
    part.work ||
    (part.status === "pending"
      ? "has not started yet"
      : part.status === "completed"
        ? "answered from what it knew"
        : "");
  return (
    <li
      className={`story-part story-part-${part.status.replace(/_/g, "-")}`}
      style={lead ? undefined : { marginLeft: `${Math.min(part.depth - 1, 3) * 1.1}rem` }}
    >
      <p className="story-part-line">
        <Link href={`/agents/${part.agent.id}`} className="story-agent">
          {part.agent.name}
        </Link>{" "}
        {lead ? (
          work ? (
            `${work}.`
          ) : (
            ""
          )
        ) : (
          <>
            worked on “{part.title}”{work ? `: ${work}` : ""}.
          </>
        )}{" "}
        <span className="story-part-status">{taskStatusWords(part.status)}</span>
        {took && <span className="story-part-cost"> · {took}</span>}
      </p>
      {!lead && part.result && (
        <p className={part.status === "failed" ? "story-report story-report-failed" : "story-report"}>
          {part.status === "failed" ? "Why it failed: " : part.status === "cancelled" ? "Cancelled: " : "Reported: "}
          {firstWords(part.result, 200)}
        </p>
      )}
    </li>
  );
}

const INBOX_WORDS: Record<StoryInboxItem["type"], string> = {
  briefing: "Briefing",
  question: "Asked you",
  approval: "Asked to approve",
  alert: "Alert",
};

function InboxLine({ item }: { item: StoryInboxItem }) {
  const state =
    item.state && item.state !== "open" && item.state !== "pending"
      ? ` (${item.state}${item.via ? ` ${item.via}` : ""})`
      : item.state
        ? " — waiting for you"
        : "";
  return (
    <li className={`story-inbox story-inbox-${item.type}`}>
      <span className="story-inbox-kind">{INBOX_WORDS[item.type]}:</span>{" "}
      <Link href={`/inbox/${item.id}`}>{item.title}</Link>
      {state}
    </li>
  );
}

/** "Show steps": the story's raw entries, oldest first, each linked to its session's trace. */
function StorySteps({ teamId, story, startOpen }: { teamId: string; story: Story; startOpen: boolean }) {
  const [open, setOpen] = useState(startOpen);
  const [entries, setEntries] = useState<TimelineEntry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Steps are read when opened, and again when the story moved on while they were open.
  const version = `${story.status}:${story.parts.map((part) => `${part.status}${part.cost.tokens}`).join(",")}:${story.inbox.length}`;

  // biome-ignore lint/correctness/useExhaustiveDependencies: version is the trigger: the steps are read again when the story moved on
  useEffect(() => {
    if (!open) return;
    let current = true;
    api<{ entries: TimelineEntry[] }>(`/api/teams/${teamId}/stories/${story.id}/steps`).then(
      (answer) => {
        if (!current) return;
        setEntries(answer.entries);
        setError(null);
      },
      (caught: unknown) => {
        if (current) setError(`Couldn't load the steps: ${messageOf(caught)}`);
      },
    );
    return () => {
      current = false;
    };
  }, [open, teamId, story.id, version]);

  return (
    <div className="story-steps">
      <button type="button" className="link-button" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? "Hide steps" : "Show steps"}
      </button>
      {open && (
        <>
          {error && <ErrorNote message={error} />}
          {!entries && !error && <p className="hint">Loading the steps…</p>}
          {entries && entries.length === 0 && <p className="hint">No steps yet: the work has not started.</p>}
          {entries && entries.length > 0 && (
            <ol className="timeline story-step-list" aria-label={`Steps of “${story.title}”, oldest first`}>
              {entries.map((entry) => (
                <TimelineRow key={entry.key} entry={entry} />
              ))}
            </ol>
          )}
        </>
      )}
    </div>
  );
}
