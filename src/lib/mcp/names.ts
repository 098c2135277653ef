// How MCP tools are named and scoped: pure, so the team page (a client component) uses the
// same rules as the engine.
import type { ToolScope } from "@/lib/db/schema";

/** Between a server's name and its tool's: `github__create_issue`. */
export const MCP_SEPARATOR = "__";

/** Provider tool names allow letters, digits, `_` and `-`, up to 64: anything else becomes `_`. */
function mcpToolName(serverName: string, toolName: string): string {
  return `${serverName}${MCP_SEPARATOR}${toolName}`.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
}

/**
 * Every tool of one server under a name of its own. Sanitizing can make two names one
 * (`get.page` and `get_page` both become `SERVER__get_page`), which would leave one of them
 * unreachable: the first the server lists keeps the plain name, each later one gets the first
 * free `_2`, `_3`, … (by the server's order, so the names stay put while its list does). Keyed
 * by the tool's own name; the page and the engine both use this, so a scope names the same tool.
 */
export function mcpToolNames(serverName: string, tools: readonly { name: string }[]): Map<string, string> {
  const plain = tools.map((tool) => mcpToolName(serverName, tool.name));
  const taken = new Set<string>();
  const given: (string | undefined)[] = plain.map((name) => {
    if (taken.has(name)) return undefined;
    taken.add(name);
    return name;
  });
  for (const [index, name] of given.entries()) {
    if (name !== undefined) continue;
    let free = plain[index]!;
    for (let suffix = 2; taken.has(free); suffix += 1)
      free = `${plain[index]!.slice(0, 64 - `_${suffix}`.length)}_${suffix}`;
    taken.add(free);
    given[index] = free;
  }
  const names = new Map<string, string>();
  for (const [index, tool] of tools.entries()) names.set(tool.name, given[index]!);
  return names;
}

/** The tools whose name was changed to keep it apart from another's (see mcpToolNames), for Test connection to say so. */
export function renamedMcpTools(
  serverName: string,
  tools: readonly { name: string }[],
): { tool: string; as: string }[] {
  const names = mcpToolNames(serverName, tools);
  return tools.flatMap((tool) => {
    const given = names.get(tool.name)!;
    return given === mcpToolName(serverName, tool.name) ? [] : [{ tool: tool.name, as: given }];
  });
}

export function isMcpToolName(name: string): boolean {
  return name.includes(MCP_SEPARATOR);
}

/**
 * Whether an agent's scope lets it use a tool: no scope, everything; otherwise the tool's
 * own name, or `SERVER__*` for every tool of a server.
 */
export function scopeAllows(scope: ToolScope | null | undefined, name: string): boolean {
  if (!scope) return true;
  if (scope.allow.includes(name)) return true;
  const server = name.split(MCP_SEPARATOR)[0];
  return isMcpToolName(name) && scope.allow.includes(`${server}${MCP_SEPARATOR}*`);
}
