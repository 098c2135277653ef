"use client";

import { useEffect, useState } from "react";
import { previewSchedule } from "@/lib/domain/schedule-preview";
import { cronOf, WEEKDAY_NAMES, type ScheduleChoice, type ScheduleKind } from "@/lib/domain/schedule-presets";
import { api } from "@/lib/client/api-client";
import { LocalTime } from "./ui";

const KIND_LABELS: Record<ScheduleKind, string> = {
  default: "The default schedule",
  hourly: "Every hour",
  daily: "Every day",
  weekdays: "Weekdays (Monday to Friday)",
  weekly: "Once a week",
  advanced: "Advanced (cron)",
};

function timeZoneNames(): string[] {
  return typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
}

/** The schedule a choice and zone amount to, read aloud; `defaultCron` stands in for the default. */
export function schedulePreviewOf(choice: ScheduleChoice, timeZone: string, defaultCron: string) {
  return previewSchedule(cronOf(choice) ?? defaultCron, timeZone.trim() || null);
}

/**
 * A lead's schedule as presets (every hour, every day at, weekdays at, once a week) with raw
 * cron as the advanced choice, its time zone, and the preview that reads it aloud with the next
 * runs. Controlled: the form around it saves `cronOf(choice)` and the zone.
 */
export function ScheduleFields({
  idPrefix,
  choice,
  onChoice,
  timeZone,
  onTimeZone,
  defaultCron,
  lastRunAt,
  legendHidden = false,
}: {
  idPrefix: string;
  /** Where a heading above already says "Schedule", the legend is for screen readers only. */
  legendHidden?: boolean;
  choice: ScheduleChoice;
  onChoice: (choice: ScheduleChoice) => void;
  timeZone: string;
  onTimeZone: (timeZone: string) => void;
  defaultCron: string;
  lastRunAt: string | null;
}) {
  const preview = schedulePreviewOf(choice, timeZone, defaultCron);
  const set = (change: Partial<ScheduleChoice>) => onChoice({ ...choice, ...change });
  const atTime = choice.kind === "daily" || choice.kind === "weekdays" || choice.kind === "weekly";
  return (
    <fieldset className="schedule-fields">
      <legend className={legendHidden ? "visually-hidden" : undefined}>Schedule</legend>
      <div className="schedule-row">
        {/* Labelled by id, not by wrapping: a wrapping label would also read out every option. */}
        <div className="field">
          <label htmlFor={`${idPrefix}-runs`}>Runs</label>
          <select
            id={`${idPrefix}-runs`}
            value={choice.kind}
            onChange={(event) => {
              const kind = event.target.value as ScheduleKind;
              // Advanced starts from the cron in force, so a person edits what runs rather than a blank.
              set(
                kind === "advanced" && !choice.cron.trim() ? { kind, cron: cronOf(choice) ?? defaultCron } : { kind },
              );
            }}
          >
            {/* The default's own words are in the preview below: in the option they were cut off. */}
            {Object.entries(KIND_LABELS).map(([kind, label]) => (
              <option key={kind} value={kind}>
                {label}
              </option>
            ))}
          </select>
        </div>
        {choice.kind === "hourly" && (
          <label className="field">
            <span>Minutes past the hour</span>
            <input
              type="number"
              min={0}
              max={59}
              value={choice.minute}
              onChange={(event) =>
                set({ minute: Math.min(59, Math.max(0, Math.trunc(Number(event.target.value) || 0))) })
              }
            />
          </label>
        )}
        {choice.kind === "weekly" && (
          <div className="field">
            <label htmlFor={`${idPrefix}-day`}>Day</label>
            <select
              id={`${idPrefix}-day`}
              value={choice.day}
              onChange={(event) => set({ day: Number(event.target.value) })}
            >
              {/* Monday first, as a week reads; cron counts from Sunday. */}
              {[1, 2, 3, 4, 5, 6, 0].map((day) => (
                <option key={day} value={day}>
                  {WEEKDAY_NAMES[day]}
                </option>
              ))}
            </select>
          </div>
        )}
        {atTime && (
          <label className="field">
            <span>Time</span>
            <input type="time" value={choice.time} onChange={(event) => set({ time: event.target.value })} required />
          </label>
        )}
        {choice.kind === "advanced" && (
          <label className="field">
            <span>Cron</span>
            <input
              value={choice.cron}
              onChange={(event) => set({ cron: event.target.value })}
              maxLength={120}
              placeholder={defaultCron}
              spellCheck={false}
              aria-describedby={`${idPrefix}-cron-hint`}
            />
          </label>
        )}
        <label className="field">
          <span>Time zone</span>
          <input
            value={timeZone}
            onChange={(event) => onTimeZone(event.target.value)}
            list={`${idPrefix}-zones`}
            maxLength={64}
            placeholder="Empty: UTC"
            spellCheck={false}
          />
          <datalist id={`${idPrefix}-zones`}>
            {timeZoneNames().map((zone) => (
              <option key={zone} value={zone} />
            ))}
          </datalist>
        </label>
      </div>
      {choice.kind === "advanced" && (
        <p className="hint under-field" id={`${idPrefix}-cron-hint`}>
          Five fields: minute, hour, day of the month, month, day of the week (0 is Sunday).
        </p>
      )}
      <div className="schedule-preview" role="status" aria-label="Schedule preview">
        {preview.error ? (
          <p className="field-error">{preview.error}</p>
        ) : (
          <>
            <p>
              Runs <strong>{preview.text}</strong>.
            </p>
            {preview.nextRuns.length > 0 && <p className="meta">Next three: {preview.nextRuns.join(" · ")}</p>}
          </>
        )}
        <p className="meta">Last run: {lastRunAt ? <LocalTime value={lastRunAt} /> : "none yet"}</p>
      </div>
    </fieldset>
  );
}

export type ModelList = { models: string[]; source: "server" | "none"; error?: string };

/** The model ids the configured server lists, fetched when a form opens; free text stays possible either way. */
function useModelList(): ModelList | null {
  const [list, setList] = useState<ModelList | null>(null);
  useEffect(() => {
    let live = true;
    api<ModelList>("/api/models").then(
      (answer) => live && setList(answer),
      () =>
        live &&
        setList({
          models: [],
          source: "none",
          error: "Could not list the server's models. Type a model name instead.",
        }),
    );
    return () => {
      live = false;
    };
  }, []);
  return list;
}

const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

/** An agent's model: free text with the server's list to pick from; empty is the default model. */
export function ModelField({
  idPrefix,
  value,
  onChange,
  defaultModel,
}: {
  idPrefix: string;
  value: string;
  onChange: (value: string) => void;
  defaultModel?: string;
}) {
  const models = useModelList();
  return (
    <>
      <label className="field">
        <span>Model</span>
        <input
          value={value}
          onChange={(event) => onChange(event.target.value)}
          list={`${idPrefix}-models`}
          maxLength={200}
          placeholder="Empty: the default model"
          aria-describedby={`${idPrefix}-models-hint`}
          spellCheck={false}
        />
        <datalist id={`${idPrefix}-models`}>
          {models?.models.map((id) => (
            <option key={id} value={id} />
          ))}
        </datalist>
      </label>
      <p className="hint under-field" id={`${idPrefix}-models-hint`}>
        {defaultModel && `The default is ${defaultModel}. `}
        {models === null
          ? "Asking the model server what it offers…"
          : (models.error ??
            (models.source === "server"
              ? `${plural(models.models.length, "model")} on the configured server; or type any name.`
              : "Offline model: there is no server to choose from."))}
      </p>
    </>
  );
}
