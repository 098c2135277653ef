"use client";

import { useRouter } from "next/navigation";
import { useState } from "react";
import { api, messageOf } from "@/lib/api-client";
import { ErrorNote } from "./ui";

/** Flow 7: stop the agent's running work session. */
export function StopSessionButton({ agentId }: { agentId: string }) {
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const stop = async () => {
    setBusy(true);
    setError(null);
    try {
      await api(`/api/agents/${agentId}/stop`, { method: "POST" });
      router.refresh();
    } catch (cause) {
      setError(messageOf(cause));
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" className="button button-danger" onClick={stop} disabled={busy} aria-label="Stop session">
        {busy ? "Stopping…" : "Stop session"}
      </button>
      {error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
    </>
  );
}

export function CancelTaskButton({ taskId, title }: { taskId: string; title: string }) {
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  return (
    <>
      <button
        type="button"
        className="button button-quiet button-danger-text"
        disabled={busy}
        aria-label={`Cancel task “${title}”`}
        onClick={async () => {
          setBusy(true);
          try {
            await api(`/api/tasks/${taskId}/cancel`, { method: "POST" });
            router.refresh();
          } catch (cause) {
            setError(messageOf(cause));
          } finally {
            setBusy(false);
          }
        }}
      >
        Cancel
      </button>
      {error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
    </>
  );
}
