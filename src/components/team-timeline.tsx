"use client";

import Link from "next/link";
import { useState, type ReactNode } from "react";
import { api } from "@/lib/client/api-client";
import { parseToolOutput } from "@/lib/views/chat-messages";
import {
  describeAgentText,
  describeLogInput,
  describeLogMessage,
  inboxTitle,
  taskGiver,
  withoutIds,
} from "@/lib/views/plain-words";
import { storedCallState } from "@/lib/views/tool-labels";
import type { TaskLink, TimelineEntry, TimelineItem, TimelinePage, TimelineToolCall } from "@/lib/views/timeline";
import { matches, useCoalesced, useLiveEvents } from "./live-events";
import { OlderPagesFoot, pageQuery, useOlderPages, type ListFilter } from "./older-pages";
import { Markdown } from "./markdown";
import { AgentTextBody, ErrorText, PlainMarkdown } from "./plain-words";
import { ToolCall } from "./tool-call";
import { EmptyState, StatusBadge } from "./ui";

/**
 * How many of the newest entries a live refresh re-reads. An entry is placed by the time it
 * was written, and its transaction can commit a moment later, behind entries already shown:
 * re-reading a generous newest stretch on every event is what brings such a late one in.
 */
const REFRESH_DEPTH = 200;

/** Newest first, one entry per key: what came in live replaces the copy shown before (a call now has its result). */
function merge(shown: TimelineEntry[], fresh: TimelineEntry[]): TimelineEntry[] {
  const byKey = new Map(shown.map((entry) => [entry.key, entry]));
  for (const entry of fresh) byKey.set(entry.key, entry);
  return [...byKey.values()].sort((a, b) => (a.position < b.position ? 1 : a.position > b.position ? -1 : 0));
}

/**
 * A team's timeline: the first page comes rendered by the server; "Load older" pages back
 * with the cursor; live events re-read the newest entries and merge them in.
 */
export function TeamTimeline({
  teamId,
  initial,
  filter,
  agentIds,
}: {
  teamId: string;
  initial: TimelinePage;
  filter: ListFilter;
  agentIds: string[];
}) {
  const [entries, setEntries] = useState(initial.entries);
  const url = `/api/teams/${teamId}/timeline`;
  const pages = useOlderPages(initial.nextCursor, async (cursor) => {
    const older = await api<TimelinePage>(`${url}${pageQuery(filter, cursor)}`);
    setEntries((shown) => merge(shown, older.entries));
    return older.nextCursor;
  });

  const refresh = useCoalesced(async () => {
    try {
      const newest = await api<TimelinePage>(`${url}${pageQuery(filter, null, REFRESH_DEPTH)}`);
      const oldestFresh = newest.entries.at(-1)?.position;
      // A full page that does not reach what is shown would leave a gap: start over from the newest page.
      if (newest.nextCursor && oldestFresh && entries[0] && oldestFresh > entries[0].position) {
        setEntries(newest.entries);
        pages.setCursor(newest.nextCursor);
      } else {
        setEntries((shown) => merge(shown, newest.entries));
      }
    } catch {
      // The next event, or a reconnect, tries again.
    }
  }, 300);
  useLiveEvents((event) => {
    if (event === null || matches({ tables: ["messages", "tasks", "inbox_items", "approvals"], agentIds }, event))
      refresh();
  });

  if (entries.length === 0) {
    return (
      <EmptyState title={filter.agentId || filter.kind ? "Nothing matches this filter" : "Nothing has happened yet"}>
        <p>
          Give the lead a task: its work, what it delegates, the reports back and its briefings show up here as they
          happen.
        </p>
      </EmptyState>
    );
  }
  return (
    <>
      <ol className="timeline" aria-label="Timeline, newest first">
        {entries.map((entry) => (
          <TimelineRow key={entry.key} entry={entry} storyOf={`/teams/${teamId}/timeline`} />
        ))}
      </ol>
      <OlderPagesFoot pages={pages} label="Load older" />
    </>
  );
}

function Clock({ at }: { at: string }) {
  const date = new Date(at);
  return (
    <time dateTime={date.toISOString()} title={date.toLocaleString()} suppressHydrationWarning>
      {date.toLocaleString(undefined, {
        month: "short",
        day: "numeric",
        hour: "2-digit",
        minute: "2-digit",
        second: "2-digit",
      })}
    </time>
  );
}

function SessionLink({ sessionId, children = "session trace" }: { sessionId: string | null; children?: ReactNode }) {
  return sessionId ? (
    <Link href={`/sessions/${sessionId}`} className="meta-link">
      {children}
    </Link>
  ) : null;
}

function TaskRef({ task, prefix }: { task: TaskLink; prefix?: string }) {
  return (
    <span className="tl-taskref">
      {prefix}
      <Link href={`/agents/${task.agentId}`}>{task.agentName}</Link>&apos;s task “{task.title}”{" "}
      <StatusBadge status={task.status} /> <SessionLink sessionId={task.sessionId}>its session</SessionLink>
    </span>
  );
}

const KIND_LABELS: Record<string, string> = {
  work: "work",
  task: "task",
  report: "report",
  question: "question",
  approval: "approval",
  briefing: "briefing",
  alert: "alert",
};

/** One entry of the timeline in the person's words: who, when, what kind, and its body. `storyOf`: the timeline's address, to link the entry to its story (left out inside a story's own steps). */
export function TimelineRow({ entry, storyOf }: { entry: TimelineEntry; storyOf?: string }) {
  return (
    <li className={`tl-entry tl-${entry.kind}`} id={`entry-${entry.key}`}>
      <div className="tl-meta">
        <Clock at={entry.at} />
        <Link href={`/agents/${entry.agent.id}`} className="tl-agent">
          {entry.agent.name}
        </Link>
        <span className={`pill pill-${entry.kind}`}>{KIND_LABELS[entry.kind]}</span>
        <SessionLink sessionId={entry.sessionId} />
        {storyOf && entry.storyTaskId && (
          <Link href={`${storyOf}?story=${entry.storyTaskId}`} className="meta-link">
            its story
          </Link>
        )}
      </div>
      <div className="tl-body">
        <ItemBody item={entry.item} />
      </div>
    </li>
  );
}

/** Long text folds: the first lines show, the rest opens on demand. */
function Folded({ text, label = "Show all" }: { text: string; label?: string }) {
  if (text.length <= 400) return <Markdown text={text} />;
  return (
    <details className="tl-more">
      <summary>
        <span className="tl-preview">{text.slice(0, 240).trim()}…</span> <span className="tl-open">{label}</span>
      </summary>
      <Markdown text={text} />
    </details>
  );
}

/** A call's arguments in one short line (`query: battery storage`); the JSON opens with the call. */
function argumentsLine(args: unknown): string {
  if (typeof args !== "object" || args === null) return "";
  let line = Object.entries(args)
    // Ids say nothing to the person: the call's label and its task link name who it went to.
    .filter(([key]) => !/Id$/.test(key))
    .map(([key, value]) => `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`)
    .join(" · ");
  // …and an id inside a value (a model quoting a task's id) reads as one too.
  line = withoutIds(line);
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}

function Call({ call }: { call: TimelineToolCall }) {
  const state = storedCallState(call.result);
  const line = argumentsLine(call.args);
  return (
    <div className="tl-call">
      <ToolCall
        toolName={call.toolName}
        input={call.args}
        state={state}
        output={call.result ? parseToolOutput(call.result.content) : undefined}
        errorText={call.result?.content}
      />
      {line && <p className="tl-args">{line}</p>}
      {call.task && <TaskRef task={call.task} prefix="→ delegated: " />}
    </div>
  );
}

function ItemBody({ item }: { item: TimelineItem }) {
  switch (item.type) {
    case "message":
      if (item.role === "summary") {
        return (
          <details className="tl-more">
            <summary>Compacted the work log into a summary</summary>
            <PlainMarkdown text={item.content} />
          </details>
        );
      }
      if (item.role === "user") {
        const described = item.input ? describeLogInput(item.input) : describeLogMessage(item.content);
        return (
          <>
            <p className={described.failed ? "tl-headline tl-error" : "tl-headline"}>{described.headline}</p>
            {item.task && <TaskRef task={item.task} prefix={item.input?.kind === "task" ? "" : "on "} />}
            {described.text && <Folded text={described.text} />}
          </>
        );
      }
      return (
        <>
          {item.marker ? (
            <AgentTextBody
              content={item.marker}
              markerClassName={item.marker.startsWith("(error") ? "tl-headline tl-error" : "tl-headline tl-stopped"}
            />
          ) : null}
          {item.content && !item.marker && <Folded text={describeAgentText(item.content)} />}
          {item.toolCalls.map((call) => (
            <Call key={call.toolCallId} call={call} />
          ))}
        </>
      );
    case "task-given":
      return (
        <>
          <p className="tl-headline">
            Task given by {taskGiver(item.task.source)}: {item.task.title} <StatusBadge status={item.task.status} />{" "}
            <SessionLink sessionId={item.task.sessionId}>taken up in this session</SessionLink>
          </p>
          {item.parent && <TaskRef task={item.parent} prefix="for " />}
          {item.task.description && item.task.description !== item.task.title && (
            <Folded text={describeAgentText(item.task.description)} />
          )}
        </>
      );
    case "task-ended":
      return (
        <>
          <p className="tl-headline">
            Task {item.task.status.replace("_", " ")}: {item.task.title}
          </p>
          {item.task.result &&
            (item.task.status === "failed" || item.task.status === "cancelled" ? (
              <ErrorText error={item.task.result} retried={false} />
            ) : (
              <Folded text={describeAgentText(item.task.result)} />
            ))}
        </>
      );
    case "inbox":
      return (
        <>
          <p className="tl-headline">
            <Link href={`/inbox/${item.id}`}>{inboxTitle(item.title)}</Link>
          </p>
          {item.summary && <p className="tl-summary">{item.summary}</p>}
          {item.task && <TaskRef task={item.task} prefix="about " />}
        </>
      );
  }
}
