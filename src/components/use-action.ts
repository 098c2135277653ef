"use client";

import { useRouter } from "next/navigation";
import { useCallback, useState } from "react";
import { messageOf } from "@/lib/client/api-client";

/**
 * A button's or form's request to the API: busy while it runs, the server's message
 * when it fails, and the page's data refreshed when it succeeds. `keepBusy` leaves
 * the control disabled after success, for actions whose control goes away with the
 * refresh (a removal, a stop).
 */
export function useAction() {
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = useCallback(
    async (action: () => Promise<unknown>, options: { keepBusy?: boolean } = {}): Promise<boolean> => {
      setBusy(true);
      setError(null);
      try {
        await action();
        router.refresh();
        if (!options.keepBusy) setBusy(false);
        return true;
      } catch (cause) {
        setError(messageOf(cause));
        setBusy(false);
        return false;
      }
    },
    [router],
  );
  return { busy, error, clearError: () => setError(null), run };
}
