"use client";

import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, getToolName, isToolUIPart } from "ai";
import Link from "next/link";
import {
  useCallback,
  useEffect,
  useLayoutEffect,
  useMemo,
  useRef,
  useState,
  type FormEvent,
  type KeyboardEvent,
} from "react";
import { api, errorMessageFrom, messageOf } from "@/lib/client/api-client";
import { oneAtATime } from "@/lib/client/one-at-a-time";
import { isNotRunResult } from "@/lib/core/formats";
import { STOPPED_BY_YOU } from "@/lib/views/plain-words";
import {
  CHAT_PAGE_SIZE,
  chatMessageShowing,
  hasOlder,
  mergeNewest,
  toChatMessages,
  type ApiMessage,
  type ChatMessage,
} from "@/lib/views/chat-messages";
import type { AgentRole } from "@/lib/db/schema";
import { ApprovalCard, type ApprovalData } from "./approval-card";
import { RetryNote, useAutoRetry } from "./auto-retry";
import { useCoalesced, useLiveEvents } from "./live-events";
import { Markdown } from "./markdown";
import { QuestionCard, type QuestionData } from "./question-card";
import { ToolCall } from "./tool-call";
import { ErrorNote, LocalTime } from "./ui";

type Props = {
  agentId: string;
  agentName: string;
  agentRole: AgentRole;
  /** The newest page of the stored conversation (chain order); older pages load on request. */
  initialMessages: ApiMessage[];
  /** The agent's approvals (newest first): a chat call held for one shows its card under it. */
  initialApprovals: ApprovalData[];
  /** A stored message a link points at (a knowledge source): its message is highlighted and scrolled to. */
  highlight?: string;
};

type PartContext = { agentName: string; approvals: Map<string, ApprovalData>; onDecided: () => void };

function MessagePart({ part, context }: { part: ChatMessage["parts"][number]; context: PartContext }) {
  if (part.type === "text") return part.text ? <Markdown text={part.text} /> : null;
  if (part.type === "reasoning") {
    return part.text ? (
      <details className="thinking">
        <summary>Thinking</summary>
        <Markdown text={part.text} />
      </details>
    ) : null;
  }
  if (isToolUIPart(part)) {
    const approval = context.approvals.get(part.toolCallId);
    const state =
      part.state === "output-available"
        ? typeof part.output === "string" && isNotRunResult(part.output)
          ? "not-run"
          : "done"
        : part.state === "output-error" || part.state === "output-denied"
          ? "error"
          : approval?.status === "pending" || part.state === "approval-requested"
            ? "waiting"
            : "running";
    return (
      <>
        <ToolCall
          toolName={getToolName(part)}
          input={part.input}
          state={state}
          output={part.state === "output-available" ? part.output : undefined}
          errorText={part.state === "output-error" ? part.errorText : undefined}
        />
        {approval && (
          <ApprovalCard
            key={approval.id}
            approval={approval}
            agentName={context.agentName}
            compact
            onDecided={context.onDecided}
          />
        )}
      </>
    );
  }
  return null;
}

/**
 * The answer box under a question the agent put to the person in the chat: the question's
 * state comes from its inbox item, refetched when that item changes (answered anywhere) or
 * the agent's tasks do (a question is withdrawn when its task ends).
 */
function ChatQuestion({ itemId, agentId, agentName }: { itemId: string; agentId: string; agentName: string }) {
  const [question, setQuestion] = useState<QuestionData | null>(null);
  const [failing, setFailing] = useState(false);
  const load = useCallback(async () => {
    try {
      const { item } = await api<{ item: { question: QuestionData | null } }>(`/api/inbox/${itemId}`);
      setQuestion(item.question);
      setFailing(false);
    } catch {
      setFailing(true);
    }
  }, [itemId]);
  const retry = useAutoRetry(load, failing);
  useEffect(() => {
    void load();
  }, [load]);
  const reload = useCoalesced(() => void load(), 200);
  useLiveEvents((event) => {
    if (
      event === null ||
      (event.table === "inbox_items" && event.id === itemId) ||
      (event.table === "tasks" && event.agentId === agentId)
    )
      reload();
  });
  if (failing && !question) return <RetryNote what="this question" retry={retry} />;
  if (!question) return null;
  return <QuestionCard question={question} agentName={agentName} showQuestion={false} onAnswered={() => reload()} />;
}

/** How many pages back a refetch reads to reach what is shown, before it starts over from the newest page. */
const MAX_CATCH_UP_PAGES = 5;

/**
 * The person's chat with an agent, lead or subordinate (flow 1): streamed replies, tool
 * calls, Stop, briefings arriving live, older messages paged in from the chain on request.
 */
export function Chat({ agentId, agentName, agentRole, initialMessages, initialApprovals, highlight }: Props) {
  const [input, setInput] = useState("");
  const boxRef = useRef<HTMLTextAreaElement>(null);
  // Text typed before the page hydrated is in the box but not in `input` (no onChange ran
  // yet), which would leave Send disabled with a message showing: take it up once mounted.
  useEffect(() => {
    const typed = boxRef.current?.value;
    if (typed) setInput(typed);
  }, []);
  const [approvalList, setApprovalList] = useState(initialApprovals);
  const [stoppedId, setStoppedId] = useState<string | null>(null);
  const [syncError, setSyncError] = useState<string | null>(null);
  // The newest messages could not be read (the server or its database is away): tried again by itself.
  const [syncFailing, setSyncFailing] = useState(false);
  const [approvalsFailing, setApprovalsFailing] = useState(false);
  // Every stored message loaded so far, in chain order: the UI messages are made from it.
  const storedRef = useRef<ApiMessage[]>(initialMessages);
  const [olderExists, setOlderExists] = useState(hasOlder(initialMessages));
  const [loadingOlder, setLoadingOlder] = useState(false);
  const transport = useMemo(
    () =>
      new DefaultChatTransport<ChatMessage>({
        api: `/api/agents/${agentId}/chat`,
        // The stored conversation is the history: send only the new message.
        prepareSendMessagesRequest: ({ id, messages, trigger, messageId }) => ({
          body: { id, trigger, messageId, messages: messages.slice(-1) },
        }),
      }),
    [agentId],
  );
  const initialChatMessages = useMemo(() => toChatMessages(initialMessages), [initialMessages]);

  const { messages, setMessages, sendMessage, regenerate, status, stop, error, clearError } = useChat<ChatMessage>({
    id: `chat-${agentId}`,
    messages: initialChatMessages,
    transport,
    onFinish: () => {
      resyncSoon();
      loadApprovalsSoon();
    },
  });
  const busy = status === "submitted" || status === "streaming";
  const busyRef = useRef(busy);
  busyRef.current = busy;

  const show = useCallback(
    (stored: ApiMessage[]) => {
      storedRef.current = stored;
      setOlderExists(hasOlder(stored));
      setMessages(toChatMessages(stored));
    },
    [setMessages],
  );
  const page = useCallback(
    async (before?: string) => {
      const query = `mode=foreground&limit=${CHAT_PAGE_SIZE}${before ? `&before=${before}` : ""}`;
      return (await api<{ messages: ApiMessage[] }>(`/api/agents/${agentId}/messages?${query}`)).messages;
    },
    [agentId],
  );

  // The database is the truth: after a reply and on every change to this chat, reload the
  // newest page and join it to what is shown (reading back a few pages if much was written).
  const readNewest = useCallback(async () => {
    if (busyRef.current) return;
    try {
      let newest = await page();
      let merged = mergeNewest(storedRef.current, newest);
      for (let pages = 1; merged === null && pages < MAX_CATCH_UP_PAGES && hasOlder(newest); pages++) {
        newest = [...(await page(newest[0]!.id)), ...newest];
        merged = mergeNewest(storedRef.current, newest);
      }
      if (busyRef.current) return;
      show(merged ?? newest);
      setSyncFailing(false);
    } catch {
      setSyncFailing(true);
    }
  }, [page, show]);
  // One resync at a time (an older read answering after a newer one would hide what only the
  // newer saw); a resync asked for meanwhile runs once this one ends.
  const readNewestRef = useRef(readNewest);
  readNewestRef.current = readNewest;
  const resync = useMemo(() => oneAtATime(() => readNewestRef.current()), []);
  const resyncSoon = useCoalesced(() => void resync(), 250);

  // Older messages go on top without moving what the person is reading.
  const keepScroll = useRef<number | null>(null);
  const loadOlder = async () => {
    const oldest = storedRef.current[0];
    // Not while a reply streams: the messages shown are then the stream's, not the stored ones.
    if (!oldest || loadingOlder || busyRef.current) return;
    setLoadingOlder(true);
    try {
      const older = await page(oldest.id);
      keepScroll.current = document.documentElement.scrollHeight - window.scrollY;
      show([...older, ...storedRef.current]);
    } catch (cause) {
      setSyncError(`Could not load older messages: ${messageOf(cause)}`);
    } finally {
      setLoadingOlder(false);
    }
  };
  // Calls held for the person's approval: loaded whether or not a reply streams, since the
  // card must show as soon as the call waits. Newest first, so the first per call id wins.
  const loadApprovals = useCallback(async () => {
    try {
      const { approvals } = await api<{ approvals: ApprovalData[] }>(`/api/agents/${agentId}/approvals`);
      setApprovalList(approvals);
      setApprovalsFailing(false);
    } catch {
      setApprovalsFailing(true);
    }
  }, [agentId]);
  const loadApprovalsSoon = useCoalesced(() => void loadApprovals(), 250);
  const syncRetry = useAutoRetry(() => Promise.all([resync(), loadApprovals()]), syncFailing || approvalsFailing);
  const approvals = useMemo(() => {
    const byCall = new Map<string, ApprovalData>();
    for (const approval of approvalList)
      if (!byCall.has(approval.toolCallId)) byCall.set(approval.toolCallId, approval);
    return byCall;
  }, [approvalList]);
  const partContext = useMemo<PartContext>(
    () => ({ agentName, approvals, onDecided: loadApprovalsSoon }),
    [agentName, approvals, loadApprovalsSoon],
  );

  useLiveEvents((event) => {
    if (event === null || (event.table === "messages" && event.mode === "foreground" && event.agentId === agentId))
      resyncSoon();
    // A decision (here, in the inbox, in another tab) resumes the reply in a worker; its messages follow as events.
    if (event === null || (event.table === "approvals" && event.agentId === agentId)) {
      loadApprovalsSoon();
      resyncSoon();
    }
  });

  // Keep the newest message in view, unless the person scrolled up to read.
  const endRef = useRef<HTMLDivElement>(null);
  // The message a link points at stays where the person is reading; otherwise the newest does.
  const linkedId = useMemo(() => chatMessageShowing(initialMessages, highlight), [initialMessages, highlight]);
  const pinned = useRef(linkedId === undefined);
  useEffect(() => {
    if (!linkedId) return;
    const element = document.getElementById(`chat-${linkedId}`);
    element?.scrollIntoView({ block: "center" });
    element?.focus({ preventScroll: true });
  }, [linkedId]);
  useEffect(() => {
    const onScroll = () => {
      pinned.current = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 160;
    };
    window.addEventListener("scroll", onScroll, { passive: true });
    return () => window.removeEventListener("scroll", onScroll);
  }, []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs after each render of new messages, a status or an approval, which move the page's height
  useLayoutEffect(() => {
    if (keepScroll.current !== null) {
      window.scrollTo(0, document.documentElement.scrollHeight - keepScroll.current);
      keepScroll.current = null;
    } else if (pinned.current) endRef.current?.scrollIntoView({ block: "end" });
  }, [messages, status, approvalList]);

  const submit = (event?: FormEvent) => {
    event?.preventDefault();
    const text = input.trim();
    if (!text || busy) return;
    clearError();
    setStoppedId(null);
    setInput("");
    pinned.current = true;
    void sendMessage({ text });
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      submit();
    }
  };
  const onStop = () => {
    const last = messages.at(-1);
    if (last?.role === "assistant") setStoppedId(last.id);
    void stop();
  };
  // A failed reply's error is now in the stored reply: the banner has said it, and is not needed twice.
  useEffect(() => {
    if (error) resyncSoon();
  }, [error, resyncSoon]);

  const retry = () => {
    clearError();
    setStoppedId(null);
    pinned.current = true;
    void regenerate();
  };
  const last = messages.at(-1);
  // A model failure is said once: by the reply it ended (stored with its marker, shown with
  // Retry), or, until that reply is loaded or when nothing was stored, by the banner.
  const errorText =
    error && !(last?.role === "assistant" && last.metadata?.error)
      ? errorMessageFrom(error.message, "The reply failed. Try again.")
      : null;
  const subordinate = agentRole !== "lead";

  return (
    <div className="chat">
      {olderExists && (
        <p className="load-older">
          <button type="button" className="button" onClick={() => void loadOlder()} disabled={loadingOlder || busy}>
            {loadingOlder ? "Loading…" : "Load older messages"}
          </button>
        </p>
      )}
      {/* A log: screen readers announce a reply once it is complete (aria-busy holds it while it streams). */}
      <ol
        className="messages"
        role="log"
        aria-live="polite"
        aria-busy={busy}
        aria-label={`Conversation with ${agentName}`}
      >
        {messages.length === 0 && (
          <li className="chat-empty">
            {subordinate ? (
              <p>
                Talk with <strong>{agentName}</strong> directly: ask what it knows or has found, or give it a piece of
                work of its own — for example <em>“please research the latest on solid-state batteries”</em>. It can
                search the web and the team&apos;s knowledge; it hands work to nobody else.
              </p>
            ) : (
              <p>
                Say hello to <strong>{agentName}</strong>. Ask a quick question, or hand the team some work — for
                example <em>“please research the latest on solid-state batteries”</em>. Briefings from the team appear
                here and in your inbox.
              </p>
            )}
          </li>
        )}
        {messages.map((message) => {
          const inboxItemId = message.metadata?.inboxItemId;
          const isQuestion = message.metadata?.question === true;
          const text = message.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
          const stopped = message.metadata?.stopped === true || message.id === stoppedId;
          const failed = message.metadata?.error;
          const isLast = message.id === last?.id;
          const kindClass = message.metadata?.briefing ? " message-briefing" : isQuestion ? " message-question" : "";
          return (
            <li
              key={message.id}
              id={`chat-${message.id}`}
              className={`message message-${message.role}${kindClass}${message.id === linkedId ? " message-linked" : ""}`}
              tabIndex={message.id === linkedId ? -1 : undefined}
            >
              <div className="message-meta">
                <span className="message-author">{message.role === "user" ? "You" : agentName}</span>
                {message.id === linkedId && <span className="log-linked-mark">Linked message</span>}
                {message.metadata?.briefing && <span className="pill pill-accent">Briefing</span>}
                {isQuestion && <span className="pill pill-question">Question</span>}
                {message.metadata?.createdAt && <LocalTime value={message.metadata.createdAt} relative />}
                {inboxItemId && (
                  <Link href={`/inbox/${inboxItemId}`} className="message-link">
                    Open in inbox
                  </Link>
                )}
              </div>
              <div className="message-body">
                {message.parts.map((part, index) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: a message's parts only grow at its end (streaming); a part's place is its identity
                  <MessagePart key={index} part={part} context={partContext} />
                ))}
                {isQuestion && inboxItemId && (
                  <ChatQuestion itemId={inboxItemId} agentId={agentId} agentName={agentName} />
                )}
                {message.role === "assistant" && busy && isLast && !text && (
                  <span className="typing" role="img" aria-label="Thinking">
                    <span />
                    <span />
                    <span />
                  </span>
                )}
                {stopped && !failed && <p className="marker">{STOPPED_BY_YOU}</p>}
                {failed &&
                  (isLast && !busy ? (
                    <ErrorNote message={failed} actions={[{ label: "Retry", onClick: retry }]} />
                  ) : (
                    <p className="marker marker-error">The reply failed: {failed}</p>
                  ))}
              </div>
            </li>
          );
        })}
        {status === "submitted" && last?.role === "user" && (
          <li className="message message-assistant">
            <div className="message-meta">
              <span className="message-author">{agentName}</span>
            </div>
            <span className="typing" role="img" aria-label="Thinking">
              <span />
              <span />
              <span />
            </span>
          </li>
        )}
      </ol>
      <div ref={endRef} />
      <div className="composer-wrap">
        {errorText && (
          <ErrorNote message={errorText} actions={[{ label: "Retry", onClick: retry }]} onDismiss={clearError} />
        )}
        {(syncFailing || approvalsFailing) && <RetryNote what="the latest messages" retry={syncRetry} />}
        {syncError && <ErrorNote message={syncError} onDismiss={() => setSyncError(null)} />}
        <form className="composer" onSubmit={submit}>
          <textarea
            ref={boxRef}
            aria-label="Message"
            placeholder={`Message ${agentName}…`}
            title="Enter sends, Shift+Enter starts a new line"
            value={input}
            rows={2}
            maxLength={20000}
            onChange={(event) => setInput(event.target.value)}
            onKeyDown={onKeyDown}
          />
          {busy ? (
            <button type="button" className="button button-danger" onClick={onStop}>
              Stop
            </button>
          ) : (
            <button type="submit" className="button button-primary" disabled={!input.trim()}>
              Send
            </button>
          )}
        </form>
      </div>
    </div>
  );
}
