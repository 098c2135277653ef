"use client";

import { useId, useState } from "react";
import { api, messageOf } from "@/lib/client/api-client";
import type { ToolInfo, ToolPolicies } from "@/lib/engine/tool-policies";
import type { AgentRole, ToolPolicy } from "@/lib/db/schema";
import { isMcpToolName, MCP_SEPARATOR } from "@/lib/mcp/names";
import { toolLabel } from "@/lib/views/tool-labels";
import { ErrorNote } from "./ui";

const POLICY_WORDS: Record<ToolPolicy, string> = {
  auto: "Run without asking",
  ask: "Ask me first",
  deny: "Never",
};

const WHERE_WORDS: Record<ToolInfo["availableTo"][number], string> = {
  lead: "lead",
  subordinate: "subordinates",
  chat: "chat",
};

type AgentChoice = { id: string; name: string; role: AgentRole };

/** A tool's description is written for the model; its first sentence is enough for the person. */
export function firstSentence(text: string): string {
  return /^[\s\S]*?[.!?](?=\s|$)/.exec(text.trim())?.[0] ?? text.trim();
}

/** The tools an agent of this role is offered (a lead's work and chat, or a subordinate's work). */
export function offeredTo(tool: ToolInfo, role: AgentRole): boolean {
  return role === "lead"
    ? tool.availableTo.includes("lead") || tool.availableTo.includes("chat")
    : tool.availableTo.includes("subordinate");
}

function PolicyRow(props: {
  tool: ToolInfo;
  label: string;
  value: ToolPolicy | null;
  unsetLabel: string;
  busy: boolean;
  onChange: (policy: ToolPolicy | null) => void;
}) {
  const { tool, label, value, unsetLabel, busy, onChange } = props;
  const id = useId();
  // An MCP tool is offered to every role; which server it comes from says more. Its name carries the server already.
  const server = isMcpToolName(tool.name) ? tool.name.split(MCP_SEPARATOR)[0] : null;
  const description = server ? tool.description.replace(/^\[MCP server [^\]]*\]\s*/, "") : tool.description;
  return (
    <li className={value ? "policy-row policy-set" : "policy-row"}>
      <div className="policy-tool">
        <label htmlFor={id} className="policy-name">
          {!server && <span className="policy-label">{toolLabel(tool.name)}</span>}{" "}
          <code className="tool-name">{tool.name}</code>
        </label>
        <span className="policy-where">
          {server ? `MCP server ${server}` : tool.availableTo.map((where) => WHERE_WORDS[where]).join(" · ")}
        </span>
        <p className="hint policy-description">
          <CodeNames text={firstSentence(description)} />
        </p>
      </div>
      {/* Named in full: the tool's name alone would repeat in the team's and the agent's list. */}
      <select
        id={id}
        aria-label={label}
        value={value ?? ""}
        disabled={busy}
        onChange={(event) => onChange((event.target.value || null) as ToolPolicy | null)}
      >
        <option value="">{unsetLabel}</option>
        {(Object.keys(POLICY_WORDS) as ToolPolicy[]).map((policy) => (
          <option key={policy} value={policy}>
            {POLICY_WORDS[policy]}
          </option>
        ))}
      </select>
    </li>
  );
}

/** A description written for the model names other tools (camelCase): shown as code, the technical names they are. */
function CodeNames({ text }: { text: string }) {
  return (
    text
      .split(/\b([a-z]+[A-Z][A-Za-z]*)\b/)
      // biome-ignore lint/suspicious/noArrayIndexKey: the pieces of one fixed text; their place is all that tells them apart
      .map((part, index) => (index % 2 === 1 ? <code key={index}>{part}</code> : part))
  );
}

/**
 * The team's tool policies (flow 8): for each tool, run without asking, ask the person
 * first (the call waits for Approve / Edit and approve / Deny in the inbox or the chat),
 * or never offer it; and per agent, overrides of the team's setting. Each change is saved
 * at once and the server's answer shown.
 */
export function ToolPoliciesPanel({
  teamId,
  agents,
  initial,
}: {
  teamId: string;
  agents: AgentChoice[];
  initial: ToolPolicies;
}) {
  const [policies, setPolicies] = useState(initial);
  const [agentId, setAgentId] = useState(agents.find((agent) => agent.role === "lead")?.id ?? agents[0]?.id ?? "");
  const [saving, setSaving] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState("");
  const agentSelect = useId();
  const agent = agents.find((candidate) => candidate.id === agentId);

  const teamPolicy = (tool: ToolInfo): ToolPolicy => policies.team[tool.name] ?? tool.defaultPolicy;

  const save = async (tool: ToolInfo, policy: ToolPolicy | null, forAgent?: AgentChoice) => {
    const key = `${forAgent?.id ?? "team"}:${tool.name}`;
    setSaving(key);
    setError(null);
    setSaved("");
    try {
      const next = await api<ToolPolicies>(`/api/teams/${teamId}/tool-policies`, {
        method: "PUT",
        body: { toolName: tool.name, policy, ...(forAgent ? { agentId: forAgent.id } : {}) },
      });
      setPolicies(next);
      const now = forAgent ? (next.agents[forAgent.id]?.[tool.name] ?? null) : (next.team[tool.name] ?? null);
      const words = now
        ? POLICY_WORDS[now].toLowerCase()
        : forAgent
          ? "the team's setting"
          : `the default (${POLICY_WORDS[tool.defaultPolicy].toLowerCase()})`;
      setSaved(`Saved: ${tool.name}${forAgent ? ` for ${forAgent.name}` : ""} is now ${words}.`);
    } catch (cause) {
      setError(`Could not change ${tool.name}: ${messageOf(cause)}`);
    } finally {
      setSaving(null);
    }
  };

  return (
    <div className="card policies">
      <p className="policies-intro">
        What happens when an agent calls a tool. <strong>Ask me first</strong> holds the call until you approve, edit or
        deny it in your inbox or the chat; <strong>Never</strong> takes the tool away.
      </p>
      <ul className="policy-list" aria-label="Team settings">
        {policies.tools.map((tool) => (
          <PolicyRow
            key={tool.name}
            tool={tool}
            label={`Policy for ${tool.name}`}
            value={policies.team[tool.name] ?? null}
            unsetLabel={`Default (${POLICY_WORDS[tool.defaultPolicy].toLowerCase()})`}
            busy={saving === `team:${tool.name}`}
            onChange={(policy) => void save(tool, policy)}
          />
        ))}
      </ul>

      {agents.length > 0 && (
        // Folded unless an agent already has a setting of its own: most teams never need it, and open it doubled the section.
        <details
          className="policy-agents"
          open={Object.values(initial.agents).some((own) => Object.keys(own ?? {}).length > 0) || undefined}
        >
          <summary>
            <h3>For one agent</h3>
          </summary>
          <div className="field policy-agent-field">
            <label htmlFor={agentSelect}>Agent</label>
            <select id={agentSelect} value={agentId} onChange={(event) => setAgentId(event.target.value)}>
              {agents.map((choice) => (
                <option key={choice.id} value={choice.id}>
                  {choice.name} ({choice.role})
                </option>
              ))}
            </select>
          </div>
          {agent && (
            <ul className="policy-list" aria-label={`${agent.name}'s settings`}>
              {policies.tools
                .filter((tool) => offeredTo(tool, agent.role))
                .map((tool) => (
                  <PolicyRow
                    key={`${agent.id}:${tool.name}`}
                    tool={tool}
                    label={`${agent.name}'s policy for ${tool.name}`}
                    value={policies.agents[agent.id]?.[tool.name] ?? null}
                    unsetLabel={`Team setting (${POLICY_WORDS[teamPolicy(tool)].toLowerCase()})`}
                    busy={saving === `${agent.id}:${tool.name}`}
                    onChange={(policy) => void save(tool, policy, agent)}
                  />
                ))}
            </ul>
          )}
        </details>
      )}

      {error && <ErrorNote message={error} onDismiss={() => setError(null)} />}
      <p className="hint policies-status" role="status">
        {saved}
      </p>
    </div>
  );
}
