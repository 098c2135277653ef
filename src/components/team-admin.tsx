"use client";

import Link from "next/link";
import { useState, type FormEvent } from "react";
import type { SchedulePreview } from "@/lib/domain/schedule-preview";
import { choiceOf, cronOf } from "@/lib/domain/schedule-presets";
import { api, messageOf } from "@/lib/client/api-client";
import type { Agent, TeamStatus } from "@/lib/db/schema";
import type { AgentActivity } from "@/lib/views/activity";
import { AgentActivityLine } from "./agent-activity";
import { Markdown } from "./markdown";
import { useModelRecheck } from "./model-cards";
import { ModelField, ScheduleFields, schedulePreviewOf } from "./schedule-fields";
import { ErrorNote, LocalTime } from "./ui";
import { useAction } from "./use-action";
import { closeOnEscape, useInlineForm } from "./use-inline-form";

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

/** What a lead's card shows about its schedule, worked out on the server (the editor previews changes itself). */
export type LeadScheduleView = {
  preview: SchedulePreview;
  /** The schedule in force when the agent has none of its own (LEAD_SCHEDULE). */
  defaultCron: string;
  lastRunAt: string | null;
  teamStatus: TeamStatus;
};

type TeamContext = { name: string; mission: string };

/** An agent's card: name, instructions, model and (for a lead) schedule, editable in place; subordinates can be removed. */
export function AgentEditor({
  agent,
  activity,
  removable = false,
  team,
  schedule,
}: {
  agent: Agent;
  activity: AgentActivity | undefined;
  removable?: boolean;
  team: TeamContext;
  schedule?: LeadScheduleView;
}) {
  // Saved or cancelled, the focus goes back to Edit.
  const edit = useInlineForm<"edit">();
  const { busy, error, clearError, run } = useAction();

  const remove = async () => {
    if (!window.confirm(`Remove ${agent.name}? Its tasks, work log and knowledge go with it.`)) return;
    await run(() => api(`/api/agents/${agent.id}`, { method: "DELETE" }), { keepBusy: true });
  };

  if (edit.open === "edit") return <AgentEditForm agent={agent} team={team} schedule={schedule} onDone={edit.cancel} />;
  return (
    <article className="card agent-card" aria-label={agent.name}>
      <div className="card-head">
        <Link href={`/agents/${agent.id}`} className="card-title">
          {agent.name}
        </Link>
      </div>
      {activity ? <AgentActivityLine activity={activity} /> : <span className="pill">idle</span>}
      <p className="meta">Model: {agent.model ?? "the default model"}</p>
      {schedule && <ScheduleSummary schedule={schedule} settingsHref={`/teams/${agent.teamId}/settings#schedule`} />}
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
          <Link href={`/agents/${agent.id}`} className="meta-link" aria-label={`Tasks and work log of ${agent.name}`}>
            Tasks and work log
          </Link>
        </span>
        <span className="card-actions">
          <button
            ref={edit.opener("edit")}
            type="button"
            className="button button-quiet"
            onClick={() => edit.show("edit")}
            aria-label={`Edit ${agent.name}`}
          >
            Edit
          </button>
          {removable && (
            <button
              type="button"
              className="button button-quiet button-danger-text"
              onClick={remove}
              disabled={busy}
              aria-label={`Remove ${agent.name}`}
            >
              Remove
            </button>
          )}
        </span>
      </div>
    </article>
  );
}

function ScheduleSummary({ schedule, settingsHref }: { schedule: LeadScheduleView; settingsHref: string }) {
  const { preview, lastRunAt, teamStatus } = schedule;
  return (
    // biome-ignore lint/a11y/useSemanticElements: a labelled group of lines of text, not of form controls (a fieldset's job)
    <div className="schedule-summary" role="group" aria-label="Schedule">
      <p className="meta">
        Scheduled runs:{" "}
        <strong>{teamStatus === "paused" ? `paused (${preview.text} when resumed)` : preview.text}</strong>
      </p>
      {teamStatus === "active" && preview.nextRuns.length > 0 && (
        <p className="meta">Next: {preview.nextRuns.join(" · ")}</p>
      )}
      <p className="meta">
        Last run: {lastRunAt ? <LocalTime value={lastRunAt} /> : "none yet"} ·{" "}
        <Link href={settingsHref}>Change the schedule</Link>
      </p>
    </div>
  );
}

function AgentEditForm({
  agent,
  team,
  schedule,
  onDone,
}: {
  agent: Agent;
  team: TeamContext;
  schedule?: LeadScheduleView;
  onDone: () => void;
}) {
  const [name, setName] = useState(agent.name);
  const [instructions, setInstructions] = useState(agent.instructions);
  const [model, setModel] = useState(agent.model ?? "");
  const [choice, setChoice] = useState(() => choiceOf(agent.schedule));
  const [timeZone, setTimeZone] = useState(agent.scheduleTimeZone ?? "");
  const [request, setRequest] = useState("");
  const [drafting, setDrafting] = useState(false);
  const [draftError, setDraftError] = useState<string | null>(null);
  const { busy, error, clearError, run } = useAction();
  const recheck = useModelRecheck();
  const prefix = `agent-${agent.id}`;
  const preview = schedule ? schedulePreviewOf(choice, timeZone, schedule.defaultCron) : null;

  const save = async (event: FormEvent) => {
    event.preventDefault();
    const body: Record<string, unknown> = { name, instructions, model: model.trim() || null };
    if (schedule) Object.assign(body, { schedule: cronOf(choice), scheduleTimeZone: timeZone.trim() || null });
    if (!(await run(() => api(`/api/agents/${agent.id}`, { method: "PATCH", body })))) return;
    // A new model is checked in the background, so its card on Settings says how it behaves.
    if ((model.trim() || null) !== agent.model) recheck(model.trim() || null);
    onDone();
  };
  const improve = async () => {
    setDrafting(true);
    setDraftError(null);
    try {
      const draft = await api<{ instructions: string }>("/api/teams/draft", {
        method: "POST",
        body: { name: team.name, mission: team.mission, current: instructions, request: request.trim() || undefined },
      });
      setInstructions(draft.instructions);
    } catch (cause) {
      setDraftError(messageOf(cause));
    } finally {
      setDrafting(false);
    }
  };

  return (
    <form className="card form" onSubmit={save} onKeyDown={closeOnEscape(onDone)} aria-label={`Edit ${agent.name}`}>
      <label className="field">
        <span>Name</span>
        <input value={name} onChange={(event) => setName(event.target.value)} maxLength={120} required />
      </label>
      <label className="field">
        <span>Instructions</span>
        <textarea
          value={instructions}
          onChange={(event) => setInstructions(event.target.value)}
          rows={8}
          maxLength={20000}
        />
      </label>
      <div className="improve-row">
        <label className="field improve-request">
          <span>What should change? (optional)</span>
          <input
            value={request}
            onChange={(event) => setRequest(event.target.value)}
            maxLength={2000}
            placeholder="Brief me only when something changes"
          />
        </label>
        <button type="button" className="button" onClick={improve} disabled={drafting || busy}>
          {drafting ? "Drafting…" : "Improve with the model"}
        </button>
      </div>
      <p className="hint under-field" role="status">
        {drafting
          ? "The model is revising the instructions above."
          : "The model's revision replaces the text above; read it, then save or cancel."}
      </p>
      {draftError && <ErrorNote message={draftError} onDismiss={() => setDraftError(null)} />}
      <ModelField idPrefix={prefix} value={model} onChange={setModel} />
      {schedule && (
        <ScheduleFields
          idPrefix={prefix}
          choice={choice}
          onChoice={setChoice}
          timeZone={timeZone}
          onTimeZone={setTimeZone}
          defaultCron={schedule.defaultCron}
          lastRunAt={schedule.lastRunAt}
        />
      )}
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <div className="form-actions">
        <button type="button" className="button button-quiet" onClick={onDone}>
          Cancel
        </button>
        <button type="submit" className="button button-primary" disabled={busy || drafting || Boolean(preview?.error)}>
          {busy ? "Saving…" : "Save"}
        </button>
      </div>
    </form>
  );
}

export function AddSubordinateForm({ teamId, leadId }: { teamId: string; leadId: string }) {
  const [name, setName] = useState("");
  const [instructions, setInstructions] = useState("");
  const { busy, error, clearError, run } = useAction();
  const add = async (event: FormEvent) => {
    event.preventDefault();
    if (
      await run(() =>
        api(`/api/teams/${teamId}/agents`, { method: "POST", body: { name, instructions, parentAgentId: leadId } }),
      )
    ) {
      setName("");
      setInstructions("");
    }
  };
  return (
    <form className="card form add-agent" onSubmit={add} aria-labelledby="add-subordinate-heading">
      <h3 id="add-subordinate-heading">Add a subordinate</h3>
      <label className="field">
        <span>Subordinate name</span>
        <input
          value={name}
          onChange={(event) => setName(event.target.value)}
          maxLength={120}
          required
          placeholder="Scout"
        />
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
