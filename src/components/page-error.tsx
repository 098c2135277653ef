"use client";

import Link from "next/link";
import { useEffect, useState } from "react";
import { retryingWords, useAutoRetry } from "./auto-retry";

/**
 * Failed tries of this boundary in a row, across mounts: Next may mount the error page afresh
 * after each failed retry, and the wait must still grow (2, 4, 8… s). A try more than a
 * minute after the last one starts the count again.
 */
const recent = { failures: 0, at: 0 };
function failuresSoFar(): number {
  const now = Date.now();
  recent.failures = now - recent.at < 60_000 ? recent.failures + 1 : 0;
  recent.at = now;
  return recent.failures;
}

/**
 * A page that could not be rendered (app/error.tsx; app/global-error.tsx when even the root
 * layout failed) — most often because the database did not answer for a moment. It tries
 * again by itself (after a growing wait, and as soon as the live-event stream reconnects or
 * any event arrives) and says so; the error's text never reaches the person, only its
 * digest, under Details, to find the server's log line.
 */
export function PageError({ error, retry }: { error: unknown; retry: () => void }) {
  useEffect(() => {
    console.error(error);
  }, [error]);
  const [failuresBefore] = useState(failuresSoFar);
  const auto = useAutoRetry(retry, true, failuresBefore);
  const digest = error instanceof Error && "digest" in error && typeof error.digest === "string" ? error.digest : null;
  return (
    <div className="page">
      <div className="empty page-error">
        {/* Said once; the countdown in the heading ticks and is not announced every second. */}
        <p className="visually-hidden" role="alert">
          Couldn&apos;t load this page. It tries again by itself.
        </p>
        <h1 className="empty-title">Couldn&apos;t load this page — {retryingWords(auto)}</h1>
        <div className="empty-body">
          <p>
            The server could not read what this page shows, most often because its database is briefly out of reach. The
            page comes back by itself once it answers.
          </p>
          <p className="form-actions">
            <button
              type="button"
              className="button button-primary"
              onClick={auto.retryNow}
              disabled={auto.secondsLeft === null}
            >
              Retry now
            </button>
            <Link href="/teams" className="button button-quiet">
              Go to Teams
            </Link>
          </p>
          <details className="error-details">
            <summary>Details</summary>
            <p>
              If this lasts, check that Postgres is running and that DATABASE_URL points at it;{" "}
              <a href="/api/health">/api/health</a> says what the server sees.
            </p>
            {digest && (
              <p>
                Error reference for the server&apos;s log: <code>{digest}</code>
              </p>
            )}
          </details>
        </div>
      </div>
    </div>
  );
}
