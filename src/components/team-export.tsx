"use client";

import { useId, useState, type FormEvent } from "react";
import { ErrorNote } from "./ui";

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The team page's Export section: the whole record as JSON, and a Markdown digest of a
 * range of days. Both are plain GETs that answer with a download, so the page stays put;
 * the digest's dates are checked here first, so a mistake reads as a note, not a JSON error page.
 */
export function TeamExport({
  teamId,
  defaultFrom,
  defaultTo,
  maxDays,
}: {
  teamId: string;
  defaultFrom: string;
  defaultTo: string;
  maxDays: number;
}) {
  const id = useId();
  const [error, setError] = useState<string | null>(null);
  const base = `/api/teams/${encodeURIComponent(teamId)}`;

  const check = (event: FormEvent<HTMLFormElement>) => {
    const form = new FormData(event.currentTarget);
    const from = String(form.get("from") ?? "");
    const to = String(form.get("to") ?? "");
    const problem =
      from && to && from > to
        ? "The first day must be on or before the last day."
        : from && to && (Date.parse(to) - Date.parse(from)) / DAY_MS + 1 > maxDays
          ? `A digest covers at most ${maxDays} days.`
          : null;
    setError(problem);
    if (problem) event.preventDefault();
  };

  return (
    <div className="export">
      <div className="card export-card">
        <h3>Everything</h3>
        <p className="hint">
          Agents, tasks, work logs and chats, inbox, knowledge and usage in one JSON file. Secrets are left out.
        </p>
        <a className="button" href={`${base}/export`} download>
          Download record (JSON)
        </a>
      </div>
      <form
        className="card export-card"
        method="get"
        action={`${base}/digest`}
        onSubmit={check}
        aria-labelledby={`${id}-digest`}
      >
        <h3 id={`${id}-digest`}>Digest</h3>
        <p className="hint">
          What the team did, day by day (UTC), as Markdown: tasks and results, briefings, questions, alerts, knowledge,
          usage.
        </p>
        <div className="export-dates">
          <div className="field">
            <label htmlFor={`${id}-from`}>From</label>
            <input
              id={`${id}-from`}
              type="date"
              name="from"
              defaultValue={defaultFrom}
              required
              onChange={() => setError(null)}
            />
          </div>
          <div className="field">
            <label htmlFor={`${id}-to`}>To</label>
            <input
              id={`${id}-to`}
              type="date"
              name="to"
              defaultValue={defaultTo}
              required
              onChange={() => setError(null)}
            />
          </div>
        </div>
        {error && <ErrorNote message={error} />}
        <button type="submit" className="button">
          Download digest (Markdown)
        </button>
      </form>
    </div>
  );
}
