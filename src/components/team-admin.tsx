"use client";

import Link from "next/link";
import { useEffect, useMemo, useState, type FormEvent } from "react";
import { previewSchedule, type SchedulePreview } from "@/lib/agents/schedule-preview";
import { api, messageOf } from "@/lib/api-client";
import type { Agent, TeamStatus } from "@/lib/db/schema";
import type { AgentActivity } from "@/lib/activity";
import { plural } from "@/lib/plural";
import { AgentActivityLine } from "./agent-activity";
import { Markdown } from "./markdown";
import { ErrorNote, LocalTime } from "./ui";
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
  const [editing, setEditing] = useState(false);
  const { busy, error, clearError, run } = useAction();

  const remove = async () => {
    if (!window.confirm(`Remove ${agent.name}? Its tasks, work log and knowledge go with it.`)) return;
    await run(() => api(`/api/agents/${agent.id}`, { method: "DELETE" }), { keepBusy: true });
  };

  if (editing) return <AgentEditForm agent={agent} team={team} schedule={schedule} onDone={() => setEditing(false)} />;
  return (
    <article className="card agent-card" aria-label={agent.name}>
      <div className="card-head">
        <Link href={`/agents/${agent.id}`} className="card-title">
          {agent.name}
        </Link>
      </div>
      {activity ? <AgentActivityLine activity={activity} /> : <span className="pill">idle</span>}
      <p className="meta">Model: {agent.model ?? "the default model"}</p>
      {schedule && <ScheduleSummary schedule={schedule} />}
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

function ScheduleSummary({ schedule }: { schedule: LeadScheduleView }) {
  const { preview, lastRunAt, teamStatus } = schedule;
  return (
    <div className="schedule-summary" role="group" aria-label="Schedule">
      <p className="meta">
        Scheduled runs: <strong>{teamStatus === "paused" ? `paused (${preview.text} when resumed)` : preview.text}</strong>
      </p>
      {teamStatus === "active" && preview.nextRuns.length > 0 && <p className="meta">Next: {preview.nextRuns.join(" · ")}</p>}
      <p className="meta">Last run: {lastRunAt ? <LocalTime value={lastRunAt} /> : "none yet"}</p>
    </div>
  );
}

/** The model ids the configured server lists, fetched when an editor opens; free text stays possible either way. */
function useModelList() {
  const [list, setList] = useState<{ models: string[]; source: "server" | "none"; error?: string } | null>(null);
  useEffect(() => {
    let live = true;
    api<{ models: string[]; source: "server" | "none"; error?: string }>("/api/models").then(
      (answer) => live && setList(answer),
      () => live && setList({ models: [], source: "none", error: "Could not list the server's models. Type a model name instead." }),
    );
    return () => {
      live = false;
    };
  }, []);
  return list;
}

function timeZoneNames(): string[] {
  return typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
}

function AgentEditForm({ agent, team, schedule, onDone }: { agent: Agent; team: TeamContext; schedule?: LeadScheduleView; onDone: () => void }) {
  const [name, setName] = useState(agent.name);
  const [instructions, setInstructions] = useState(agent.instructions);
  const [model, setModel] = useState(agent.model ?? "");
  const [cron, setCron] = useState(agent.schedule ?? "");
  const [timeZone, setTimeZone] = useState(agent.scheduleTimeZone ?? "");
  const [request, setRequest] = useState("");
  const [drafting, setDrafting] = useState(false);
  const [draftError, setDraftError] = useState<string | null>(null);
  const models = useModelList();
  const { busy, error, clearError, run } = useAction();
  const prefix = `agent-${agent.id}`;
  const preview = useMemo(
    () => (schedule ? previewSchedule(cron.trim() || schedule.defaultCron, timeZone.trim() || null) : null),
    [schedule, cron, timeZone],
  );

  const save = async (event: FormEvent) => {
    event.preventDefault();
    const body: Record<string, unknown> = { name, instructions, model: model.trim() || null };
    if (schedule) Object.assign(body, { schedule: cron.trim() || null, scheduleTimeZone: timeZone.trim() || null });
    if (await run(() => api(`/api/agents/${agent.id}`, { method: "PATCH", body }))) onDone();
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
    <form className="card form" onSubmit={save} aria-label={`Edit ${agent.name}`}>
      <label className="field">
        <span>Name</span>
        <input value={name} onChange={(event) => setName(event.target.value)} maxLength={120} required />
      </label>
      <label className="field">
        <span>Instructions</span>
        <textarea value={instructions} onChange={(event) => setInstructions(event.target.value)} rows={8} maxLength={20000} />
      </label>
      <div className="improve-row">
        <label className="field improve-request">
          <span>What should change? (optional)</span>
          <input value={request} onChange={(event) => setRequest(event.target.value)} maxLength={2000} placeholder="Brief me only when something changes" />
        </label>
        <button type="button" className="button" onClick={improve} disabled={drafting || busy}>
          {drafting ? "Drafting…" : "Improve with the model"}
        </button>
      </div>
      <p className="hint under-field" role="status">
        {drafting ? "The model is revising the instructions above." : "The model's revision replaces the text above; read it, then save or cancel."}
      </p>
      {draftError && <ErrorNote message={draftError} onDismiss={() => setDraftError(null)} />}
      <label className="field">
        <span>Model</span>
        <input
          value={model}
          onChange={(event) => setModel(event.target.value)}
          list={`${prefix}-models`}
          maxLength={200}
          placeholder="Empty: the default model"
          aria-describedby={`${prefix}-models-hint`}
        />
        <datalist id={`${prefix}-models`}>
          {models?.models.map((id) => <option key={id} value={id} />)}
        </datalist>
      </label>
      <p className="hint under-field" id={`${prefix}-models-hint`}>
        {models === null
          ? "Asking the model server what it offers…"
          : models.error ?? (models.source === "server" ? `${plural(models.models.length, "model")} on the configured server; or type any name.` : "Offline model: there is no server to choose from.")}
      </p>
      {schedule && preview && (
        <fieldset className="schedule-fields">
          <legend>Schedule</legend>
          <div className="schedule-row">
            <label className="field">
              <span>Cron</span>
              <input value={cron} onChange={(event) => setCron(event.target.value)} maxLength={120} placeholder={`Empty: ${schedule.defaultCron}`} spellCheck={false} />
            </label>
            <label className="field">
              <span>Time zone</span>
              <input value={timeZone} onChange={(event) => setTimeZone(event.target.value)} list={`${prefix}-zones`} maxLength={64} placeholder="Empty: UTC" spellCheck={false} />
              <datalist id={`${prefix}-zones`}>
                {timeZoneNames().map((zone) => (
                  <option key={zone} value={zone} />
                ))}
              </datalist>
            </label>
          </div>
          <div className="schedule-preview" role="status" aria-label="Schedule preview">
            {preview.error ? (
              <p className="field-error">{preview.error}</p>
            ) : (
              <>
                <p>
                  Runs <strong>{preview.text}</strong>.
                </p>
                {preview.nextRuns.length > 0 && (
                  <p className="meta">
                    Next three: {preview.nextRuns.join(" · ")}
                  </p>
                )}
              </>
            )}
            <p className="meta">Last run: {schedule.lastRunAt ? <LocalTime value={schedule.lastRunAt} /> : "none yet"}</p>
          </div>
        </fieldset>
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
