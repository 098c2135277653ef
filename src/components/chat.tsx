"use client";

import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, getToolName, isToolUIPart } from "ai";
import Link from "next/link";
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { api, errorMessageFrom } from "@/lib/api-client";
import { STOPPED_MARKER } from "@/lib/agents/formats";
import { toChatMessages, type ApiMessage, type ChatMessage } from "@/lib/chat-messages";
import { useCoalesced, useLiveEvents } from "./live-events";
import { Markdown } from "./markdown";
import { ToolCall } from "./tool-call";
import { ErrorNote, LocalTime } from "./ui";

type Props = {
  agentId: string;
  agentName: string;
  initialMessages: ChatMessage[];
};

function MessagePart({ part }: { part: ChatMessage["parts"][number] }) {
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
    const state = part.state === "output-available" ? "done" : part.state === "output-error" || part.state === "output-denied" ? "error" : "running";
    return (
      <ToolCall
        toolName={getToolName(part)}
        input={part.input}
        state={state}
        output={part.state === "output-available" ? part.output : undefined}
        errorText={part.state === "output-error" ? part.errorText : undefined}
      />
    );
  }
  return null;
}

/** The person's chat with a lead (flow 1): streamed replies, tool calls, Stop, briefings arriving live. */
export function Chat({ agentId, agentName, initialMessages }: Props) {
  const [input, setInput] = useState("");
  const [stoppedId, setStoppedId] = useState<string | null>(null);
  const [syncError, setSyncError] = useState<string | null>(null);
  const transport = useMemo(
    () =>
      new DefaultChatTransport<ChatMessage>({
        api: `/api/agents/${agentId}/chat`,
        // The stored conversation is the history: send only the new message.
        prepareSendMessagesRequest: ({ id, messages, trigger, messageId }) => ({ body: { id, trigger, messageId, messages: messages.slice(-1) } }),
      }),
    [agentId],
  );

  const { messages, setMessages, sendMessage, status, stop, error, clearError } = useChat<ChatMessage>({
    id: `chat-${agentId}`,
    messages: initialMessages,
    transport,
    onFinish: () => resyncSoon(),
  });
  const busy = status === "submitted" || status === "streaming";
  const busyRef = useRef(busy);
  busyRef.current = busy;

  // The database is the truth: after a reply and on every change to this chat, reload it.
  const resync = useCallback(async () => {
    if (busyRef.current) return;
    try {
      const { messages: stored } = await api<{ messages: ApiMessage[] }>(`/api/agents/${agentId}/messages?mode=foreground&limit=300`);
      if (busyRef.current) return;
      setMessages(toChatMessages(stored));
      setSyncError(null);
    } catch (cause) {
      setSyncError(`Could not load the latest messages: ${cause instanceof Error ? cause.message : cause}`);
    }
  }, [agentId, setMessages]);
  const resyncSoon = useCoalesced(() => void resync(), 250);
  useLiveEvents((event) => {
    if (event === null || (event.table === "messages" && event.mode === "foreground" && event.agentId === agentId)) resyncSoon();
  });

  // Keep the newest message in view, unless the person scrolled up to read.
  const endRef = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);
  useEffect(() => {
    const onScroll = () => {
      pinned.current = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 160;
    };
    window.addEventListener("scroll", onScroll, { passive: true });
    return () => window.removeEventListener("scroll", onScroll);
  }, []);
  useLayoutEffect(() => {
    if (pinned.current) endRef.current?.scrollIntoView({ block: "end" });
  }, [messages, status]);

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

  const errorText = error ? errorMessageFrom(error.message, "The reply failed. Try again.") : null;

  return (
    <div className="chat">
      <ol className="messages" aria-label={`Conversation with ${agentName}`}>
        {messages.length === 0 && (
          <li className="chat-empty">
            <p>
              Say hello to <strong>{agentName}</strong>. Ask a quick question, or hand the team some work — for example{" "}
              <em>“please research the latest on solid-state batteries”</em>. Briefings from the team appear here and in your inbox.
            </p>
          </li>
        )}
        {messages.map((message) => {
          const briefingId = message.metadata?.inboxItemId;
          const text = message.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
          const stopped = message.id === stoppedId && !text.includes(STOPPED_MARKER);
          return (
            <li key={message.id} className={`message message-${message.role}${message.metadata?.briefing ? " message-briefing" : ""}`}>
              <div className="message-meta">
                <span className="message-author">{message.role === "user" ? "You" : agentName}</span>
                {message.metadata?.briefing && <span className="pill pill-accent">Briefing</span>}
                {message.metadata?.createdAt && <LocalTime value={message.metadata.createdAt} relative />}
                {briefingId && (
                  <Link href={`/inbox/${briefingId}`} className="message-link">
                    Open in inbox
                  </Link>
                )}
              </div>
              <div className="message-body">
                {message.parts.map((part, index) => (
                  <MessagePart key={index} part={part} />
                ))}
                {message.role === "assistant" && busy && message.id === messages.at(-1)?.id && !text && (
                  <span className="typing" aria-label="Thinking">
                    <span />
                    <span />
                    <span />
                  </span>
                )}
                {stopped && <p className="marker">{STOPPED_MARKER}</p>}
              </div>
            </li>
          );
        })}
        {status === "submitted" && messages.at(-1)?.role === "user" && (
          <li className="message message-assistant">
            <div className="message-meta">
              <span className="message-author">{agentName}</span>
            </div>
            <span className="typing" aria-label="Thinking">
              <span />
              <span />
              <span />
            </span>
          </li>
        )}
      </ol>
      <div ref={endRef} />
      <div className="composer-wrap">
        {errorText && <ErrorNote message={errorText} onDismiss={clearError} />}
        {syncError && <ErrorNote message={syncError} onDismiss={() => setSyncError(null)} />}
        <form className="composer" onSubmit={submit}>
          <textarea
            aria-label="Message"
            placeholder="Message the lead…"
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
