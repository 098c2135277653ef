"use client";

import { taskResultText } from "@/lib/views/plain-words";
import Link from "next/link";
import { useState, type FormEvent, type ReactNode } from "react";
import { api, messageOf } from "@/lib/client/api-client";
import { ErrorNote, StatusBadge } from "./ui";
import { useAction } from "./use-action";

/** Flow 7: stop the agent's running work session. */
export function StopSessionButton({ agentId }: { agentId: string }) {
  const { busy, error, clearError, run } = useAction();
  const stop = () => run(() => api(`/api/agents/${agentId}/stop`, { method: "POST" }), { keepBusy: true });
  return (
    <>
      <button type="button" className="button button-danger" onClick={stop} disabled={busy} aria-label="Stop session">
        {busy ? "Stopping…" : "Stop session"}
      </button>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
    </>
  );
}

export function CancelTaskButton({ taskId, title }: { taskId: string; title: string }) {
  const { busy, error, clearError, run } = useAction();
  return (
    <>
      <button
        type="button"
        className="button button-quiet button-danger-text"
        disabled={busy}
        aria-label={`Cancel task “${title}”`}
        onClick={() => run(() => api(`/api/tasks/${taskId}/cancel`, { method: "POST" }))}
      >
        Cancel
      </button>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
    </>
  );
}

/** A task given by hand: the agent is woken and takes it up (source "user"). */
export function AssignTaskForm({ agentId, agentName }: { agentId: string; agentName: string }) {
  const [title, setTitle] = useState("");
  const [description, setDescription] = useState("");
  const { busy, error, clearError, run } = useAction();
  const assign = async (event: FormEvent) => {
    event.preventDefault();
    const body = { title: title.trim(), ...(description.trim() ? { description: description.trim() } : {}) };
    if (await run(() => api(`/api/agents/${agentId}/tasks`, { method: "POST", body }))) {
      setTitle("");
      setDescription("");
    }
  };
  return (
    <form className="card form assign-task" onSubmit={assign} aria-labelledby="assign-task-heading">
      <h3 id="assign-task-heading">Assign a task to {agentName}</h3>
      <label className="field">
        <span>Task title</span>
        <input
          value={title}
          onChange={(event) => setTitle(event.target.value)}
          maxLength={200}
          required
          placeholder="Compare the three newest heat pump models"
        />
      </label>
      <label className="field">
        <span>Task description (optional)</span>
        <textarea
          value={description}
          onChange={(event) => setDescription(event.target.value)}
          rows={3}
          maxLength={20000}
          placeholder="What a good result contains, which sources to prefer."
        />
      </label>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={busy || !title.trim()}>
          {busy ? "Assigning…" : "Assign task"}
        </button>
      </div>
    </form>
  );
}

/** A failed or cancelled task, tried again: a new pending task, the old one kept for the record. */
export function RetryTaskButton({ taskId, title }: { taskId: string; title: string }) {
  const { busy, error, clearError, run } = useAction();
  return (
    <>
      <button
        type="button"
        className="button button-quiet"
        disabled={busy}
        aria-label={`Retry task “${title}”`}
        onClick={() => run(() => api(`/api/tasks/${taskId}/retry`, { method: "POST" }))}
      >
        {busy ? "Retrying…" : "Retry"}
      </button>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
    </>
  );
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);

type TreeNode = {
  id: string;
  parentTaskId: string | null;
  agentId: string;
  agentName: string;
  title: string;
  status: string;
  result: string | null;
  depth: number;
};

/** What a task spawned, who did each part and what came back: loaded when opened, the whole tree at once. */
export function TaskTree({ taskId, title }: { taskId: string; title: string }) {
  const [nodes, setNodes] = useState<TreeNode[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = async (open: boolean) => {
    if (!open) return;
    setError(null);
    try {
      setNodes((await api<{ tasks: TreeNode[] }>(`/api/tasks/${taskId}/tree`)).tasks);
    } catch (cause) {
      setError(messageOf(cause));
    }
  };
  const childrenOf = (parentId: string) => (nodes ?? []).filter((node) => node.parentTaskId === parentId);
  const render = (node: TreeNode): ReactNode => (
    <li key={node.id}>
      <div className="tree-node">
        <StatusBadge status={node.status} /> <span className="task-title">{node.title}</span>{" "}
        <Link href={`/agents/${node.agentId}`} className="meta-link">
          {node.agentName}
        </Link>
      </div>
      {node.result && <p className="tree-result">{clip(taskResultText(node.status, node.result), 400)}</p>}
      {childrenOf(node.id).length > 0 && <ul className="task-tree">{childrenOf(node.id).map(render)}</ul>}
    </li>
  );
  const root = nodes?.find((node) => node.id === taskId);
  return (
    <details className="task-detail" onToggle={(event) => void load(event.currentTarget.open)}>
      <summary aria-label={`Delegation tree of “${title}”`}>Delegation tree</summary>
      {error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
      {nodes === null && !error && <p className="hint">Loading…</p>}
      {root &&
        (childrenOf(root.id).length === 0 ? (
          <p className="hint">Nothing delegated from this task.</p>
        ) : (
          <ul className="task-tree">{childrenOf(root.id).map(render)}</ul>
        ))}
    </details>
  );
}
