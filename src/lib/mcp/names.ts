// How MCP tools are named and scoped: pure, so the team page (a client component) uses the
// same rules as the engine.
import type { ToolScope } from "@/lib/db/schema";

/** Between a server's name and its tool's: `github__create_issue`. */
export const MCP_SEPARATOR = "__";

/** Provider tool names allow letters, digits, `_` and `-`, up to 64: anything else becomes `_`. */
export function mcpToolName(serverName: string, toolName: string): string {
  return `${serverName}${MCP_SEPARATOR}${toolName}`.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
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
