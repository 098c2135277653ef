"use client";

import Link from "next/link";
import { useState } from "react";
import { api } from "@/lib/client/api-client";
import type { KnowledgeItemType } from "@/lib/db/schema";
import { Markdown } from "./markdown";
import { ErrorNote, LocalTime } from "./ui";
import { useAction } from "./use-action";

export type KnowledgeRowData = {
  id: string;
  type: KnowledgeItemType;
  content: string;
  confidence: number;
  sourceUrl: string | null;
  createdAt: string;
  updatedAt: string | null;
  /** The team of the agent that reported it first. */
  teamName: string | null;
  /** Why a search found it ("Matched words", "Similar meaning", both); null when the list is not a search. */
  whyFound: string | null;
  /** Every report of it, oldest first: who, the page it came from, and a link to the message. */
  sources: KnowledgeSourceData[];
};

type KnowledgeSourceData = {
  agentId: string;
  agentName: string;
  url: string | null;
  /** The agent's work log at the message (or its chat); null when that conversation is gone. */
  href: string | null;
  inChat: boolean;
  createdAt: string;
};

/** A short name for an item in button labels: its first words. */
function shortName(content: string): string {
  const text = content.replace(/\s+/g, " ").trim();
  return text.length > 48 ? `${text.slice(0, 47)}…` : text;
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname.replace(/^www\./, "");
  } catch {
    return url;
  }
}

/** One knowledge item as a compact row: type, text, where it came from; Edit opens a form in place. */
export function KnowledgeRow({ item, types }: { item: KnowledgeRowData; types: readonly KnowledgeItemType[] }) {
  const [editing, setEditing] = useState(false);
  const { busy, error, clearError, run } = useAction();
  const name = shortName(item.content);

  if (editing) {
    return (
      <li className="knowledge-row knowledge-row-editing">
        <form
          className="knowledge-edit"
          aria-label={`Edit knowledge item “${name}”`}
          onSubmit={async (event) => {
            event.preventDefault();
            const form = new FormData(event.currentTarget);
            const sourceUrl = String(form.get("sourceUrl") ?? "").trim();
            const saved = await run(() =>
              api(`/api/knowledge/${item.id}`, {
                method: "PATCH",
                body: {
                  content: String(form.get("content") ?? ""),
                  type: form.get("type"),
                  sourceUrl: sourceUrl || null,
                },
              }),
            );
            if (saved) setEditing(false);
          }}
        >
          <label className="field">
            <span>Content</span>
            <textarea name="content" defaultValue={item.content} rows={3} required maxLength={10_000} />
          </label>
          <div className="knowledge-edit-row">
            <label className="field">
              <span>Type</span>
              <select name="type" defaultValue={item.type}>
                {types.map((value) => (
                  <option key={value} value={value}>
                    {value}
                  </option>
                ))}
              </select>
            </label>
            <label className="field field-grow">
              <span>Source URL (optional)</span>
              <input
                type="url"
                name="sourceUrl"
                defaultValue={item.sourceUrl ?? ""}
                placeholder="https://…"
                inputMode="url"
              />
            </label>
          </div>
          {error && <ErrorNote message={error} onDismiss={clearError} />}
          <div className="form-actions">
            <button type="submit" className="button button-primary" disabled={busy}>
              Save
            </button>
            <button
              type="button"
              className="button button-quiet"
              onClick={() => {
                clearError();
                setEditing(false);
              }}
            >
              Cancel
            </button>
          </div>
        </form>
      </li>
    );
  }

  const [first] = item.sources;
  const agents = new Map(item.sources.map((source) => [source.agentId, source.agentName]));
  const several = item.sources.length > 1;
  return (
    <li className="knowledge-row">
      <span className={`pill pill-${item.type}`}>{item.type}</span>
      <div className="knowledge-main">
        <Markdown text={item.content} className="knowledge-text" />
        <div className="meta">
          {item.whyFound && <span className="knowledge-why">{item.whyFound} · </span>}
          {several ? (
            <span className="knowledge-reporters">
              Reported by{" "}
              {agents.size === 1 ? `${first!.agentName}, ${item.sources.length} times` : `${agents.size} agents`}
            </span>
          ) : first ? (
            <Link href={`/agents/${first.agentId}`}>{first.agentName}</Link>
          ) : (
            "unknown agent"
          )}
          {item.teamName && ` · ${item.teamName}`} · {Math.round(item.confidence * 100)}% sure ·{" "}
          <LocalTime value={item.createdAt} relative />
          {item.updatedAt && " · edited"}
          {item.sourceUrl && (
            <>
              {" · "}
              <a href={item.sourceUrl} target="_blank" rel="noopener noreferrer" className="knowledge-source">
                {hostOf(item.sourceUrl)}
              </a>
            </>
          )}
          {!several && first?.href && (
            <>
              {" · "}
              <Link href={first.href}>{first.inChat ? "Source chat" : "Source message"}</Link>
            </>
          )}
        </div>
        {several && (
          <ul className="knowledge-sources" aria-label={`Sources of “${name}”`}>
            {item.sources.map((source, index) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: sources come oldest first with no id of their own here, and hold no state
              <li key={index}>
                <Link href={`/agents/${source.agentId}`}>{source.agentName}</Link>
                {source.href && (
                  <>
                    {" · "}
                    <Link
                      href={source.href}
                      aria-label={`${source.inChat ? "Source chat" : "Source message"} of ${source.agentName}`}
                    >
                      {source.inChat ? "Source chat" : "Source message"}
                    </Link>
                  </>
                )}
                {source.url && source.url !== item.sourceUrl && (
                  <>
                    {" · "}
                    <a href={source.url} target="_blank" rel="noopener noreferrer">
                      {hostOf(source.url)}
                    </a>
                  </>
                )}
                {" · "}
                <LocalTime value={source.createdAt} relative />
              </li>
            ))}
          </ul>
        )}
        {error && <ErrorNote message={error} onDismiss={clearError} />}
      </div>
      <div className="knowledge-actions">
        <button
          type="button"
          className="button button-quiet button-small"
          aria-label={`Edit “${name}”`}
          onClick={() => setEditing(true)}
        >
          Edit
        </button>
        <button
          type="button"
          className="button button-quiet button-small button-danger-text"
          disabled={busy}
          aria-label={`Delete “${name}”`}
          onClick={async () => {
            if (!window.confirm("Delete this knowledge item? Agents will no longer see it.")) return;
            await run(() => api(`/api/knowledge/${item.id}`, { method: "DELETE" }), { keepBusy: true });
          }}
        >
          Delete
        </button>
      </div>
    </li>
  );
}
