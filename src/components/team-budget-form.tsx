"use client";

import { useId, useState, type FormEvent } from "react";
import { api } from "@/lib/client/api-client";
import { formatTokens } from "@/lib/usage/format";
import { ErrorNote } from "./ui";
import { useAction } from "./use-action";

/** A number field's text as the API wants it: empty → null (the default / no cap). */
function parseBudget(text: string): number | null {
  return text.trim() === "" ? null : Number(text);
}

/**
 * The team's daily budgets (PATCH /api/teams/:id): tokens (empty: the default,
 * TEAM_DAILY_TOKEN_BUDGET) and US dollars (empty: no cost cap). The server says what is wrong.
 */
export function TeamBudgetForm({
  teamId,
  dailyTokenBudget,
  dailyCostBudgetUsd,
  defaultTokenBudget,
}: {
  teamId: string;
  dailyTokenBudget: number | null;
  dailyCostBudgetUsd: number | null;
  defaultTokenBudget: number;
}) {
  const id = useId();
  const [tokens, setTokens] = useState(dailyTokenBudget === null ? "" : String(dailyTokenBudget));
  const [cost, setCost] = useState(dailyCostBudgetUsd === null ? "" : String(dailyCostBudgetUsd));
  const [saved, setSaved] = useState(false);
  const { busy, error, clearError, run } = useAction();

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    const body = { dailyTokenBudget: parseBudget(tokens), dailyCostBudgetUsd: parseBudget(cost) };
    if (await run(() => api(`/api/teams/${teamId}`, { method: "PATCH", body }))) setSaved(true);
  };

  return (
    <form className="card form budget-form" onSubmit={save} aria-label="Daily budgets">
      <h3>Daily budgets</h3>
      <div className="budget-fields">
        <div className="field">
          <label htmlFor={`${id}-tokens`}>Daily token budget</label>
          <input
            id={`${id}-tokens`}
            type="number"
            inputMode="numeric"
            min={1}
            step={1}
            placeholder={`${formatTokens(defaultTokenBudget)} (default)`}
            value={tokens}
            onChange={(event) => setTokens(event.target.value)}
            aria-describedby={`${id}-tokens-hint`}
          />
          <span id={`${id}-tokens-hint`} className="hint">
            Input + output tokens per UTC day. Empty: the default, {formatTokens(defaultTokenBudget)}{" "}
            (TEAM_DAILY_TOKEN_BUDGET).
          </span>
        </div>
        <div className="field">
          <label htmlFor={`${id}-cost`}>Daily cost budget (US$)</label>
          <input
            id={`${id}-cost`}
            type="number"
            inputMode="decimal"
            min={0.01}
            step={0.01}
            placeholder="No cost cap"
            value={cost}
            onChange={(event) => setCost(event.target.value)}
            aria-describedby={`${id}-cost-hint`}
          />
          <span id={`${id}-cost-hint`} className="hint">
            Priced with the price table on the Usage page. Empty: no cost cap.
          </span>
        </div>
      </div>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <div className="form-actions">
        <span className="hint" aria-live="polite">
          {saved && !busy ? "Budgets saved: they apply from the next model call." : ""}
        </span>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? "Saving…" : "Save budgets"}
        </button>
      </div>
    </form>
  );
}
