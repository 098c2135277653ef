"use client";

import { useRouter } from "next/navigation";
import { useId, useState, type FormEvent, type KeyboardEvent } from "react";
import { api, ApiError, messageOf, type Wire } from "@/lib/client/api-client";
import type { Question } from "@/lib/db/schema";
import { decidedByWords } from "@/lib/views/decided-via";
import { Markdown } from "./markdown";
import { ErrorNote, LocalTime } from "./ui";

export type QuestionData = Wire<Question>;

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * A question an agent put to the person (flow 8): open, a box for the answer; answered,
 * the answer; withdrawn, why it no longer needs one. The same card serves the inbox, the
 * item page and the chat (where the message above already shows the question:
 * `showQuestion={false}`). `onAnswered` hears the new state, or null after a conflict.
 */
export function QuestionCard({
  question: given,
  agentName,
  showQuestion = true,
  onAnswered,
}: {
  question: QuestionData;
  agentName: string;
  showQuestion?: boolean;
  onAnswered?: (question: QuestionData | null) => void;
}) {
  const router = useRouter();
  const [answered, setAnswered] = useState<QuestionData | null>(null);
  const question = given.status !== "open" || !answered ? given : answered;
  const [answer, setAnswer] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const id = useId();

  const send = async (event?: FormEvent) => {
    event?.preventDefault();
    if (!answer.trim()) {
      setError("Write an answer first.");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const { question: saved } = await api<{ question: QuestionData }>(`/api/questions/${question.id}/answer`, {
        method: "POST",
        body: { answer: answer.trim() },
      });
      setAnswered(saved);
      setAnswer("");
      onAnswered?.(saved);
      router.refresh();
    } catch (cause) {
      setError(messageOf(cause));
      // Answered elsewhere, or its task ended: show the state as it is now.
      if (cause instanceof ApiError && cause.status === 409) {
        onAnswered?.(null);
        router.refresh();
      }
    } finally {
      setBusy(false);
    }
  };
  // Ctrl/⌘+Enter sends; Enter alone starts a new line, as an answer may need several.
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      void send();
    }
  };

  return (
    <article
      className={`question question-${question.status}`}
      aria-label={`${agentName} asks: ${oneLine(question.question, 100)}`}
      data-question-id={question.id}
    >
      {showQuestion && <Markdown text={question.question} className="question-text" />}
      {question.status === "open" && (
        <form className="question-form" onSubmit={send}>
          <div className="field">
            <label htmlFor={`${id}-answer`}>Answer</label>
            <textarea
              id={`${id}-answer`}
              value={answer}
              rows={3}
              maxLength={20000}
              placeholder={`Your answer to ${agentName}…`}
              title="Ctrl+Enter sends"
              onChange={(event) => {
                setAnswer(event.target.value);
                setError(null);
              }}
              onKeyDown={onKeyDown}
            />
          </div>
          {error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
          <div className="approval-actions">
            <span className="hint">{agentName}&apos;s task waits for your answer.</span>
            <button type="submit" className="button button-primary" disabled={busy}>
              {busy ? "Sending…" : "Send answer"}
            </button>
          </div>
        </form>
      )}
      {question.status === "answered" && (
        <div className="decision decision-approved">
          <p className="decision-line">
            <strong>Answered</strong>
            {question.answeredAt && (
              <span className="decision-meta">
                {" "}
                {question.answeredVia && (
                  <span className="decision-via">· {decidedByWords(question.answeredVia)} </span>
                )}
                · <LocalTime value={question.answeredAt} relative />
              </span>
            )}
          </p>
          <Markdown text={question.answer ?? ""} className="question-answer" />
        </div>
      )}
      {question.status === "withdrawn" && (
        <p className="decision decision-withdrawn">
          <strong>Withdrawn:</strong> the task that asked has ended, so {agentName} no longer needs an answer.
        </p>
      )}
      {question.status !== "open" && error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
    </article>
  );
}
