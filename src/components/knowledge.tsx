"use client";

import { api } from "@/lib/api-client";
import { ErrorNote } from "./ui";
import { useAction } from "./use-action";

export function DeleteKnowledgeButton({ itemId }: { itemId: string }) {
  const { busy, error, clearError, run } = useAction();
  return (
    <>
      <button
        type="button"
        className="button button-quiet button-danger-text"
        disabled={busy}
        onClick={async () => {
          if (!window.confirm("Delete this knowledge item? Agents will no longer see it.")) return;
          await run(() => api(`/api/knowledge/${itemId}`, { method: "DELETE" }), { keepBusy: true });
        }}
      >
        Delete
      </button>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
    </>
  );
}
