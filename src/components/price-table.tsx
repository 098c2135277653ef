"use client";

import { useId, useState, type FormEvent } from "react";
import { api } from "@/lib/client/api-client";
import type { TokenPrice, PriceListEntry } from "@/lib/usage/prices";
import { ErrorNote } from "./ui";
import { useAction } from "./use-action";
import { useInlineForm } from "./use-inline-form";

const usd = (value: number) =>
  `$${value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 4 })}`;

/** The API path of a model id: each segment escaped (ids hold `:` and `@`), `/` kept between them. */
function pricePath(model: string): string {
  return `/api/model-prices/${model.split("/").map(encodeURIComponent).join("/")}`;
}

function describePrice(price: TokenPrice): string {
  const cached =
    price.cachedInputUsdPerMtok === null ? "cached at the input rate" : `cached ${usd(price.cachedInputUsdPerMtok)}`;
  return `in ${usd(price.inputUsdPerMtok)} · ${cached} · out ${usd(price.outputUsdPerMtok)}`;
}

type Draft = { model: string; input: string; cached: string; output: string };
const draftOf = (model: string, price: TokenPrice | null): Draft => ({
  model,
  input: price ? String(price.inputUsdPerMtok) : "",
  cached: price?.cachedInputUsdPerMtok != null ? String(price.cachedInputUsdPerMtok) : "",
  output: price ? String(price.outputUsdPerMtok) : "",
});

/** Empty → null for the cached rate; anything else goes as a number and the server judges it (a blank price is NaN → 400). */
const bodyOf = (draft: Draft) => ({
  inputUsdPerMtok: draft.input.trim() === "" ? null : Number(draft.input),
  cachedInputUsdPerMtok: draft.cached.trim() === "" ? null : Number(draft.cached),
  outputUsdPerMtok: draft.output.trim() === "" ? null : Number(draft.output),
});

/** The three price fields, shared by editing a row and adding a model. */
function PriceFields({
  draft,
  onChange,
  idPrefix,
}: {
  draft: Draft;
  onChange: (draft: Draft) => void;
  idPrefix: string;
}) {
  const field = (key: "input" | "cached" | "output", label: string, placeholder: string) => (
    <div className="field price-field">
      <label htmlFor={`${idPrefix}-${key}`}>{label}</label>
      <input
        id={`${idPrefix}-${key}`}
        type="number"
        inputMode="decimal"
        min={0}
        step="any"
        placeholder={placeholder}
        value={draft[key]}
        onChange={(event) => onChange({ ...draft, [key]: event.target.value })}
      />
    </div>
  );
  return (
    <>
      {field("input", "Input $ / 1M tokens", "e.g. 0.40")}
      {field("cached", "Cached input $ / 1M", "input rate")}
      {field("output", "Output $ / 1M tokens", "e.g. 1.60")}
    </>
  );
}

function PriceRow({ entry, used }: { entry: PriceListEntry; used: boolean }) {
  const id = useId();
  const [draft, setDraft] = useState<Draft>(() => draftOf(entry.model, entry.custom ?? entry.builtIn));
  const { busy, error, clearError, run } = useAction();
  const inForce = entry.custom ?? entry.builtIn;
  // Escape or Cancel drops the draft and gives focus back to Edit.
  const form = useInlineForm<"edit">(() => {
    setDraft(draftOf(entry.model, inForce));
    clearError();
  });
  const editing = form.open === "edit";

  const save = async (event: FormEvent) => {
    event.preventDefault();
    if (await run(() => api(pricePath(entry.model), { method: "PUT", body: bodyOf(draft) }))) form.done();
  };
  const reset = () => run(() => api(pricePath(entry.model), { method: "DELETE" }));

  return (
    <li className="price-row" aria-label={`Price of ${entry.model}`}>
      <div className="price-head">
        <span className="price-model">{entry.model}</span>
        {entry.custom ? (
          <span className="pill pill-accent">{entry.builtIn ? "yours, over the built-in price" : "yours"}</span>
        ) : (
          <span className="pill">built-in</span>
        )}
        {used && <span className="pill pill-live">used</span>}
      </div>
      {editing ? (
        <form
          className="price-edit"
          onSubmit={save}
          onKeyDown={form.onKeyDown}
          aria-label={`Edit the price of ${entry.model}`}
        >
          <PriceFields draft={draft} onChange={setDraft} idPrefix={id} />
          <div className="form-actions">
            <button type="button" className="button button-quiet" onClick={form.cancel}>
              Cancel
            </button>
            <button type="submit" className="button button-primary" disabled={busy}>
              {busy ? "Saving…" : "Save price"}
            </button>
          </div>
        </form>
      ) : (
        <div className="price-line">
          <span className="price-figures">{inForce ? describePrice(inForce) : "no price"}</span>
          <span className="card-actions">
            <button
              type="button"
              className="button button-quiet button-small"
              ref={form.opener("edit")}
              onClick={() => form.show("edit")}
              aria-label={`Edit the price of ${entry.model}`}
            >
              Edit
            </button>
            {entry.custom && (
              <button
                type="button"
                className="button button-quiet button-small"
                onClick={reset}
                disabled={busy}
                aria-label={
                  entry.builtIn ? `Reset ${entry.model} to the built-in price` : `Remove the price of ${entry.model}`
                }
              >
                {entry.builtIn ? "Reset" : "Remove"}
              </button>
            )}
          </span>
        </div>
      )}
      {entry.custom && entry.builtIn && !editing && (
        <span className="hint">Built-in: {describePrice(entry.builtIn)}</span>
      )}
      {error && <ErrorNote message={error} onDismiss={clearError} />}
    </li>
  );
}

/**
 * The price table (US dollars per million tokens): built-in list prices and the person's own,
 * edited in place; Reset goes back to the built-in price, Remove leaves a model unpriced.
 * `usedModels`: the ids whose prices priced the period's calls; `unpriced`: models used
 * with no price, offered for pricing first.
 */
export function PriceTableEditor({
  entries,
  usedModels,
  unpriced,
}: {
  entries: PriceListEntry[];
  usedModels: string[];
  unpriced: string[];
}) {
  const id = useId();
  const [draft, setDraft] = useState<Draft>(() => draftOf(unpriced[0] ?? "", null));
  const { busy, error, clearError, run } = useAction();
  const used = new Set(usedModels.map((model) => model.toLowerCase()));

  const add = async (event: FormEvent) => {
    event.preventDefault();
    const model = draft.model.trim();
    if (await run(() => api(pricePath(model), { method: "PUT", body: bodyOf(draft) }))) setDraft(draftOf("", null));
  };

  return (
    <div className="price-table">
      <ul className="price-list">
        {entries.map((entry) => (
          <PriceRow key={`${entry.model}:${JSON.stringify(entry.custom)}`} entry={entry} used={used.has(entry.model)} />
        ))}
      </ul>
      <form className="card form price-add" onSubmit={add} aria-label="Add a model's price">
        <h3>Add a model&apos;s price</h3>
        {unpriced.length > 0 && (
          <p className="hint">
            Used without a price:{" "}
            {unpriced.map((model, index) => (
              <span key={model}>
                {index > 0 && ", "}
                <button type="button" className="link-button" onClick={() => setDraft({ ...draft, model })}>
                  {model}
                </button>
              </span>
            ))}
          </p>
        )}
        <div className="price-edit">
          <div className="field price-field price-field-model">
            <label htmlFor={`${id}-model`}>Model id</label>
            <input
              id={`${id}-model`}
              className="mono"
              placeholder="e.g. openrouter/mistralai/mistral-large"
              value={draft.model}
              onChange={(event) => setDraft({ ...draft, model: event.target.value })}
              spellCheck={false}
              autoComplete="off"
              required
            />
          </div>
          <PriceFields draft={draft} onChange={setDraft} idPrefix={id} />
        </div>
        {error && <ErrorNote message={error} onDismiss={clearError} />}
        <div className="form-actions">
          <button type="submit" className="button button-primary" disabled={busy || draft.model.trim() === ""}>
            {busy ? "Adding…" : "Add price"}
          </button>
        </div>
      </form>
    </div>
  );
}
