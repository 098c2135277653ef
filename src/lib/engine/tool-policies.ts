import "server-only";
import { asSchema, type ToolSet } from "ai";
import type { Db } from "@/lib/db/client";
import { getAgent } from "@/lib/db/queries/agents";
import { writeUnderTeam } from "@/lib/db/queries/teams";
import { listToolPolicyRules, listToolPolicyRulesFor, setToolPolicyRule } from "@/lib/db/queries/tool-policies";
import type { Agent, AgentRole, McpServer, ToolPolicy } from "@/lib/db/schema";
import { CadreError, notFound } from "@/lib/errors";
import { listMcpServers } from "@/lib/db/queries/mcp-servers";
import { isMcpToolName, MCP_SEPARATOR, mcpToolNames, mcpToolsFor, scopeAllows } from "@/lib/mcp/tools";
import { foregroundTools, workTools, type ToolContext } from "./tools";

/** The most tools one model request may offer (OpenAI's limit; others' are higher). */
const MAX_TOOLS = 128;

/** Where a tool's effect lands: inside Cadre (its writes commit with its result) or outside it. */
export type ToolEffects = "cadre" | "outside";

export type ToolInfo = {
  name: string;
  description: string;
  /** Where an agent is offered it: a lead's or a subordinate's work, or the chat. */
  availableTo: ("lead" | "subordinate" | "chat")[];
  effects: ToolEffects;
  defaultPolicy: ToolPolicy;
};

/**
 * Cadre's own tools read or write Cadre's database, and their writes commit with their
 * result (context.effect), so they run without asking by default. A tool that acts
 * outside Cadre — a message leaving the building, an MCP server's side effect — asks first.
 */
export function toolEffects(toolName: string): ToolEffects {
  // Every MCP tool acts outside Cadre: its effect cannot commit with its result.
  return isMcpToolName(toolName) ? "outside" : "cadre";
}

/** An MCP tool that says it only reads (`readOnlyHint`) runs without asking; any other asks first. */
function defaultToolPolicy(toolName: string, readOnly = false): ToolPolicy {
  return toolEffects(toolName) === "outside" && !readOnly ? "ask" : "auto";
}

/**
 * The tools' definitions without a caller: the factories read their context only when a
 * tool runs, so a context that is never used gives the names, descriptions and schemas.
 */
function definitions(role: AgentRole, where: "work" | "chat"): ToolSet {
  const unused = new Proxy({} as ToolContext, {
    get: (_target, key) => (key === "agent" ? { role } : undefined),
  });
  return where === "work" ? workTools(unused) : foregroundTools(unused);
}

let catalogue: ToolInfo[] | undefined;

/** Every built-in tool, once, with who is offered it: what the team page lists for policies. */
export function toolCatalogue(): ToolInfo[] {
  if (catalogue) return catalogue;
  const byName = new Map<string, ToolInfo>();
  const offers: [AgentRole, "work" | "chat", ToolInfo["availableTo"][number]][] = [
    ["lead", "work", "lead"],
    ["subordinate", "work", "subordinate"],
    ["lead", "chat", "chat"],
    ["subordinate", "chat", "chat"],
  ];
  for (const [role, where, label] of offers) {
    for (const [name, definition] of Object.entries(definitions(role, where))) {
      const info: ToolInfo = byName.get(name) ?? {
        name,
        description: typeof definition.description === "string" ? definition.description : "",
        availableTo: [],
        effects: toolEffects(name),
        defaultPolicy: defaultToolPolicy(name),
      };
      if (!info.availableTo.includes(label)) info.availableTo.push(label);
      byName.set(name, info);
    }
  }
  catalogue = [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  return catalogue;
}

function isKnownTool(toolName: string): boolean {
  return toolCatalogue().some((info) => info.name === toolName);
}

/** What applies to this agent for each tool: its own rule, else the team's, else the tool's default. */
async function loadToolPolicies(
  db: Db,
  agent: Pick<Agent, "id" | "teamId">,
): Promise<(toolName: string, readOnly?: boolean) => ToolPolicy> {
  const rules = await listToolPolicyRulesFor(db, agent.teamId, agent.id);
  const own = new Map(rules.filter((rule) => rule.agentId === agent.id).map((rule) => [rule.toolName, rule.policy]));
  const team = new Map(rules.filter((rule) => rule.agentId === null).map((rule) => [rule.toolName, rule.policy]));
  return (toolName, readOnly) => own.get(toolName) ?? team.get(toolName) ?? defaultToolPolicy(toolName, readOnly);
}

/**
 * Everything an agent is offered in a turn: its role's built-in tools and its team's MCP
 * tools, as far as its scope allows, each recorded (`wrap`: the turn's StepRecorder), under
 * its policies (see applyToolPolicies). `only`: the tools that may run in this turn; the others
 * are offered all the same (a request that offers other tools than the one before it is served
 * from no cache) and answer that they cannot run now.
 */
export async function toolsForTurn(
  db: Db,
  agent: Pick<Agent, "id" | "teamId" | "toolScope">,
  builtIn: ToolSet,
  options: {
    wrap: (tools: ToolSet) => ToolSet;
    log: (message: string, error?: unknown) => void;
    only?: readonly string[];
  },
) {
  const [policyOf, mcp] = await Promise.all([loadToolPolicies(db, agent), mcpToolsFor(db, agent, options.log)]);
  const scoped: ToolSet = {};
  for (const [name, definition] of Object.entries(builtIn))
    if (scopeAllows(agent.toolScope, name)) scoped[name] = definition;
  // Providers refuse a request with more than MAX_TOOLS tools (OpenAI: 128): the built-in ones
  // stay, MCP tools fill what is left, and the operator hears what was left out.
  const room = Math.max(0, MAX_TOOLS - Object.keys(scoped).length);
  const mcpNames = Object.keys(mcp.tools);
  if (mcpNames.length > room) {
    options.log(
      `[mcp] ${mcpNames.length - room} MCP tools left out of this turn (at most ${MAX_TOOLS} tools per request): narrow the agent's tool scope`,
    );
    for (const name of mcpNames.slice(room)) delete mcp.tools[name];
  }
  const { only } = options;
  const offered = only ? onlyRunning({ ...scoped, ...mcp.tools }, only) : { ...scoped, ...mcp.tools };
  return applyToolPolicies(options.wrap(offered), (name) => {
    const policy = policyOf(name, mcp.meta.get(name)?.readOnly);
    // A tool that does not run now asks nobody: its call answers at once that it cannot run.
    return only && !only.includes(name) && policy === "ask" ? "auto" : policy;
  });
}

/** The tools with every one but `only` answering, instead of running, that it cannot run in this turn. */
function onlyRunning(tools: ToolSet, only: readonly string[]): ToolSet {
  const limited: ToolSet = {};
  for (const [name, definition] of Object.entries(tools)) {
    limited[name] = only.includes(name) ? definition : { ...definition, execute: async () => notNowResult(only) };
  }
  return limited;
}

/** What a tool called when it may not run says (the wrap-up of a session: only the briefing tool). */
function notNowResult(only: readonly string[]): string {
  return `(not run: only ${only.join(" or ")} can be called now, at the end of this session; new work waits for the next one)`;
}

/**
 * The tools an agent is offered under its policies (a `deny` tool is not offered at all)
 * and the SDK's `toolApproval` for the `ask` ones: their calls are not executed, and the
 * step's result carries a `tool-approval-request` for each (see approvals.ts).
 */
function applyToolPolicies<T extends ToolSet>(tools: T, policyOf: (toolName: string) => ToolPolicy) {
  const offered: ToolSet = {};
  for (const [name, definition] of Object.entries(tools)) {
    if (policyOf(name) !== "deny") offered[name] = definition;
  }
  return {
    tools: offered as T,
    toolApproval: ({ toolCall }: { toolCall: { toolName: string } }) =>
      policyOf(toolCall.toolName) === "ask" ? ("user-approval" as const) : undefined,
  };
}

/**
 * Checks input the person edited against the tool's schema before it is approved, so an
 * edit that the tool would refuse is a 400 that names the field, not a failed call later.
 */
export async function validateToolInput(
  toolName: string,
  role: AgentRole,
  mode: "background" | "foreground",
  input: unknown,
): Promise<unknown> {
  const definition = definitions(role, mode === "background" ? "work" : "chat")[toolName];
  if (!definition) return input;
  const checked = await asSchema(definition.inputSchema).validate?.(input);
  if (checked?.success) {
    // The schema would drop a field it does not know; the person meant it, so they hear it does not exist.
    const known = checked.value && typeof checked.value === "object" ? Object.keys(checked.value) : [];
    const unknown = input && typeof input === "object" ? Object.keys(input).filter((key) => !known.includes(key)) : [];
    if (unknown.length > 0) {
      throw new CadreError(
        "bad_request:approval_input",
        `The edited input does not fit ${toolName}: ${unknown.join(", ")} ${unknown.length === 1 ? "is not one of its fields" : "are not among its fields"}.`,
      );
    }
    return checked.value;
  }
  if (!checked) return input;
  const issues = (checked.error as { issues?: { path: PropertyKey[]; message: string }[] }).issues
    ?.map((issue) => `${issue.path.map(String).join(".") || "input"}: ${issue.message}`)
    .join("; ");
  throw new CadreError(
    "bad_request:approval_input",
    `The edited input does not fit ${toolName}: ${issues || checked.error.message}`,
    { cause: checked.error },
  );
}

export type ToolPolicies = {
  tools: ToolInfo[];
  /** The team's rules by tool name (a tool without one has its default). */
  team: Record<string, ToolPolicy>;
  /** Each agent's overrides by tool name. */
  agents: Record<string, Record<string, ToolPolicy>>;
};

export async function listToolPolicies(db: Db, teamId: string): Promise<ToolPolicies> {
  const [rules, servers] = await Promise.all([listToolPolicyRules(db, teamId), listMcpServers(db, teamId)]);
  const team: Record<string, ToolPolicy> = {};
  const agents: Record<string, Record<string, ToolPolicy>> = {};
  for (const rule of rules) {
    if (rule.agentId === null) team[rule.toolName] = rule.policy;
    else agents[rule.agentId] = { ...agents[rule.agentId], [rule.toolName]: rule.policy };
  }
  return { tools: [...toolCatalogue(), ...mcpCatalogue(servers)], team, agents };
}

/** The team's MCP tools as their servers last listed them. */
function mcpCatalogue(servers: readonly McpServer[]): ToolInfo[] {
  return servers.flatMap((server) => {
    const names = mcpToolNames(server.name, server.tools);
    return server.tools.map((tool) => {
      const name = names.get(tool.name)!;
      return {
        name,
        description: `[MCP server ${server.name}] ${tool.description}`,
        availableTo: ["lead", "subordinate", "chat"] as ToolInfo["availableTo"],
        effects: "outside" as const,
        defaultPolicy: defaultToolPolicy(name, tool.readOnly),
      };
    });
  });
}

/**
 * Sets the team's rule for a tool, or an agent's override (the agent must be of the team),
 * under the team's lock; a policy of null removes the rule. An unknown tool is a 400.
 */
export async function setToolPolicy(
  db: Db,
  teamId: string,
  rule: { toolName: string; policy: ToolPolicy | null; agentId: string | null },
): Promise<void> {
  // An MCP tool may get its rule before its server is reachable: any SERVER__TOOL of one of the team's servers.
  const servers = isMcpToolName(rule.toolName) ? await listMcpServers(db, teamId) : [];
  const mcpKnown = servers.some((server) => rule.toolName.startsWith(`${server.name}${MCP_SEPARATOR}`));
  if (!isKnownTool(rule.toolName) && !mcpKnown) {
    throw new CadreError(
      "bad_request:tool",
      `There is no tool "${rule.toolName}". Tools: ${toolCatalogue()
        .map((tool) => tool.name)
        .join(", ")}, and NAME__TOOL for the team's MCP servers.`,
    );
  }
  await writeUnderTeam(db, teamId, async (tx) => {
    if (rule.agentId) {
      const agent = await getAgent(tx, rule.agentId);
      if (!agent || agent.teamId !== teamId) throw notFound("agent", rule.agentId);
    }
    await setToolPolicyRule(tx, { teamId, ...rule });
  });
}
