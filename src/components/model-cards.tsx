"use client";

import { useRouter } from "next/navigation";
import { useCallback } from "react";
import { api } from "@/lib/client/api-client";
import type { ModelCard, ModelCardLine } from "@/lib/views/model-card";
import { ErrorNote, LocalTime } from "./ui";
import { useAction } from "./use-action";

/** One model the team uses: its card, and who uses it. */
export type ModelInUseCard = { card: ModelCard; agents: string[] };

const MARK: Record<ModelCardLine["tone"], string> = { ok: "✓", note: "·", warn: "!" };

/** A card as the page read it; after a check the page is read again (useAction), so the card shows the new profile. */
function ModelCardView({ card: current, agents }: ModelInUseCard) {
  const { busy, error, clearError, run } = useAction();
  const check = () =>
    run(() => api<{ card: ModelCard }>("/api/models/check", { method: "POST", body: { model: current.model } }));
  return (
    <article className={`card model-card model-card-${current.state}`} aria-label={`Model ${current.model}`}>
      <header className="model-card-head">
        <h3 className="model-card-name">{current.model}</h3>
        {agents.length > 0 && <p className="hint model-card-agents">Used by {agents.join(", ")}</p>}
      </header>
      <p className="model-card-summary">{current.summary}</p>
      {current.lines.length > 0 && (
        <ul className="model-card-lines">
          {current.lines.map((line) => (
            <li key={line.text} className={`model-card-line model-card-${line.tone}`}>
              <span className="model-card-mark" aria-hidden="true">
                {MARK[line.tone]}
              </span>
              {line.text}
            </li>
          ))}
        </ul>
      )}
      {current.state !== "offline" && (
        <div className="form-actions model-card-actions">
          {current.checkedAt && (
            <span className="hint">
              Checked <LocalTime value={current.checkedAt} relative />
            </span>
          )}
          <button type="button" className="button" onClick={() => void check()} disabled={busy}>
            {busy ? "Checking…" : current.state === "unchecked" ? "Check this model" : "Check again"}
          </button>
        </div>
      )}
      {error && <ErrorNote message={`Could not check the model: ${error}`} onDismiss={clearError} />}
    </article>
  );
}

/**
 * The compatibility cards of the models a team uses (Settings, Model): what each was seen to do
 * when checked, and what Cadre does about it, with a button to check it (again). A model not
 * checked on this server yet — a new override, another server — says so and offers the check.
 */
export function ModelCards({ models }: { models: ModelInUseCard[] }) {
  return (
    <div className="model-cards">
      {models.map((model) => (
        <ModelCardView key={model.card.model} {...model} />
      ))}
    </div>
  );
}

/**
 * After an agent's model was changed: that model checked on the configured server in the
 * background (its profile replaced), then the page read again so its card shows what was seen.
 * `model` null: the default model. A failed check shows on the card; nothing else waits for it.
 */
export function useModelRecheck(): (model: string | null) => void {
  const router = useRouter();
  return useCallback(
    (model: string | null) => {
      api("/api/models/check", { method: "POST", body: model ? { model } : {} })
        .then(() => router.refresh())
        .catch(() => {});
    },
    [router],
  );
}
