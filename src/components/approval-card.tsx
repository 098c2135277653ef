"use client";

import { describeToolCall, toolAction } from "@/lib/views/tool-labels";
import { useRouter } from "next/navigation";
import { useId, useState, type FormEvent } from "react";
import { api, ApiError, messageOf, type Wire } from "@/lib/client/api-client";
import type { Approval } from "@/lib/db/schema";
import { decidedByWords } from "@/lib/views/decided-via";
import { Markdown } from "./markdown";
import { ErrorNote, LocalTime } from "./ui";
import { useInlineForm } from "./use-inline-form";

export type ApprovalData = Wire<Approval>;

/** Key order must not make an unchanged input look edited. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner && typeof inner === "object" && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : inner,
  );
}

function approvedWithChanges(approval: ApprovalData): boolean {
  return (
    approval.status === "approved" &&
    approval.approvedInput != null &&
    canonical(approval.approvedInput) !== canonical(approval.input)
  );
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** What the card is called for assistive technology: distinct when several wait on one page. */
function approvalLabel(approval: Pick<ApprovalData, "toolName" | "input">, agentName: string): string {
  return `${agentName} wants to ${toolAction(approval.toolName)}: ${oneLine(describeToolCall(approval.toolName, approval.input, "waiting"), 80)}`;
}

function Arguments({ label, value }: { label: string; value: unknown }) {
  return (
    <div className="approval-field">
      <div className="tool-label">{label}</div>
      <pre className="json">{JSON.stringify(value ?? {}, null, 2)}</pre>
    </div>
  );
}

/** How a decided (or withdrawn) call reads, in plain words. */
function Outcome({ approval }: { approval: ApprovalData }) {
  const via = decidedByWords(approval.decidedVia, approval.decidedBy);
  const when = approval.decidedAt ? (
    <>
      {" "}
      {via && <span className="decision-via">· {via} </span>}· <LocalTime value={approval.decidedAt} relative />
    </>
  ) : null;
  if (approval.status === "approved") {
    const changed = approvedWithChanges(approval);
    const progress = approval.resolvedAt
      ? "it ran"
      : approval.executionStartedAt
        ? "running"
        : "waiting for the agent to run it";
    return (
      <p className="decision decision-approved">
        <strong>{changed ? "Approved with changes" : "Approved"}</strong>
        <span className="decision-meta">
          {" "}
          · {progress}
          {when}
        </span>
      </p>
    );
  }
  if (approval.status === "denied") {
    return (
      <p className="decision decision-denied">
        <strong>Denied:</strong> {approval.decisionNote || "no reason given"}
        <span className="decision-meta">{when}</span>
      </p>
    );
  }
  return (
    <p className="decision decision-withdrawn">
      <strong>Withdrawn:</strong> {approval.decisionNote || "the call is no longer needed"}
      <span className="decision-meta">{when}</span>
    </p>
  );
}

/**
 * A tool call that waits for the person (flow 8): who wants to run what, with which
 * arguments and why; Approve, Edit and approve (the arguments as JSON, checked before
 * sending), or Deny with a reason the agent is told. Decided and withdrawn calls say so.
 * The same card serves the inbox, the item page and the chat. `onDecided` hears the
 * server's new state (also after a conflict, when another tab decided first).
 */
export function ApprovalCard({
  approval: given,
  agentName,
  heading = true,
  compact = false,
  onDecided,
}: {
  approval: ApprovalData;
  agentName: string;
  /** Off where the page already says who wants what (the inbox row's title, the item page's heading). */
  heading?: boolean;
  /** A decided call shrinks to its outcome, its arguments folded away (lists, the chat, the work log). */
  compact?: boolean;
  onDecided?: (approval: ApprovalData | null) => void;
}) {
  const router = useRouter();
  const [answered, setAnswered] = useState<ApprovalData | null>(null);
  // The server's word wins once it has moved on; until then, what this card just decided.
  const approval = given.status !== "pending" || !answered ? given : answered;
  const [draft, setDraft] = useState(() => JSON.stringify(given.input ?? {}, null, 2));
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // Edit and approve, or Deny with a reason: Escape or Cancel goes back to the three buttons.
  const form = useInlineForm<"edit" | "deny">(() => setError(null));
  const mode = form.open ?? "choose";
  const ids = useId();

  const decide = async (body: Record<string, unknown>) => {
    setBusy(true);
    setError(null);
    try {
      const { approval: decided } = await api<{ approval: ApprovalData }>(`/api/approvals/${approval.id}/decision`, {
        method: "POST",
        body,
      });
      setAnswered(decided);
      form.done();
      onDecided?.(decided);
      router.refresh();
    } catch (cause) {
      setError(messageOf(cause));
      // Decided or withdrawn elsewhere meanwhile: show the state as it is now.
      if (cause instanceof ApiError && cause.status === 409) {
        onDecided?.(null);
        router.refresh();
      }
    } finally {
      setBusy(false);
    }
  };

  const approveEdited = (event: FormEvent) => {
    event.preventDefault();
    let input: unknown;
    try {
      input = JSON.parse(draft);
    } catch (cause) {
      setError(`The arguments are not valid JSON: ${messageOf(cause)}`);
      return;
    }
    if (!input || typeof input !== "object" || Array.isArray(input)) {
      setError('The arguments must be a JSON object, like the ones above: { "name": value, … }.');
      return;
    }
    void decide({ decision: "approve", input });
  };

  const deny = (event: FormEvent) => {
    event.preventDefault();
    if (!reason.trim()) {
      setError("Say why you deny it: the agent is told your reason.");
      return;
    }
    void decide({ decision: "deny", reason: reason.trim() });
  };

  const pending = approval.status === "pending";
  const changed = approvedWithChanges(approval);
  const folded = compact && !pending;
  const errorNote = error && <ErrorNote message={error} onDismiss={() => setError(null)} />;
  return (
    <article
      className={`approval approval-${approval.status}${folded ? " approval-folded" : ""}`}
      aria-label={approvalLabel(approval, agentName)}
      data-approval-id={approval.id}
    >
      {folded && <Outcome approval={approval} />}
      {heading && !folded && (
        <p className="approval-head">
          <strong>{agentName}</strong> wants to {toolAction(approval.toolName)}
        </p>
      )}
      {folded ? (
        <details className="approval-original">
          <summary>{changed ? "Arguments as approved" : "Arguments"}</summary>
          <pre className="json">
            {JSON.stringify((changed ? approval.approvedInput : approval.input) ?? {}, null, 2)}
          </pre>
        </details>
      ) : changed ? (
        <>
          <Arguments label="Arguments as approved" value={approval.approvedInput} />
          <details className="approval-original">
            <summary>Arguments as the agent sent them</summary>
            <pre className="json">{JSON.stringify(approval.input ?? {}, null, 2)}</pre>
          </details>
        </>
      ) : (
        <Arguments label="Arguments" value={approval.input} />
      )}
      {!folded &&
        (approval.reason.trim() ? (
          <div className="approval-field">
            <div className="tool-label">The agent&apos;s reason</div>
            <Markdown text={approval.reason} className="approval-reason" />
          </div>
        ) : (
          <p className="hint approval-reason">The agent gave no reason with this call.</p>
        ))}

      {!pending && !folded && <Outcome approval={approval} />}
      {mode === "choose" && errorNote}

      {pending && mode === "choose" && (
        <div className="approval-actions">
          <button
            type="button"
            className="button button-primary"
            disabled={busy}
            onClick={() => void decide({ decision: "approve" })}
          >
            Approve
          </button>
          <button
            type="button"
            className="button"
            disabled={busy}
            ref={form.opener("edit")}
            onClick={() => {
              setDraft(JSON.stringify(approval.input ?? {}, null, 2));
              setError(null);
              form.show("edit");
            }}
          >
            Edit and approve
          </button>
          <button
            type="button"
            className="button button-danger-text"
            disabled={busy}
            ref={form.opener("deny")}
            onClick={() => {
              setError(null);
              form.show("deny");
            }}
          >
            Deny
          </button>
        </div>
      )}

      {pending && mode === "edit" && (
        <form className="approval-form" onSubmit={approveEdited} onKeyDown={form.onKeyDown}>
          <div className="field">
            <label htmlFor={`${ids}-args`}>Arguments (JSON)</label>
            <textarea
              id={`${ids}-args`}
              className="mono"
              value={draft}
              rows={Math.min(14, Math.max(4, draft.split("\n").length + 1))}
              spellCheck={false}
              // biome-ignore lint/a11y/noAutofocus: the person just pressed Edit: the field they asked for takes focus (Escape gives it back)
              autoFocus
              onChange={(event) => {
                setDraft(event.target.value);
                setError(null);
              }}
            />
          </div>
          {errorNote}
          <p className="hint">The call runs with these arguments instead of the agent&apos;s.</p>
          <div className="approval-actions">
            <button type="button" className="button button-quiet" onClick={form.cancel} disabled={busy}>
              Cancel
            </button>
            <button type="submit" className="button button-primary" disabled={busy}>
              {busy ? "Approving…" : "Approve with changes"}
            </button>
          </div>
        </form>
      )}

      {pending && mode === "deny" && (
        <form className="approval-form" onSubmit={deny} onKeyDown={form.onKeyDown}>
          <div className="field">
            <label htmlFor={`${ids}-reason`}>Reason</label>
            <textarea
              id={`${ids}-reason`}
              value={reason}
              rows={2}
              maxLength={2000}
              // biome-ignore lint/a11y/noAutofocus: the person just pressed Deny: the field they asked for takes focus (Escape gives it back)
              autoFocus
              placeholder="Not this one: …"
              onChange={(event) => {
                setReason(event.target.value);
                setError(null);
              }}
            />
          </div>
          {errorNote}
          <p className="hint">The agent is told: “Denied by the person: your reason”.</p>
          <div className="approval-actions">
            <button type="button" className="button button-quiet" onClick={form.cancel} disabled={busy}>
              Cancel
            </button>
            <button type="submit" className="button button-danger" disabled={busy}>
              {busy ? "Denying…" : "Deny call"}
            </button>
          </div>
        </form>
      )}
    </article>
  );
}
