"use client";

import { useRouter } from "next/navigation";
import { useState, type FormEvent } from "react";
import { api, messageOf } from "@/lib/client/api-client";
import type { Agent, Team } from "@/lib/db/schema";
import { ErrorNote } from "./ui";

/** Name + mission → instructions drafted by the model (editable) → the team with its lead. */
export function CreateTeamForm() {
  const router = useRouter();
  const [name, setName] = useState("");
  const [mission, setMission] = useState("");
  const [instructions, setInstructions] = useState<string | null>(null);
  const [busy, setBusy] = useState<"draft" | "create" | null>(null);
  const [error, setError] = useState<string | null>(null);
  const ready = name.trim() !== "" && mission.trim() !== "";

  const draft = async () => {
    if (!ready) return setError("Give the team a name and a mission first.");
    setBusy("draft");
    setError(null);
    try {
      const body = await api<{ instructions: string }>("/api/teams/draft", { method: "POST", body: { name, mission } });
      setInstructions(body.instructions);
    } catch (cause) {
      setError(messageOf(cause));
      setInstructions((current) => current ?? "");
    } finally {
      setBusy(null);
    }
  };

  const create = async (event: FormEvent) => {
    event.preventDefault();
    if (!ready) return setError("Give the team a name and a mission first.");
    setBusy("create");
    setError(null);
    try {
      const body = await api<{ team: Team; lead: Agent }>("/api/teams", {
        method: "POST",
        body: { name, mission, ...(instructions?.trim() ? { instructions } : {}) },
      });
      router.push(`/teams/${body.team.id}`);
    } catch (cause) {
      setError(messageOf(cause));
      setBusy(null);
    }
  };

  return (
    <form className="card form" onSubmit={create} aria-labelledby="create-team-heading">
      <h2 id="create-team-heading">New team</h2>
      <label className="field">
        <span>Name</span>
        <input
          value={name}
          onChange={(event) => setName(event.target.value)}
          maxLength={120}
          required
          placeholder="Battery research"
        />
      </label>
      <label className="field">
        <span>Mission</span>
        <textarea
          value={mission}
          onChange={(event) => setMission(event.target.value)}
          maxLength={4000}
          rows={3}
          required
          placeholder="Track solid-state battery breakthroughs and tell me what matters."
        />
      </label>
      {instructions === null ? (
        <p className="hint">
          The lead&apos;s instructions are drafted from the mission; you can edit them before creating the team.
        </p>
      ) : (
        <label className="field">
          <span>Lead instructions</span>
          <textarea
            value={instructions}
            onChange={(event) => setInstructions(event.target.value)}
            rows={9}
            maxLength={20000}
          />
        </label>
      )}
      {error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
      <div className="form-actions">
        <button type="button" className="button" onClick={draft} disabled={busy !== null}>
          {busy === "draft" ? "Drafting…" : instructions === null ? "Draft instructions" : "Redraft"}
        </button>
        <button type="submit" className="button button-primary" disabled={busy !== null}>
          {busy === "create" ? "Creating…" : "Create team"}
        </button>
      </div>
    </form>
  );
}
