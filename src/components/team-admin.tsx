"use client";

import Link from "next/link";
import { useState, type FormEvent } from "react";
import { api } from "@/lib/api-client";
import type { Agent, TeamStatus } from "@/lib/db/schema";
import type { AgentActivity } from "@/lib/activity";
import { AgentActivityLine } from "./agent-activity";
import { Markdown } from "./markdown";
import { ErrorNote } from "./ui";
import { useAction } from "./use-action";

export function TeamStatusButton({ teamId, status }: { teamId: string; status: TeamStatus }) {
  const { busy, error, clearError, run } = useAction();
  const next: TeamStatus = status === "active" ? "paused" : "active";
  const toggle = () => run(() => api(`/api/teams/${teamId}`, { method: "PATCH", body: { status: next } }));
  return (
    <>
      <button type="button" className="button" onClick={toggle} disabled={busy}>
        {status === "active" ? "Pause team" : "Resume team"}
      </button>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
    </>
  );
}

/** An agent's card: name and instructions, editable in place; subordinates can be removed. */
export function AgentEditor({ agent, activity, removable = false }: { agent: Agent; activity: AgentActivity | undefined; removable?: boolean }) {
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(agent.name);
  const [instructions, setInstructions] = useState(agent.instructions);
  const { busy, error, clearError, run } = useAction();

  const save = async (event: FormEvent) => {
    event.preventDefault();
    if (await run(() => api(`/api/agents/${agent.id}`, { method: "PATCH", body: { name, instructions } }))) setEditing(false);
  };
  const remove = async () => {
    if (!window.confirm(`Remove ${agent.name}? Its tasks, work log and knowledge go with it.`)) return;
    await run(() => api(`/api/agents/${agent.id}`, { method: "DELETE" }), { keepBusy: true });
  };

  if (editing) {
    return (
      <form className="card form" onSubmit={save} aria-label={`Edit ${agent.name}`}>
        <label className="field">
          <span>Name</span>
          <input value={name} onChange={(event) => setName(event.target.value)} maxLength={120} required />
        </label>
        <label className="field">
          <span>Instructions</span>
          <textarea value={instructions} onChange={(event) => setInstructions(event.target.value)} rows={8} maxLength={20000} />
        </label>
        {error && <ErrorNote message={error} onDismiss={clearError} />}
        <div className="form-actions">
          <button
            type="button"
            className="button button-quiet"
            onClick={() => {
              setEditing(false);
              setName(agent.name);
              setInstructions(agent.instructions);
            }}
          >
            Cancel
          </button>
          <button type="submit" className="button button-primary" disabled={busy}>
            {busy ? "Saving…" : "Save"}
          </button>
        </div>
      </form>
    );
  }
  return (
    <article className="card agent-card" aria-label={agent.name}>
      <div className="card-head">
        <Link href={`/agents/${agent.id}`} className="card-title">
          {agent.name}
        </Link>
      </div>
      {activity ? <AgentActivityLine activity={activity} /> : <span className="pill">idle</span>}
      {agent.instructions ? (
        <details className="instructions">
          <summary>Instructions</summary>
          <Markdown text={agent.instructions} />
        </details>
      ) : (
        <p className="hint">No instructions.</p>
      )}
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <div className="card-foot">
        <span className="card-links">
          <Link href={`/agents/${agent.id}/chat`} className="meta-link" aria-label={`Chat with ${agent.name}`}>
            Chat
          </Link>
          <Link href={`/agents/${agent.id}`} className="meta-link">
            Tasks and work log
          </Link>
        </span>
        <span className="card-actions">
          <button type="button" className="button button-quiet" onClick={() => setEditing(true)} aria-label={`Edit ${agent.name}`}>
            Edit
          </button>
          {removable && (
            <button type="button" className="button button-quiet button-danger-text" onClick={remove} disabled={busy} aria-label={`Remove ${agent.name}`}>
              Remove
            </button>
          )}
        </span>
      </div>
    </article>
  );
}

export function AddSubordinateForm({ teamId, leadId }: { teamId: string; leadId: string }) {
  const [name, setName] = useState("");
  const [instructions, setInstructions] = useState("");
  const { busy, error, clearError, run } = useAction();
  const add = async (event: FormEvent) => {
    event.preventDefault();
    if (await run(() => api(`/api/teams/${teamId}/agents`, { method: "POST", body: { name, instructions, parentAgentId: leadId } }))) {
      setName("");
      setInstructions("");
    }
  };
  return (
    <form className="card form add-agent" onSubmit={add} aria-labelledby="add-subordinate-heading">
      <h3 id="add-subordinate-heading">Add a subordinate</h3>
      <label className="field">
        <span>Subordinate name</span>
        <input value={name} onChange={(event) => setName(event.target.value)} maxLength={120} required placeholder="Scout" />
      </label>
      <label className="field">
        <span>Subordinate instructions</span>
        <textarea
          value={instructions}
          onChange={(event) => setInstructions(event.target.value)}
          rows={3}
          maxLength={20000}
          placeholder="You search the web for recent, reliable sources and report the findings with links."
        />
      </label>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={busy || !name.trim()}>
          {busy ? "Adding…" : "Add subordinate"}
        </button>
      </div>
    </form>
  );
}
