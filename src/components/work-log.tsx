"use client";

import Link from "next/link";
import { Fragment, useEffect, useLayoutEffect, useRef, useState } from "react";
import { isNotRunResult, parseLogInput, splitMarker } from "@/lib/core/formats";
import { describeLogMessage, notRunReason, type Named } from "@/lib/views/plain-words";
import { storedCallState } from "@/lib/views/tool-labels";
import { api, messageOf } from "@/lib/client/api-client";
import { hasOlder, mergeNewest, parseToolOutput, type ApiMessage } from "@/lib/views/chat-messages";
import { formatTokensInOut } from "@/lib/usage/format";
import type { LogSession, LogStep, WorkLogPage } from "@/lib/views/work-log-page";
import { ApprovalCard, type ApprovalData } from "./approval-card";
import { Markdown } from "./markdown";
import { AgentTextBody, LogInputBody, PlainMarkdown } from "./plain-words";
import { ToolCall } from "./tool-call";
import { EmptyState, ErrorNote, LocalTime, StatusBadge } from "./ui";

const INPUT_LABELS = {
  task: "Task",
  report: "Report",
  failed: "Failed",
  cancelled: "Cancelled",
  removed: "Removed",
  question: "Question",
  answer: "Answer",
  "person-answer": "Your answer",
  "outcome-unknown": "Outcome unknown",
  "task-cancelled": "Cancelled",
  webhook: "Webhook",
} as const;

function kindOf(message: ApiMessage): { label: string; className: string } {
  if (message.role === "summary") return { label: "Summary", className: "log-summary" };
  if (message.role === "user") {
    const input = parseLogInput(message.content);
    if (input?.kind === "failed") return { label: INPUT_LABELS.failed, className: "log-injected log-error" };
    if (!input && describeLogMessage(message.content).engine)
      return { label: "Cadre", className: "log-injected log-engine" };
    return { label: input ? INPUT_LABELS[input.kind] : "Message", className: "log-injected" };
  }
  const marker = splitMarker(message.content.trim())?.marker;
  if (marker?.startsWith("(error")) return { label: "Error", className: "log-error" };
  if (marker) return { label: "Stopped", className: "log-stopped" };
  return { label: "Assistant", className: "log-assistant" };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Loaded pages joined: the messages in chain order and what the pages said about them. */
type Loaded = WorkLogPage;

function join(older: Loaded, newer: Loaded, messages: ApiMessage[]): Loaded {
  return {
    messages,
    sessions: { ...older.sessions, ...newer.sessions },
    sessionOf: { ...older.sessionOf, ...newer.sessionOf },
    steps: { ...older.steps, ...newer.steps },
  };
}

/** Consecutive messages of one session (or of none) under one heading. */
function groupsOf(loaded: Loaded): { key: string; session: LogSession | null; messages: ApiMessage[] }[] {
  const groups: { key: string; session: LogSession | null; messages: ApiMessage[] }[] = [];
  for (const message of loaded.messages) {
    const sessionId = loaded.sessionOf[message.id] ?? null;
    const last = groups.at(-1);
    if (last && (last.session?.id ?? null) === sessionId) last.messages.push(message);
    else
      groups.push({
        key: sessionId ?? `none-${message.id}`,
        session: sessionId ? (loaded.sessions[sessionId] ?? null) : null,
        messages: [message],
      });
  }
  return groups;
}

function SessionHeading({ session }: { session: LogSession | null }) {
  if (!session) {
    return (
      <h3 className="log-session-head">
        <span className="log-session-title">Outside a work session</span>
      </h3>
    );
  }
  return (
    <h3 className="log-session-head">
      <span className="log-session-title">
        Session <LocalTime value={session.startedAt} />
      </span>
      <StatusBadge status={session.status} />
      <span className="log-session-stats">
        {session.steps} step{session.steps === 1 ? "" : "s"} · {formatTokensInOut(session)} · model{" "}
        {seconds(session.modelMs)}
      </span>
      <Link
        href={`/sessions/${session.id}`}
        className="meta-link"
        aria-label={`Trace of the session started ${new Date(session.startedAt).toLocaleString()}`}
      >
        Trace
      </Link>
    </h3>
  );
}

function LinkedMark() {
  return <span className="log-linked-mark">Linked message</span>;
}

function StepCost({ step }: { step: LogStep | undefined }) {
  if (!step) return null;
  return (
    <span className="log-step" title="This step's model call">
      {" "}
      · {formatTokensInOut(step)} · {seconds(step.durationMs)}
    </span>
  );
}

/** The entry that shows a linked message: its own, or its call's when it is a tool result shown with the call. */
function entryShowing(messages: ApiMessage[], messageId: string | undefined): string | undefined {
  const message = messageId ? messages.find((each) => each.id === messageId) : undefined;
  if (message?.role !== "tool") return message?.id;
  return (
    messages.find((each) => each.toolCalls?.some((call) => call.toolCallId === message.toolCallId))?.id ?? message.id
  );
}

/** Scrolls the linked entry into view once, when it is first on the page. */
function useScrollToLinked(entryId: string | undefined) {
  const scrolledTo = useRef<string | null>(null);
  useEffect(() => {
    if (!entryId || scrolledTo.current === entryId) return;
    const element = document.getElementById(`m-${entryId}`);
    if (!element) return;
    scrolledTo.current = entryId;
    element.scrollIntoView({ block: "center" });
    element.focus({ preventScroll: true });
  }, [entryId]);
}

/**
 * An agent's background conversation as a log, grouped by the work session that wrote it:
 * messages it was given (tasks, reports, injected messages), what it said with each step's
 * time and tokens, each tool call with its input and result, summaries, errors and stop
 * markers. Older pages load on request, at any depth; the newest page follows the server's
 * re-renders (live events refresh the page).
 */
export function WorkLog({
  agentId,
  agentName,
  page,
  approvals = [],
  names,
  highlight,
}: {
  agentId: string;
  agentName: string;
  page: WorkLogPage;
  approvals?: ApprovalData[];
  /** What ids in the log stand for (teammates, tasks), so they read as names. */
  names?: Record<string, Named>;
  /** A message linked to (a knowledge source): shown highlighted and scrolled to. */
  highlight?: string;
}) {
  const [loaded, setLoaded] = useState<Loaded>(page);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const loadedRef = useRef(loaded);
  loadedRef.current = loaded;

  // A re-render of the page brings the newest page: joined to what is loaded, or instead of it when it does not reach it.
  useEffect(() => {
    const merged = mergeNewest(loadedRef.current.messages, page.messages);
    setLoaded(merged ? join(loadedRef.current, page, merged) : page);
  }, [page]);

  const keepScroll = useRef<number | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs after older entries are rendered above, to keep what the person reads in place
  useLayoutEffect(() => {
    if (keepScroll.current === null) return;
    window.scrollTo(0, document.documentElement.scrollHeight - keepScroll.current);
    keepScroll.current = null;
  }, [loaded]);

  const loadOlder = async () => {
    const oldest = loadedRef.current.messages[0];
    if (!oldest || loadingOlder) return;
    setLoadingOlder(true);
    try {
      const older = await api<WorkLogPage>(`/api/agents/${agentId}/work-log?before=${oldest.id}`);
      keepScroll.current = document.documentElement.scrollHeight - window.scrollY;
      setLoaded((current) => join(older, current, [...older.messages, ...current.messages]));
      setError(null);
    } catch (cause) {
      setError(`Could not load older entries: ${messageOf(cause)}`);
    } finally {
      setLoadingOlder(false);
    }
  };

  const { messages } = loaded;
  const linked = entryShowing(messages, highlight);
  useScrollToLinked(linked);
  if (messages.length === 0) {
    return (
      <EmptyState title="No background work yet">
        <p>When this agent gets a task, every step of its work session shows up here as it happens.</p>
      </EmptyState>
    );
  }
  const results = new Map(
    messages.filter((message) => message.role === "tool").map((message) => [message.toolCallId, message]),
  );
  const callIds = new Set(messages.flatMap((message) => (message.toolCalls ?? []).map((call) => call.toolCallId)));
  // A call held for the person shows its approval under it (newest first: the first per call wins).
  const approvalOf = new Map<string, ApprovalData>();
  for (const approval of approvals)
    if (!approvalOf.has(approval.toolCallId)) approvalOf.set(approval.toolCallId, approval);

  const entry = (message: ApiMessage) => {
    const createdAt = new Date(message.createdAt).toISOString();
    if (message.role === "tool" && callIds.has(message.toolCallId ?? "")) return null; // shown with its call
    if (message.role === "tool") {
      return (
        <li
          key={message.id}
          id={`m-${message.id}`}
          className={`log-entry log-tool${message.id === linked ? " log-linked" : ""}`}
          tabIndex={message.id === linked ? -1 : undefined}
        >
          <div className="log-meta">
            <span className="log-kind">Result of an earlier call</span> <LocalTime value={createdAt} />
            {message.id === linked && <LinkedMark />}
          </div>
          {isNotRunResult(message.content) ? (
            <p>Not run: {notRunReason(message.content)}</p>
          ) : (
            <PlainMarkdown text={message.content} names={names} />
          )}
        </li>
      );
    }
    const kind = kindOf(message);
    return (
      <li
        key={message.id}
        id={`m-${message.id}`}
        className={`log-entry ${kind.className}${message.id === linked ? " log-linked" : ""}`}
        tabIndex={message.id === linked ? -1 : undefined}
      >
        <div className="log-meta">
          <span className="log-kind">{kind.label}</span> <LocalTime value={createdAt} />
          <StepCost step={loaded.steps[message.id]} />
          {message.id === linked && <LinkedMark />}
        </div>
        {message.thinking && (
          <details className="thinking">
            <summary>Thinking</summary>
            <Markdown text={message.thinking} />
          </details>
        )}
        {message.content &&
          (message.role === "user" ? (
            <LogInputBody content={message.content} names={names} />
          ) : message.role === "summary" ? (
            <PlainMarkdown text={message.content} names={names} />
          ) : (
            <AgentTextBody content={message.content} names={names} />
          ))}
        {(message.toolCalls ?? []).map((call) => {
          const result = results.get(call.toolCallId);
          const approval = approvalOf.get(call.toolCallId);
          return (
            <Fragment key={call.toolCallId}>
              <ToolCall
                toolName={call.toolName}
                input={call.args}
                state={storedCallState(result, approval?.status === "pending" ? "waiting" : "running")}
                output={result ? parseToolOutput(result.content) : undefined}
              />
              {approval && <ApprovalCard approval={approval} agentName={agentName} compact />}
            </Fragment>
          );
        })}
      </li>
    );
  };

  return (
    <div className="work-log-wrap">
      <p className="work-log-nav">
        {hasOlder(messages) ? (
          <button type="button" className="button" onClick={() => void loadOlder()} disabled={loadingOlder}>
            {loadingOlder ? "Loading…" : "Load older entries"}
          </button>
        ) : (
          <span className="hint">The beginning of this work log.</span>
        )}
        <a href="#work-log-now" className="button button-quiet">
          Jump to now
        </a>
      </p>
      {error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
      {groupsOf(loaded).map((group) => (
        <section
          key={group.key}
          className="log-session"
          aria-label={
            group.session
              ? `Session started ${new Date(group.session.startedAt).toLocaleString()}`
              : "Outside a work session"
          }
        >
          <SessionHeading session={group.session} />
          <ol className="work-log">{group.messages.map(entry)}</ol>
        </section>
      ))}
      <p id="work-log-now" className="hint work-log-now" tabIndex={-1}>
        Now — new entries appear here as the agent works.
      </p>
    </div>
  );
}
