"use client";

import { useRouter } from "next/navigation";
import { useState } from "react";
import { api, messageOf } from "@/lib/api-client";
import { ErrorNote } from "./ui";

export function DeleteKnowledgeButton({ itemId }: { itemId: string }) {
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  return (
    <>
      <button
        type="button"
        className="button button-quiet button-danger-text"
        disabled={busy}
        onClick={async () => {
          if (!window.confirm("Delete this knowledge item? Agents will no longer see it.")) return;
          setBusy(true);
          try {
            await api(`/api/knowledge/${itemId}`, { method: "DELETE" });
            router.refresh();
          } catch (cause) {
            setError(messageOf(cause));
            setBusy(false);
          }
        }}
      >
        Delete
      </button>
      {error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
    </>
  );
}
