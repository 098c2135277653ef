"use client";

import { useCallback, useEffect, useRef, useState } from "react";
import { retryDelaySeconds } from "@/lib/client/retry-backoff";
import { useLiveEvents } from "./live-events";

export type AutoRetry = {
  /** Seconds until the next try; null while a try is under way. */
  secondsLeft: number | null;
  retryNow: () => void;
};

/**
 * Tries `retry` again by itself while `failing`: after 2, 4, 8… s (capped at 30), and at once
 * when the live-event stream reconnects or any live event arrives — either means the server
 * and its database answer again. `failuresBefore`: tries that already failed (a boundary
 * that is mounted afresh after each failed try keeps its count that way).
 */
export function useAutoRetry(retry: () => unknown, failing: boolean, failuresBefore = 0): AutoRetry {
  const [failures, setFailures] = useState(failuresBefore);
  const [secondsLeft, setSecondsLeft] = useState<number | null>(null);
  const latest = useRef(retry);
  useEffect(() => {
    latest.current = retry;
  });
  const trying = useRef(false);

  const retryNow = useCallback(() => {
    if (trying.current) return;
    trying.current = true;
    setSecondsLeft(null);
    void Promise.resolve()
      .then(() => latest.current())
      .catch(() => {})
      .finally(() => {
        trying.current = false;
        // Still failing after this try: the next one waits longer. A success ends the schedule.
        setFailures((count) => count + 1);
      });
  }, []);

  useEffect(() => {
    if (!failing) {
      setSecondsLeft(null);
      return;
    }
    const deadline = Date.now() + retryDelaySeconds(failures) * 1000;
    const tick = () => {
      const left = Math.ceil((deadline - Date.now()) / 1000);
      if (left <= 0) {
        clearInterval(timer);
        retryNow();
      } else setSecondsLeft(left);
    };
    const timer = setInterval(tick, 250);
    tick();
    return () => clearInterval(timer);
  }, [failing, failures, retryNow]);

  useEffect(() => {
    if (!failing) setFailures(0);
  }, [failing]);

  useLiveEvents(() => {
    if (failing) retryNow();
  });
  return { secondsLeft, retryNow };
}

/** "retrying in 4 s…" / "retrying…": what a failed page or panel says while it waits to try again. */
export function retryingWords({ secondsLeft }: Pick<AutoRetry, "secondsLeft">): string {
  return secondsLeft === null ? "retrying…" : `retrying in ${secondsLeft} s…`;
}

/**
 * A panel that could not load what it shows: one sentence for the person, the countdown to the
 * next try and Retry now. `what` names the thing: "the latest messages".
 */
export function RetryNote({ what, retry }: { what: string; retry: AutoRetry }) {
  return (
    <div className="error-note retry-note">
      <span aria-hidden="true">
        Couldn&apos;t load {what} — {retryingWords(retry)}
      </span>
      {/* Said once: the countdown before it ticks every second and is not a live region. */}
      <span className="visually-hidden" role="status">
        Couldn&apos;t load {what}; it is tried again by itself.
      </span>
      <span className="error-note-actions">
        <button type="button" className="link-button" onClick={retry.retryNow} disabled={retry.secondsLeft === null}>
          Retry now
        </button>
      </span>
    </div>
  );
}
