"use client";

import type { ReactNode } from "react";

/** A time in the reader's own zone and locale (rendered on the client, so no mismatch matters). */
export function LocalTime({ value, relative = false }: { value: string | Date; relative?: boolean }) {
  const date = new Date(value);
  const text = relative
    ? relativeTime(date)
    : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  return (
    <time dateTime={date.toISOString()} title={date.toLocaleString()} suppressHydrationWarning>
      {text}
    </time>
  );
}

function relativeTime(date: Date): string {
  const seconds = Math.round((date.getTime() - Date.now()) / 1000);
  const format = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  const abs = Math.abs(seconds);
  if (abs < 45) return "just now";
  if (abs < 3600) return format.format(Math.round(seconds / 60), "minute");
  if (abs < 86_400) return format.format(Math.round(seconds / 3600), "hour");
  if (abs < 7 * 86_400) return format.format(Math.round(seconds / 86_400), "day");
  return date.toLocaleDateString(undefined, { dateStyle: "medium" });
}

export function StatusBadge({ status }: { status: string }) {
  return <span className={`status status-${status.replace(/_/g, "-")}`}>{status.replace(/_/g, " ")}</span>;
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children && <div className="empty-body">{children}</div>}
    </div>
  );
}

/** An error said once, with what the person can do about it (Retry, say) and Dismiss. */
export function ErrorNote({
  message,
  onDismiss,
  actions = [],
}: {
  message: string;
  onDismiss?: () => void;
  actions?: { label: string; onClick: () => void }[];
}) {
  return (
    <div className="error-note" role="alert">
      <span>{message}</span>
      {(actions.length > 0 || onDismiss) && (
        <span className="error-note-actions">
          {actions.map((action) => (
            <button key={action.label} type="button" className="link-button" onClick={action.onClick}>
              {action.label}
            </button>
          ))}
          {onDismiss && (
            <button type="button" className="link-button" onClick={onDismiss}>
              Dismiss
            </button>
          )}
        </span>
      )}
    </div>
  );
}
