"use client";

import { useRouter } from "next/navigation";
import { lastVisitCookie } from "@/lib/views/last-visit";

/**
 * Moves "since you were last here" to the time the page was rendered, not the click: what
 * arrived while the person read the page stays new.
 */
export function MarkSeenButton({ renderedAt }: { renderedAt: number }) {
  const router = useRouter();
  const markSeen = () => {
    // biome-ignore lint/suspicious/noDocumentCookie: the Cookie Store API is not in every browser yet; lastVisitCookie builds the whole cookie
    document.cookie = lastVisitCookie(new Date(renderedAt));
    router.refresh();
  };
  return (
    <button type="button" className="button" onClick={markSeen}>
      Mark as seen
    </button>
  );
}
