"use client";

import { useRouter } from "next/navigation";
import { useId, useState, type FormEvent } from "react";
import { api, messageOf } from "@/lib/client/api-client";
import { ErrorNote } from "./ui";

/**
 * The one button of an action link's page (/act): Approve, Deny (with an optional reason the
 * agent is told) or Send answer. It posts to /api/act with the link's token, then the page is
 * rendered again and says how the item was settled, whoever won.
 */
export function ActOnLink({
  token,
  action,
  agentName,
}: {
  token: string;
  action: "approve" | "deny" | "answer";
  agentName: string;
}) {
  const router = useRouter();
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const id = useId();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (action === "answer" && !text.trim()) {
      setError("Write your answer first.");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const body =
        action === "approve"
          ? {}
          : action === "deny"
            ? text.trim()
              ? { reason: text.trim() }
              : {}
            : { answer: text.trim() };
      await api(`/api/act?t=${encodeURIComponent(token)}`, { method: "POST", body });
      router.refresh();
    } catch (cause) {
      setError(messageOf(cause));
      router.refresh();
    } finally {
      setBusy(false);
    }
  };

  const label = action === "approve" ? "Approve" : action === "deny" ? "Deny" : "Send answer";
  return (
    <form className="act-form" onSubmit={submit}>
      {action !== "approve" && (
        <div className="field">
          <label htmlFor={id}>
            {action === "deny" ? `Why not? (optional: ${agentName} is told)` : `Your answer (${agentName} is told)`}
          </label>
          <textarea
            id={id}
            rows={action === "deny" ? 3 : 5}
            value={text}
            onChange={(event) => setText(event.target.value)}
          />
        </div>
      )}
      {error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
      <div className="approval-actions">
        <span className="hint">
          {action === "answer"
            ? "Nothing is sent until you press the button."
            : "Nothing is decided until you press the button."}
        </span>
        <button
          type="submit"
          className={action === "deny" ? "button button-danger" : "button button-primary"}
          disabled={busy}
        >
          {busy ? "Sending…" : label}
        </button>
      </div>
    </form>
  );
}
