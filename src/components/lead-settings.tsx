"use client";

import { useState, type FormEvent } from "react";
import { choiceOf, cronOf } from "@/lib/domain/schedule-presets";
import { api } from "@/lib/client/api-client";
import { useModelRecheck } from "./model-cards";
import { ModelField, ScheduleFields, schedulePreviewOf } from "./schedule-fields";
import { ErrorNote } from "./ui";
import { useAction } from "./use-action";

function SavedNote({ shown }: { shown: boolean }) {
  return shown ? (
    <span className="hint" role="status">
      Saved.
    </span>
  ) : null;
}

/**
 * The lead's proactive runs, on the Settings tab where a person looks for them (the lead's
 * Edit form has the same fields): a preset or cron, its time zone, and the preview.
 */
export function LeadScheduleForm({
  agentId,
  schedule,
  timeZone: savedZone,
  defaultCron,
  lastRunAt,
}: {
  agentId: string;
  schedule: string | null;
  timeZone: string | null;
  defaultCron: string;
  lastRunAt: string | null;
}) {
  const [choice, setChoice] = useState(() => choiceOf(schedule));
  const [timeZone, setTimeZone] = useState(savedZone ?? "");
  const [saved, setSaved] = useState(false);
  const { busy, error, clearError, run } = useAction();
  const preview = schedulePreviewOf(choice, timeZone, defaultCron);
  const changed = cronOf(choice) !== schedule || (timeZone.trim() || null) !== savedZone;

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    const body = { schedule: cronOf(choice), scheduleTimeZone: timeZone.trim() || null };
    if (await run(() => api(`/api/agents/${agentId}`, { method: "PATCH", body }))) setSaved(true);
  };
  return (
    <form className="card form" onSubmit={save} aria-label="The lead's schedule">
      <ScheduleFields
        idPrefix="lead-schedule"
        choice={choice}
        onChoice={(next) => {
          setChoice(next);
          setSaved(false);
        }}
        timeZone={timeZone}
        onTimeZone={(next) => {
          setTimeZone(next);
          setSaved(false);
        }}
        defaultCron={defaultCron}
        lastRunAt={lastRunAt}
        legendHidden
      />
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <div className="form-actions">
        <SavedNote shown={saved && !changed} />
        <button type="submit" className="button button-primary" disabled={busy || !changed || Boolean(preview.error)}>
          {busy ? "Saving…" : "Save schedule"}
        </button>
      </div>
    </form>
  );
}

/** The model the lead talks to; empty follows the default (LLM_MODEL). Subordinates keep their own on the Agents tab. */
export function LeadModelForm({
  agentId,
  model: savedModel,
  defaultModel,
}: {
  agentId: string;
  model: string | null;
  defaultModel?: string;
}) {
  const [model, setModel] = useState(savedModel ?? "");
  const [saved, setSaved] = useState(false);
  const { busy, error, clearError, run } = useAction();
  const recheck = useModelRecheck();
  const changed = (model.trim() || null) !== savedModel;

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    const next = model.trim() || null;
    if (await run(() => api(`/api/agents/${agentId}`, { method: "PATCH", body: { model: next } }))) {
      setSaved(true);
      recheck(next);
    }
  };
  return (
    <form className="card form" onSubmit={save} aria-label="The lead's model">
      <ModelField
        idPrefix="lead-model"
        value={model}
        onChange={(next) => {
          setModel(next);
          setSaved(false);
        }}
        defaultModel={defaultModel}
      />
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <div className="form-actions">
        <SavedNote shown={saved && !changed} />
        <button type="submit" className="button button-primary" disabled={busy || !changed}>
          {busy ? "Saving…" : "Save model"}
        </button>
      </div>
    </form>
  );
}
