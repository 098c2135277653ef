"use client";

import { useRouter } from "next/navigation";
import { useRef, useState, type FormEvent } from "react";
import { api } from "@/lib/client/api-client";
import type { TeamContents } from "@/lib/db/queries/teams";
import { plural } from "@/lib/util/plural";
import { ErrorNote } from "./ui";
import { useAction } from "./use-action";

/** The team's name and mission, edited in place. */
export function TeamSettingsForm({
  teamId,
  name: savedName,
  mission: savedMission,
}: {
  teamId: string;
  name: string;
  mission: string;
}) {
  const [name, setName] = useState(savedName);
  const [mission, setMission] = useState(savedMission);
  const [saved, setSaved] = useState(false);
  const { busy, error, clearError, run } = useAction();
  const changed = name.trim() !== savedName || mission.trim() !== savedMission;

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    if (await run(() => api(`/api/teams/${teamId}`, { method: "PATCH", body: { name, mission } }))) setSaved(true);
  };
  return (
    <form className="card form" onSubmit={save} aria-label="Team settings">
      <label className="field">
        <span>Team name</span>
        <input
          value={name}
          onChange={(event) => {
            setName(event.target.value);
            setSaved(false);
          }}
          maxLength={120}
          required
        />
      </label>
      <label className="field">
        <span>Mission</span>
        <textarea
          value={mission}
          onChange={(event) => {
            setMission(event.target.value);
            setSaved(false);
          }}
          rows={3}
          maxLength={4000}
          required
        />
      </label>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <div className="form-actions">
        {saved && !changed && (
          <span className="hint" role="status">
            Saved.
          </span>
        )}
        <button
          type="submit"
          className="button button-primary"
          disabled={busy || !changed || !name.trim() || !mission.trim()}
        >
          {busy ? "Saving…" : "Save team settings"}
        </button>
      </div>
    </form>
  );
}

/** What goes with the team, said before it goes: a modal dialog that names it and the counts. */
export function DeleteTeamButton({
  teamId,
  teamName,
  contents,
}: {
  teamId: string;
  teamName: string;
  contents: TeamContents;
}) {
  const router = useRouter();
  const dialog = useRef<HTMLDialogElement>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const [busy, setBusy] = useState(false);
  const { error, clearError, run } = useAction();

  const close = () => {
    dialog.current?.close();
    opener.current?.focus();
  };
  const remove = async () => {
    setBusy(true);
    if (await run(() => api(`/api/teams/${teamId}`, { method: "DELETE" }), { keepBusy: true })) router.push("/teams");
    else setBusy(false);
  };

  return (
    <>
      <button ref={opener} type="button" className="button button-danger" onClick={() => dialog.current?.showModal()}>
        Delete team
      </button>
      <dialog
        ref={dialog}
        className="dialog"
        aria-labelledby="delete-team-title"
        aria-describedby="delete-team-what"
        onClose={() => opener.current?.focus()}
      >
        <h2 id="delete-team-title">Delete {teamName}?</h2>
        <div id="delete-team-what">
          <p>This cannot be undone. With the team go:</p>
          <ul className="delete-list">
            <li>{plural(contents.agents, "agent")}, their instructions and work logs</li>
            <li>{plural(contents.tasks, "task")}</li>
            <li>{plural(contents.messages, "message")} in chats and work logs</li>
            <li>{plural(contents.knowledgeItems, "knowledge item")}</li>
            <li>{plural(contents.inboxItems, "inbox item")} (briefings, questions and alerts)</li>
          </ul>
          <p className="hint">Its schedule, webhooks, notification channels and MCP servers go too.</p>
        </div>
        {error && <ErrorNote message={error} onDismiss={clearError} />}
        <div className="form-actions">
          {/* Focus starts on the safe choice (showModal focuses the dialog's autofocus element). */}
          {/* biome-ignore lint/a11y/noAutofocus: inside a modal dialog, where autofocus is how HTML says where focus starts */}
          <button type="button" className="button" onClick={close} autoFocus>
            Keep the team
          </button>
          <button type="button" className="button button-danger" onClick={remove} disabled={busy}>
            {busy ? "Deleting…" : `Delete ${teamName}`}
          </button>
        </div>
      </dialog>
    </>
  );
}
