"use client";

import { useRouter } from "next/navigation";
import { useEffect, useId, useRef, useState, type FormEvent, type ReactNode } from "react";
import { api, type Wire } from "@/lib/client/api-client";
import type { McpTransport } from "@/lib/db/schema";
import type { McpServerView, McpTestResult } from "@/lib/mcp/servers";
import { plural } from "@/lib/util/plural";
import { useCoalesced, useLiveEvents } from "./live-events";
import { firstSentence } from "./tool-policies";
import { ErrorNote, LocalTime } from "./ui";
import { useAction } from "./use-action";
import { closeOnEscape, useInlineForm } from "./use-inline-form";

/** A server as the page and GET /api/teams/:id/mcp-servers give it: never its header or environment values. */
export type McpServerWire = Wire<McpServerView>;

type TestResult = McpTestResult;

const DEFAULT_TIMEOUT_SECONDS = 30;

/**
 * `NAME=value` lines (headers also `NAME: value`, as they are usually written) into a record;
 * blank lines are skipped, a line without a separator is an error that names it.
 */
function parsePairs(text: string, what: "header" | "environment variable"): Record<string, string> {
  const pairs: Record<string, string> = {};
  text.split(/\r?\n/).forEach((line, index) => {
    if (!line.trim()) return;
    const separator = what === "header" ? /[=:]/.exec(line)?.index : line.indexOf("=");
    if (separator === undefined || separator < 1) {
      throw new Error(`Line ${index + 1} of the ${what}s is not NAME=value.`);
    }
    pairs[line.slice(0, separator).trim()] = line.slice(separator + 1).trim();
  });
  return pairs;
}

/** One argument per line; blank lines are skipped. */
function parseArgs(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);
}

/** How the command line reads: arguments with spaces in quotes. */
function commandLine(server: McpServerWire): string {
  return [server.command ?? "", ...server.args.map((arg) => (/\s|^$/.test(arg) ? JSON.stringify(arg) : arg))].join(" ");
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

/**
 * The team's MCP servers: each with where it runs, what its last connection found (its
 * tools or why it failed), Test connection, on/off, edit and delete; and a form to add one.
 * Header and environment values go to the server once and are never shown again: a page
 * only ever knows their names.
 */
export function McpServers({ teamId, servers }: { teamId: string; servers: McpServerWire[] }) {
  // A worker connecting (or failing to) during an agent's turn changes a server's state: show it.
  const router = useRouter();
  // The form opens on demand: open for good, its long list of fields doubled the Tools section.
  const add = useInlineForm<"add">();
  const refreshSoon = useCoalesced(() => router.refresh(), 500);
  useLiveEvents((event) => {
    if (event?.table === "mcp_servers" && event.teamId === teamId) refreshSoon();
  });
  return (
    <div className="mcp">
      <p className="mcp-intro">
        MCP servers give this team&apos;s agents more tools. Each tool is called <code>SERVER__TOOL</code>; one that
        only reads runs without asking, any other waits for your approval (change that under Approvals).
      </p>
      {servers.length === 0 ? (
        <p className="hint">No MCP servers yet. Add one: an HTTP endpoint, or a command Cadre starts (stdio).</p>
      ) : (
        <ul className="card-list" aria-label="MCP servers">
          {servers.map((server) => (
            <li key={server.id}>
              <ServerCard server={server} />
            </li>
          ))}
        </ul>
      )}
      {add.open === "add" ? (
        <AddServerForm teamId={teamId} onClose={add.cancel} />
      ) : (
        <button ref={add.opener("add")} type="button" className="button mcp-add-open" onClick={() => add.show("add")}>
          Add an MCP server
        </button>
      )}
    </div>
  );
}

function ServerCard({ server }: { server: McpServerWire }) {
  const [editing, setEditing] = useState(false);
  const [test, setTest] = useState<TestResult | null>(null);
  const [testing, setTesting] = useState(false);
  const { busy, error, clearError, run } = useAction();
  const path = `/api/mcp-servers/${server.id}`;

  if (editing) {
    return (
      <EditServerForm
        server={server}
        onDone={() => {
          setEditing(false);
          setTest(null); // a test of what it was before the edit says nothing now
        }}
      />
    );
  }

  const runTest = async () => {
    setTesting(true);
    setTest(null);
    await run(async () => setTest(await api<TestResult>(`${path}/test`, { method: "POST" })));
    setTesting(false);
  };
  const toggle = () => run(() => api(path, { method: "PATCH", body: { enabled: !server.enabled } }));
  const clearLastError = () => run(() => api(path, { method: "PATCH", body: { clearError: true } }));
  const remove = async () => {
    if (!window.confirm(`Delete the MCP server ${server.name}? Agents lose its tools (${server.name}__…).`)) return;
    await run(() => api(path, { method: "DELETE" }), { keepBusy: true });
  };

  const secretNames = [...(server.transport === "http" ? server.headerNames : server.envNames)].sort();
  return (
    <article
      className={server.enabled ? "card mcp-server" : "card mcp-server mcp-off"}
      aria-label={`MCP server ${server.name}`}
    >
      <div className="card-head">
        <span className="card-title mono">{server.name}</span>
        <span className="channel-pills">
          <span className="pill">{server.transport === "http" ? "HTTP" : "stdio"}</span>
          <span className={server.enabled ? "pill pill-live" : "pill"}>{server.enabled ? "on" : "off"}</span>
        </span>
      </div>
      <p className="channel-target mono">{server.transport === "http" ? server.url : commandLine(server)}</p>
      {secretNames.length > 0 && (
        <p className="hint mcp-secrets">
          {server.transport === "http" ? "Headers" : "Environment"}:{" "}
          {secretNames.map((name, index) => (
            <span key={name}>
              {index > 0 && ", "}
              <code>{name}</code>
            </span>
          ))}{" "}
          (values hidden)
        </p>
      )}
      <p className="hint">Each call may take up to {seconds(server.callTimeoutMs)}.</p>
      {!server.enabled && <p className="hint">Off: no agent is offered its tools.</p>}

      <div role="status" className="mcp-status">
        {testing ? (
          <p className="hint">Connecting to {server.name}…</p>
        ) : test ? (
          <TestOutcome result={test} />
        ) : (
          <ServerState server={server} onClear={busy ? undefined : clearLastError} />
        )}
      </div>

      {server.tools.length > 0 && <ToolList server={server} />}

      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <div className="card-foot">
        <span className="card-actions">
          <button
            type="button"
            className="button"
            onClick={runTest}
            disabled={busy}
            aria-label={`Test connection for ${server.name}`}
          >
            {testing ? "Testing…" : "Test connection"}
          </button>
          <button
            type="button"
            className="button button-quiet"
            onClick={toggle}
            disabled={busy}
            aria-label={`${server.enabled ? "Turn off" : "Turn on"} ${server.name}`}
          >
            {server.enabled ? "Turn off" : "Turn on"}
          </button>
          <button
            type="button"
            className="button button-quiet"
            onClick={() => setEditing(true)}
            disabled={busy}
            aria-label={`Edit ${server.name}`}
          >
            Edit
          </button>
          <button
            type="button"
            className="button button-quiet button-danger-text"
            onClick={remove}
            disabled={busy}
            aria-label={`Delete ${server.name}`}
          >
            Delete
          </button>
        </span>
      </div>
    </article>
  );
}

/**
 * What the last connection found, by whichever process made it (a test here, or an agent's turn
 * in the worker), and the last error with its time: it stays after a later connection that worked
 * (calls may still fail), until a call succeeds or the person clears it.
 */
function ServerState({ server, onClear }: { server: McpServerWire; onClear?: () => void }) {
  const connected = server.lastConnectedAt && (
    <p className="mcp-state mcp-state-ok">
      <strong>Connected</strong> <LocalTime value={server.lastConnectedAt} relative />,{" "}
      {plural(server.tools.length, "tool")}.
    </p>
  );
  const errorIsNewer = server.lastErrorAt && (!server.lastConnectedAt || server.lastErrorAt >= server.lastConnectedAt);
  const lastError = server.lastError && server.lastErrorAt && (
    <p className="mcp-state mcp-state-error">
      <strong>{server.lastConnectedAt ? "Last error" : "Could not connect"}</strong>{" "}
      <LocalTime value={server.lastErrorAt} relative />: {server.lastError}{" "}
      <button
        type="button"
        className="button button-quiet"
        onClick={onClear}
        disabled={!onClear}
        aria-label={`Clear the last error of ${server.name}`}
      >
        Clear
      </button>
    </p>
  );
  if (lastError && errorIsNewer) return lastError;
  if (connected) {
    return (
      <>
        {connected}
        {lastError}
      </>
    );
  }
  return <p className="mcp-state">Never connected yet. Test the connection to see its tools.</p>;
}

function TestOutcome({ result }: { result: TestResult }) {
  if (!result.ok) {
    return (
      <p className="mcp-state mcp-state-error">
        <strong>Test failed</strong> after {seconds(result.ms)}: {result.error}
      </p>
    );
  }
  return (
    <div className="mcp-state mcp-state-ok">
      <p>
        <strong>Connected</strong> in {seconds(result.ms)}:{" "}
        {result.tools.length === 0 ? "it lists no tools." : `${plural(result.tools.length, "tool")}.`}
      </p>
      {result.tools.length > 0 && (
        <ul className="mcp-tool-chips" aria-label="Tools it listed">
          {result.tools.map((tool) => (
            <li key={tool.name}>
              <code>{tool.name}</code>
            </li>
          ))}
        </ul>
      )}
      {result.renamed.length > 0 && (
        <p className="hint">
          Some names become the same once made fit for the model, so agents see{" "}
          {result.renamed.map((rename, index) => (
            <span key={rename.tool}>
              {index > 0 && ", "}
              <code>{rename.tool}</code> as <code>{rename.as}</code>
            </span>
          ))}
          .
        </p>
      )}
    </div>
  );
}

function ToolList({ server }: { server: McpServerWire }) {
  return (
    <details className="mcp-tools">
      <summary>
        Tools of {server.name} ({server.tools.length})
      </summary>
      <ul>
        {server.tools.map((tool) => (
          <li key={tool.name}>
            <code className="tool-name">{tool.name}</code>
            {tool.readOnly && <span className="pill pill-live">read-only</span>}
            {tool.description && <p className="hint">{firstSentence(tool.description)}</p>}
          </li>
        ))}
      </ul>
    </details>
  );
}

function Field({
  label,
  hint,
  children,
}: {
  label: string;
  hint?: ReactNode;
  children: (id: string, hintId: string | undefined) => ReactNode;
}) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id, hintId)}
      {hint && (
        <p id={hintId} className="hint field-hint">
          {hint}
        </p>
      )}
    </div>
  );
}

function timeoutMs(secondsText: string): number {
  const value = Number(secondsText);
  if (!Number.isFinite(value) || value < 1 || value > 600) throw new Error("The call timeout is 1 to 600 seconds.");
  return Math.round(value * 1000);
}

function AddServerForm({ teamId, onClose }: { teamId: string; onClose: () => void }) {
  const form = useRef<HTMLFormElement>(null);
  // Opened from its button: the keyboard goes on inside the form.
  useEffect(() => form.current?.querySelector<HTMLInputElement>("input:checked")?.focus(), []);
  const [transport, setTransport] = useState<McpTransport>("stdio");
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const [headers, setHeaders] = useState("");
  const [command, setCommand] = useState("");
  const [args, setArgs] = useState("");
  const [env, setEnv] = useState("");
  const [timeout, setTimeoutText] = useState(String(DEFAULT_TIMEOUT_SECONDS));
  const [added, setAdded] = useState("");
  const { busy, error, clearError, run } = useAction();

  const add = async (event: FormEvent) => {
    event.preventDefault();
    setAdded("");
    const ok = await run(async () => {
      const callTimeoutMs = timeoutMs(timeout);
      const body =
        transport === "http"
          ? { transport, name: name.trim(), url: url.trim(), headers: parsePairs(headers, "header"), callTimeoutMs }
          : {
              transport,
              name: name.trim(),
              command: command.trim(),
              args: parseArgs(args),
              env: parsePairs(env, "environment variable"),
              callTimeoutMs,
            };
      await api(`/api/teams/${teamId}/mcp-servers`, { method: "POST", body });
    });
    if (!ok) return;
    setAdded(`Added ${name.trim()}. Test its connection to list its tools.`);
    setName("");
    setUrl("");
    setHeaders("");
    setCommand("");
    setArgs("");
    setEnv("");
    setTimeoutText(String(DEFAULT_TIMEOUT_SECONDS));
  };

  const ready = name.trim() && (transport === "http" ? url.trim() : command.trim());
  return (
    <form
      ref={form}
      className="card form"
      onSubmit={add}
      onKeyDown={closeOnEscape(onClose)}
      aria-labelledby="add-mcp-heading"
    >
      <h3 id="add-mcp-heading">Add an MCP server</h3>
      <fieldset className="choice-group">
        <legend>How Cadre reaches it</legend>
        <label className="choice">
          <input
            type="radio"
            name="mcp-transport"
            value="stdio"
            checked={transport === "stdio"}
            onChange={() => setTransport("stdio")}
          />
          stdio: a command Cadre starts
        </label>
        <label className="choice">
          <input
            type="radio"
            name="mcp-transport"
            value="http"
            checked={transport === "http"}
            onChange={() => setTransport("http")}
          />
          HTTP: a streamable HTTP endpoint
        </label>
      </fieldset>
      <Field
        label="Server name"
        hint={<>Letters, digits, - and _ (no __), up to 40. Its tools are called NAME__TOOL.</>}
      >
        {(id, hintId) => (
          <input
            id={id}
            aria-describedby={hintId}
            value={name}
            onChange={(event) => setName(event.target.value)}
            maxLength={40}
            required
            spellCheck={false}
            autoComplete="off"
            placeholder="github"
          />
        )}
      </Field>
      {transport === "http" ? (
        <>
          <Field label="URL">
            {(id) => (
              <input
                id={id}
                type="url"
                value={url}
                onChange={(event) => setUrl(event.target.value)}
                required
                maxLength={2000}
                spellCheck={false}
                autoComplete="off"
                placeholder="https://mcp.example.com/mcp"
              />
            )}
          </Field>
          <Field
            label="Headers (optional)"
            hint="One NAME=value per line, such as Authorization=Bearer …. Stored for the connection; after saving only the names are shown."
          >
            {(id, hintId) => (
              <textarea
                id={id}
                aria-describedby={hintId}
                className="mono"
                rows={2}
                value={headers}
                onChange={(event) => setHeaders(event.target.value)}
                spellCheck={false}
                autoComplete="off"
              />
            )}
          </Field>
        </>
      ) : (
        <>
          <Field
            label="Command"
            hint="The program to start, as the worker's machine finds it (an absolute path is safest)."
          >
            {(id, hintId) => (
              <input
                id={id}
                aria-describedby={hintId}
                className="mono"
                value={command}
                onChange={(event) => setCommand(event.target.value)}
                required
                maxLength={1000}
                spellCheck={false}
                autoComplete="off"
                placeholder="npx"
              />
            )}
          </Field>
          <Field label="Arguments (optional)" hint="One per line.">
            {(id, hintId) => (
              <textarea
                id={id}
                aria-describedby={hintId}
                className="mono"
                rows={3}
                value={args}
                onChange={(event) => setArgs(event.target.value)}
                spellCheck={false}
                autoComplete="off"
                placeholder={"-y\n@modelcontextprotocol/server-github"}
              />
            )}
          </Field>
          <Field
            label="Environment (optional)"
            hint="One NAME=value per line, such as GITHUB_TOKEN=…. Stored for the command; after saving only the names are shown."
          >
            {(id, hintId) => (
              <textarea
                id={id}
                aria-describedby={hintId}
                className="mono"
                rows={2}
                value={env}
                onChange={(event) => setEnv(event.target.value)}
                spellCheck={false}
                autoComplete="off"
              />
            )}
          </Field>
        </>
      )}
      <Field label="Call timeout (seconds)" hint="How long one tool call may take before the agent is told it failed.">
        {(id, hintId) => (
          <input
            id={id}
            aria-describedby={hintId}
            className="mcp-timeout"
            type="number"
            min={1}
            max={600}
            step={1}
            value={timeout}
            onChange={(event) => setTimeoutText(event.target.value)}
            required
          />
        )}
      </Field>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <p className="hint form-status" role="status">
        {added}
      </p>
      <div className="form-actions">
        <button type="button" className="button button-quiet" onClick={onClose}>
          Close
        </button>
        <button type="submit" className="button button-primary" disabled={busy || !ready}>
          {busy ? "Adding…" : "Add server"}
        </button>
      </div>
    </form>
  );
}

function EditServerForm({ server, onDone }: { server: McpServerWire; onDone: () => void }) {
  const [name, setName] = useState(server.name);
  const [url, setUrl] = useState(server.url ?? "");
  const [command, setCommand] = useState(server.command ?? "");
  const [args, setArgs] = useState(server.args.join("\n"));
  const [secrets, setSecrets] = useState("");
  const [clearSecrets, setClearSecrets] = useState(false);
  const [timeout, setTimeoutText] = useState(String(server.callTimeoutMs / 1000));
  const { busy, error, clearError, run } = useAction();
  const http = server.transport === "http";
  const secretNames = [...(http ? server.headerNames : server.envNames)].sort();
  const what = http ? "header" : "environment variable";

  const save = async (event: FormEvent) => {
    event.preventDefault();
    const ok = await run(async () => {
      const changes: Record<string, unknown> = {};
      if (name.trim() !== server.name) changes.name = name.trim();
      const callTimeoutMs = timeoutMs(timeout);
      if (callTimeoutMs !== server.callTimeoutMs) changes.callTimeoutMs = callTimeoutMs;
      // Headers and environment are replaced whole, so they are sent only when the person typed new ones (or asked to remove them).
      const typed = parsePairs(secrets, what);
      const replaceSecrets = clearSecrets ? {} : Object.keys(typed).length > 0 ? typed : undefined;
      if (http) {
        if (url.trim() !== server.url) changes.url = url.trim();
        if (replaceSecrets) changes.headers = replaceSecrets;
      } else {
        if (command.trim() !== server.command) changes.command = command.trim();
        const newArgs = parseArgs(args);
        if (JSON.stringify(newArgs) !== JSON.stringify(server.args)) changes.args = newArgs;
        if (replaceSecrets) changes.env = replaceSecrets;
      }
      if (Object.keys(changes).length > 0)
        await api(`/api/mcp-servers/${server.id}`, { method: "PATCH", body: changes });
    });
    if (ok) onDone();
  };

  const keepHint =
    secretNames.length > 0 ? (
      <>
        Leave empty to keep the current values ({secretNames.join(", ")}). New lines replace all of them. One NAME=value
        per line.
      </>
    ) : (
      "One NAME=value per line. Leave empty for none."
    );
  return (
    <form className="card form" onSubmit={save} aria-label={`Edit ${server.name}`}>
      <h3>Edit {server.name}</h3>
      <Field
        label="Server name"
        hint="Renaming changes its tools' names (NAME__TOOL): update scopes and policies that name them."
      >
        {(id, hintId) => (
          <input
            id={id}
            aria-describedby={hintId}
            value={name}
            onChange={(event) => setName(event.target.value)}
            maxLength={40}
            required
            spellCheck={false}
            autoComplete="off"
          />
        )}
      </Field>
      {http ? (
        <Field label="URL">
          {(id) => (
            <input
              id={id}
              type="url"
              value={url}
              onChange={(event) => setUrl(event.target.value)}
              required
              maxLength={2000}
              spellCheck={false}
              autoComplete="off"
            />
          )}
        </Field>
      ) : (
        <>
          <Field label="Command">
            {(id) => (
              <input
                id={id}
                className="mono"
                value={command}
                onChange={(event) => setCommand(event.target.value)}
                required
                maxLength={1000}
                spellCheck={false}
                autoComplete="off"
              />
            )}
          </Field>
          <Field label="Arguments" hint="One per line.">
            {(id, hintId) => (
              <textarea
                id={id}
                aria-describedby={hintId}
                className="mono"
                rows={3}
                value={args}
                onChange={(event) => setArgs(event.target.value)}
                spellCheck={false}
                autoComplete="off"
              />
            )}
          </Field>
        </>
      )}
      <Field label={http ? "New headers" : "New environment"} hint={keepHint}>
        {(id, hintId) => (
          <textarea
            id={id}
            aria-describedby={hintId}
            className="mono"
            rows={2}
            value={secrets}
            disabled={clearSecrets}
            onChange={(event) => setSecrets(event.target.value)}
            spellCheck={false}
            autoComplete="off"
            placeholder={secretNames.length > 0 ? "(unchanged)" : ""}
          />
        )}
      </Field>
      {secretNames.length > 0 && (
        <label className="choice">
          <input type="checkbox" checked={clearSecrets} onChange={(event) => setClearSecrets(event.target.checked)} />
          Remove the stored {http ? "headers" : "environment"}
        </label>
      )}
      <Field label="Call timeout (seconds)">
        {(id) => (
          <input
            id={id}
            className="mcp-timeout"
            type="number"
            min={1}
            max={600}
            step={1}
            value={timeout}
            onChange={(event) => setTimeoutText(event.target.value)}
            required
          />
        )}
      </Field>
      {error && <ErrorNote message={error} onDismiss={clearError} />}
      <div className="form-actions">
        <button type="button" className="button button-quiet" onClick={onDone}>
          Cancel
        </button>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? "Saving…" : "Save"}
        </button>
      </div>
    </form>
  );
}
