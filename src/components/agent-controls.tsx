"use client";

import { api } from "@/lib/api-client";
import { ErrorNote } from "./ui";
import { useAction } from "./use-action";

/** Flow 7: stop the agent's running work session. */
export function StopSessionButton({ agentId }: { agentId: string }) {
  const { busy, error, clearError, run } = useAction();
  const stop = () => run(() => api(`/api/agents/${agentId}/stop`, { method: "POST" }), { keepBusy: true });
  return (
    <>
      <button type="button" className="button button-danger" onClick={stop} disabled={busy} aria-label="Stop session">
        {busy ? "Stopping…" : "Stop session"}
      </button>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
    </>
  );
}

export function CancelTaskButton({ taskId, title }: { taskId: string; title: string }) {
  const { busy, error, clearError, run } = useAction();
  return (
    <>
      <button
        type="button"
        className="button button-quiet button-danger-text"
        disabled={busy}
        aria-label={`Cancel task “${title}”`}
        onClick={() => run(() => api(`/api/tasks/${taskId}/cancel`, { method: "POST" }))}
      >
        Cancel
      </button>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
    </>
  );
}
