"use client";

import Link from "next/link";
import { useEffect } from "react";

export default function PageError({ error, retry }: { error: unknown; retry: () => void }) {
  useEffect(() => {
    console.error(error);
  }, [error]);
  return (
    <div className="page">
      <div className="empty" role="alert">
        <h1 className="empty-title">This page could not be loaded</h1>
        <div className="empty-body">
          <p>
            The server could not answer — most often the database is not reachable. Check that Postgres is running and DATABASE_URL is right
            (<code>/api/health</code> says what is wrong), then try again.
          </p>
          <p className="form-actions">
            <button type="button" className="button button-primary" onClick={() => retry()}>
              Try again
            </button>
            <Link href="/teams" className="button button-quiet">
              Go to Teams
            </Link>
          </p>
        </div>
      </div>
    </div>
  );
}
