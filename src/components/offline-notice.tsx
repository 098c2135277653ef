"use client";

import { useId, useState } from "react";
import { api, messageOf } from "@/lib/client/api-client";
import type { ConnectionCheck, ServiceCheck } from "@/lib/telemetry/connection-check";
import { ErrorNote } from "./ui";
import { CopyField } from "./webhook-secret";

const SERVICES: { key: keyof ConnectionCheck; name: string }[] = [
  { key: "model", name: "Model" },
  { key: "search", name: "Web search" },
];

function CheckResult({ name, check }: { name: string; check: ServiceCheck }) {
  return (
    <li className={`connection-result connection-${check.state.replace(/_/g, "-")}`}>
      <strong>{name}:</strong> {check.message}
    </li>
  );
}

/**
 * What a first run on the built-in offline model needs to be told (the home page, the teams
 * list; a team page may place it too): the answers are a demo, and how to connect a real model
 * and web search — each variable copyable — with Check connection to test what is configured.
 * Shown by the server only when no model is configured. `searchConfigured`: TAVILY_API_KEY is set;
 * `setupOpen`: the variables show without a click (a first run, with no team yet).
 */
export function OfflineNotice({
  searchConfigured,
  setupOpen = false,
}: {
  searchConfigured: boolean;
  setupOpen?: boolean;
}) {
  const headingId = useId();
  const [checking, setChecking] = useState(false);
  const [result, setResult] = useState<ConnectionCheck | null>(null);
  const [error, setError] = useState<string | null>(null);
  const check = async () => {
    setChecking(true);
    setError(null);
    try {
      setResult(await api<ConnectionCheck>("/api/connection-check", { method: "POST" }));
    } catch (cause) {
      setResult(null);
      setError(`Could not check the connections: ${messageOf(cause)}`);
    } finally {
      setChecking(false);
    }
  };
  return (
    <section className="card offline-notice" aria-labelledby={headingId} data-testid="offline-notice">
      <h2 id={headingId} className="offline-notice-title">
        Answers are a built-in demo
      </h2>
      <p>
        No model is connected, so Cadre&apos;s built-in offline model plays every agent. It runs the real flow — it
        delegates, records, reports and briefs — but its words are canned, not thought.{" "}
        {searchConfigured
          ? "Web search is configured, so its findings come from real searches."
          : "Web search is not configured either, so nothing is looked up."}
      </p>
      <details className="offline-notice-setup" open={setupOpen}>
        <summary>How to connect a model and web search</summary>
        <p className="hint">Set these in Cadre&apos;s environment, then restart it (npm start, or npm run dev).</p>
        <div className="offline-notice-vars">
          <CopyField label="OpenAI: your API key" value="OPENAI_API_KEY=sk-…" buttonLabel="Copy" />
          <p className="hint offline-notice-or">
            or any OpenAI-compatible server (LM Studio, Ollama, vLLM, OpenRouter) and its model:
          </p>
          <CopyField
            label="The server's address"
            value="OPENAI_BASE_URL=http://localhost:11434/v1"
            buttonLabel="Copy"
          />
          <CopyField label="The model to use" value="LLM_MODEL=qwen3:8b" buttonLabel="Copy" />
          <p className="hint offline-notice-or">and for web search, a key from tavily.com:</p>
          <CopyField label="Tavily: your API key" value="TAVILY_API_KEY=tvly-…" buttonLabel="Copy" />
        </div>
      </details>
      <div className="form-actions offline-notice-check">
        <button type="button" className="button" onClick={() => void check()} disabled={checking}>
          {checking ? "Checking…" : "Check connection"}
        </button>
      </div>
      <div aria-live="polite">
        {result && (
          <ul className="connection-results" aria-label="Connection check">
            {SERVICES.map(({ key, name }) => (
              <CheckResult key={key} name={name} check={result[key]} />
            ))}
          </ul>
        )}
      </div>
      {error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
    </section>
  );
}
