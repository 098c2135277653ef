"use client";

import { useState } from "react";
import { api } from "@/lib/client/api-client";
import type { ToolInfo } from "@/lib/engine/tool-policies";
import type { AgentRole, ToolScope } from "@/lib/db/schema";
import { MCP_SEPARATOR, mcpToolNames } from "@/lib/mcp/names";
import { plural } from "@/lib/util/plural";
import type { McpServerWire } from "./mcp-servers";
import { firstSentence, offeredTo } from "./tool-policies";
import { ErrorNote } from "./ui";
import { useAction } from "./use-action";

type ScopedAgent = { id: string; name: string; role: AgentRole; toolScope: ToolScope | null };

function sameScope(a: ToolScope | null, b: ToolScope | null): boolean {
  if (!a || !b) return a === b;
  return JSON.stringify([...a.allow].sort()) === JSON.stringify([...b.allow].sort());
}

/** `SERVER__*` reads as the whole server. */
function scopeEntry(name: string): string {
  return name.endsWith(`${MCP_SEPARATOR}*`) ? `all tools of ${name.slice(0, -MCP_SEPARATOR.length - 1)}` : name;
}

function scopeList(allow: string[]): string {
  return allow.map(scopeEntry).join(", ");
}

/** The scope in a few words, for the closed editor's line. */
function describeScope(scope: ToolScope | null): string {
  if (!scope) return "All tools";
  if (scope.allow.length === 0) return "No tools";
  if (scope.allow.length <= 3) return `Only: ${scopeList(scope.allow)}`;
  return `Only: ${plural(scope.allow.length, "chosen entry", "chosen entries")}`;
}

/**
 * Per agent, which tools it may use (its tool scope): all of them — its role's built-in tools
 * and every MCP server of the team, also ones added later — or a chosen set: built-in tools,
 * whole servers (`SERVER__*`) or single MCP tools (`SERVER__TOOL`).
 */
export function ToolScopes({
  agents,
  builtIn,
  servers,
}: {
  agents: ScopedAgent[];
  builtIn: ToolInfo[];
  servers: McpServerWire[];
}) {
  if (agents.length === 0) return <p className="hint">This team has no agents yet.</p>;
  return (
    <div className="scopes">
      <p className="mcp-intro">
        By default an agent may use every tool of its role and every MCP server of the team. Narrow that down per agent
        here; Approvals still decide whether a call waits for you.
      </p>
      <ul className="card-list" aria-label="Tool scopes">
        {agents.map((agent) => (
          <li key={agent.id}>
            <AgentScope
              agent={agent}
              builtIn={builtIn.filter((tool) => offeredTo(tool, agent.role))}
              servers={servers}
            />
          </li>
        ))}
      </ul>
    </div>
  );
}

function AgentScope({
  agent,
  builtIn,
  servers,
}: {
  agent: ScopedAgent;
  builtIn: ToolInfo[];
  servers: McpServerWire[];
}) {
  const [mode, setMode] = useState<"all" | "chosen">(agent.toolScope ? "chosen" : "all");
  const [allow, setAllow] = useState<string[]>(agent.toolScope?.allow ?? []);
  const [saved, setSaved] = useState("");
  const { busy, error, clearError, run } = useAction();

  const wholeServer = (server: string) => `${server}${MCP_SEPARATOR}*`;
  // In the order the editor shows them, so a saved scope reads like the form.
  const listed = [
    ...builtIn.map((tool) => tool.name),
    ...servers.flatMap((server) => [wholeServer(server.name), ...mcpToolNames(server.name, server.tools).values()]),
  ];
  // Names this editor cannot show now (a server renamed or removed, a tool it no longer lists) stay until unticked.
  const unlisted = [...new Set([...(agent.toolScope?.allow ?? []), ...allow])].filter((name) => !listed.includes(name));
  const has = (name: string) => allow.includes(name);
  const toggle = (name: string, on: boolean) => {
    setSaved("");
    setAllow((current) =>
      on ? [...current.filter((other) => other !== name), name] : current.filter((other) => other !== name),
    );
  };

  const choose = (next: "all" | "chosen") => {
    setSaved("");
    setMode(next);
  };

  const chosen = (): string[] => {
    const whole = servers
      .filter((server) => has(wholeServer(server.name)))
      .map((server) => `${server.name}${MCP_SEPARATOR}`);
    // A tool of a server allowed whole is already allowed.
    const redundant = (name: string) => !name.endsWith("*") && whole.some((prefix) => name.startsWith(prefix));
    return [...listed, ...unlisted].filter((name) => has(name) && !redundant(name));
  };
  const draft: ToolScope | null = mode === "all" ? null : { allow: chosen() };
  const unsaved = !sameScope(draft, agent.toolScope);

  const save = async () => {
    const scope = draft;
    const ok = await run(() => api(`/api/agents/${agent.id}/tool-scope`, { method: "PUT", body: { scope } }));
    if (!ok) return;
    if (scope) setAllow(scope.allow);
    setSaved(
      !scope
        ? `Saved: ${agent.name} may use all tools.`
        : scope.allow.length === 0
          ? `Saved: ${agent.name} may use no tools.`
          : `Saved: ${agent.name} may use ${scopeList(scope.allow)}.`,
    );
  };

  const group = `scope-${agent.id}`;
  return (
    <details className="card scope-card">
      <summary>
        <span className="scope-agent">{agent.name}</span>
        <span className="pill">{agent.role}</span>
        <span className="scope-now">{describeScope(agent.toolScope)}</span>
      </summary>
      <form
        className="scope-form"
        aria-label={`Tools ${agent.name} may use`}
        onSubmit={(event) => {
          event.preventDefault();
          void save();
        }}
      >
        <fieldset className="choice-group scope-mode">
          <legend>What {agent.name} may use</legend>
          <label className="choice">
            <input
              type="radio"
              name={group}
              checked={mode === "all"}
              onChange={() => choose("all")}
              aria-label={`All tools for ${agent.name}`}
            />
            All tools, also of MCP servers added later
          </label>
          <label className="choice">
            <input
              type="radio"
              name={group}
              checked={mode === "chosen"}
              onChange={() => choose("chosen")}
              aria-label={`Only chosen tools for ${agent.name}`}
            />
            Only the tools chosen below
          </label>
        </fieldset>

        {mode === "chosen" && (
          <>
            <fieldset className="scope-group">
              <legend>Built-in tools</legend>
              <ul className="scope-options">
                {builtIn.map((tool) => (
                  <li key={tool.name}>
                    <label className="choice" title={firstSentence(tool.description)}>
                      <input
                        type="checkbox"
                        checked={has(tool.name)}
                        onChange={(event) => toggle(tool.name, event.target.checked)}
                        aria-label={`${tool.name} for ${agent.name}`}
                      />
                      <code>{tool.name}</code>
                    </label>
                  </li>
                ))}
              </ul>
            </fieldset>

            {servers.map((server) => {
              const whole = has(wholeServer(server.name));
              return (
                <fieldset key={server.id} className="scope-group">
                  <legend>
                    MCP server <code>{server.name}</code>
                    {!server.enabled && <span className="hint"> (off)</span>}
                  </legend>
                  <label className="choice scope-whole">
                    <input
                      type="checkbox"
                      checked={whole}
                      onChange={(event) => toggle(wholeServer(server.name), event.target.checked)}
                      aria-label={`All tools of ${server.name} for ${agent.name}`}
                    />
                    All tools of {server.name}, also ones it adds later
                  </label>
                  {server.tools.length === 0 ? (
                    <p className="hint">It has listed no tools yet: test its connection to choose single tools.</p>
                  ) : (
                    <ul className="scope-options">
                      {server.tools.map((tool) => {
                        const name = mcpToolNames(server.name, server.tools).get(tool.name)!;
                        return (
                          <li key={name}>
                            <label className="choice" title={firstSentence(tool.description)}>
                              <input
                                type="checkbox"
                                checked={whole || has(name)}
                                disabled={whole}
                                onChange={(event) => toggle(name, event.target.checked)}
                                aria-label={`${name} for ${agent.name}`}
                              />
                              {/* The fieldset names the server; the full name (SERVER__TOOL) stays in the accessible name. */}
                              <code>{tool.name}</code>
                            </label>
                          </li>
                        );
                      })}
                    </ul>
                  )}
                </fieldset>
              );
            })}

            {unlisted.length > 0 && (
              <fieldset className="scope-group">
                <legend>Not available now</legend>
                <p className="hint">
                  In the saved scope, but no tool by this name is listed now (a server renamed, removed or not yet
                  tested).
                </p>
                <ul className="scope-options">
                  {unlisted.map((name) => (
                    <li key={name}>
                      <label className="choice">
                        <input
                          type="checkbox"
                          checked={has(name)}
                          onChange={(event) => toggle(name, event.target.checked)}
                          aria-label={`${name} for ${agent.name}`}
                        />
                        <code>{name}</code>
                      </label>
                    </li>
                  ))}
                </ul>
              </fieldset>
            )}
            {draft && draft.allow.length === 0 && (
              <p className="notice">Nothing chosen: {agent.name} would have no tools at all.</p>
            )}
          </>
        )}

        {error && <ErrorNote message={error} onDismiss={clearError} />}
        <div className="form-actions scope-actions">
          <p className="hint form-status" role="status">
            {saved || (unsaved ? "Not saved yet." : "")}
          </p>
          <button
            type="submit"
            className="button button-primary"
            disabled={busy || !unsaved}
            aria-label={`Save tools for ${agent.name}`}
          >
            {busy ? "Saving…" : "Save tools"}
          </button>
        </div>
      </form>
    </details>
  );
}
