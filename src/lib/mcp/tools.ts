import "server-only";
import type { ToolSet } from "ai";
import type { Db } from "@/lib/db/client";
import {
  clearMcpServerError,
  listEnabledMcpServerIds,
  listMcpServers,
  recordMcpServerState,
} from "@/lib/db/queries/mcp-servers";
import type { Agent, McpServer, McpToolInfo } from "@/lib/db/schema";
import { abortable } from "@/lib/util/abortable";
import { logError } from "@/lib/telemetry/log";
import { maskUrl } from "@/lib/util/redact";
import {
  forgetMcpConnection,
  mcpConnection,
  pruneMcpConnections,
  recentMcpFailure,
  withMcpConnection,
  type McpConnection,
} from "./connections";
import { MCP_SEPARATOR, mcpToolNames, scopeAllows } from "./names";

// The names are client-safe (the team page builds scopes with them); the engine imports them from here too.
export { isMcpToolName, MCP_SEPARATOR, mcpToolNames, scopeAllows } from "./names";

/** What the turn knows about each MCP tool it offers: whose it is, and whether it only reads. */
export type McpToolMeta = { server: string; readOnly: boolean };

type Log = (message: string, error?: unknown) => void;

/**
 * The MCP tools an agent may use now, under their namespaced names. Each server of its team
 * that its scope reaches is connected (or its connection reused); one that cannot be
 * reached offers nothing this turn and its state says why (the team page shows it), so a
 * server that is down never keeps the agent from working with the rest.
 */
export async function mcpToolsFor(
  db: Db,
  agent: Pick<Agent, "teamId" | "toolScope">,
  log: Log,
): Promise<{ tools: ToolSet; meta: Map<string, McpToolMeta> }> {
  const tools: ToolSet = {};
  const meta = new Map<string, McpToolMeta>();
  // Connections of servers deleted or turned off since (here or in another process) close now.
  await pruneMcpConnections((ids) => listEnabledMcpServerIds(db, ids));
  const servers = (await listMcpServers(db, agent.teamId, { enabledOnly: true })).filter(
    (server) =>
      !agent.toolScope || agent.toolScope.allow.some((name) => name.startsWith(`${server.name}${MCP_SEPARATOR}`)),
  );
  await Promise.all(
    servers.map(async (server) => {
      // It failed to connect a moment ago: skipped for now, not waited for on every turn.
      if (recentMcpFailure(server)) return;
      let connection: McpConnection;
      try {
        connection = await mcpConnection(server);
      } catch (error) {
        const reason = redactSecrets(describeMcpError(error), server);
        log(`[mcp] server "${server.name}" cannot be reached: ${reason}`);
        await recordMcpServerState(db, server.id, { error: reason }).catch(notRecorded(server));
        return;
      }
      // A connection that works says nothing of the calls that failed: their error stays (see recordMcpServerState).
      if (JSON.stringify(connection.tools) !== JSON.stringify(server.tools)) {
        await recordMcpServerState(db, server.id, { tools: connection.tools }).catch(notRecorded(server));
      }
      const definitions = connection.client.toolsFromDefinitions(connection.definitions);
      const names = mcpToolNames(server.name, connection.tools);
      for (const info of connection.tools) {
        const name = names.get(info.name)!;
        const definition = definitions[info.name];
        if (!definition || !scopeAllows(agent.toolScope, name)) continue;
        meta.set(name, { server: server.name, readOnly: info.readOnly });
        tools[name] = {
          description: `[MCP server ${server.name}] ${info.description}`.slice(0, 1024),
          inputSchema: definition.inputSchema,
          execute: (input: unknown, options: { abortSignal?: AbortSignal }) =>
            callMcpTool(db, server, info, input, options.abortSignal),
        } as ToolSet[string];
      }
    }),
  );
  return { tools, meta };
}

/**
 * One call, bounded by the server's call timeout. A failure is the tool's result, in words
 * the model can act on, never an error that ends the session; the connection is dropped so
 * the next call connects again, and the team page hears why. A tool that can change things
 * and failed after it was sent may have done its part: the model is told so, not to retry.
 * The person's Stop still ends the call at once.
 */
async function callMcpTool(
  db: Db,
  server: McpServer,
  tool: McpToolInfo,
  input: unknown,
  abortSignal?: AbortSignal,
): Promise<string> {
  const timeout = AbortSignal.timeout(server.callTimeoutMs);
  const signal = abortSignal ? AbortSignal.any([abortSignal, timeout]) : timeout;
  let sent = false;
  let used: McpConnection | undefined;
  try {
    return await withMcpConnection(server, async (connection) => {
      sent = true;
      used = connection;
      const result = await abortable(
        connection.client.callTool({
          name: tool.name,
          arguments: (input ?? {}) as Record<string, unknown>,
          options: { signal, timeout: server.callTimeoutMs },
        }),
        signal,
      );
      const text = callResultText(result);
      // The server answered: what failed before is over (the team page stops showing it). One
      // write that changes nothing when there was no error; the row read at the turn's start may be stale.
      if (!result.isError) await clearMcpServerError(db, server.id).catch(notRecorded(server));
      return result.isError ? `The MCP tool ${tool.name} reported an error: ${text}` : text;
    });
  } catch (error) {
    if (abortSignal?.aborted) throw error;
    // A stdio server that died under the call: its exit says why (the client only saw its pipe close).
    // Read before the connection is dropped, whose closing ends the command itself.
    const exited = server.transport === "stdio" && /closed/i.test(describeMcpError(error)) ? await exitOf(used) : null;
    forgetMcpConnection(server.id);
    const why = timeout.aborted
      ? `it did not answer within ${Math.round(server.callTimeoutMs / 100) / 10} s`
      : redactSecrets(exited ? `${exited}; Cadre starts it again at the next call` : describeMcpError(error), server);
    await recordMcpServerState(db, server.id, { error: why }).catch(notRecorded(server));
    if (sent && !tool.readOnly) {
      return `The MCP server "${server.name}" did not finish ${tool.name}: ${why}. The call was sent, so it may have taken effect: check before calling it again. Your other tools still work.`;
    }
    return `The MCP server "${server.name}" could not run ${tool.name}: ${why}. Your other tools still work; try again later or do without it.`;
  }
}

/**
 * A server's state (its tools, its last error) that could not be written: the call's result
 * does not depend on it, so the call goes on, but the team page would show stale state and
 * the log says why once.
 */
function notRecorded(server: McpServer): (error: unknown) => void {
  return (error) =>
    logError(`[mcp] could not record the state of server "${server.name}"; the team page may show it stale:`, error);
}

/** The exit of a stdio server's command, once the exit has been seen (it lands a moment after the pipe closes). */
async function exitOf(connection: McpConnection | undefined): Promise<string | null> {
  if (!connection) return null;
  for (let waited = 0; waited < 500; waited += 50) {
    const exited = connection.exited();
    if (exited) return exited;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return null;
}

/** An error's text without the server's secrets: a bad header value, or its URL's path and query, must not end up on a page. */
export function redactSecrets(
  text: string,
  server: Pick<McpServer, "headers" | "env"> & { url?: string | null },
): string {
  let redacted = server.url ? text.split(server.url).join(maskUrl(server.url)) : text;
  for (const value of [...Object.values(server.headers), ...Object.values(server.env)]) {
    if (value.length >= 4) redacted = redacted.split(value).join("••••");
  }
  return redacted;
}

/** The text parts of a tool's result, joined; anything else as JSON. */
function callResultText(result: { content?: unknown; structuredContent?: unknown; toolResult?: unknown }): string {
  const parts = Array.isArray(result.content) ? (result.content as { type: string; text?: string }[]) : [];
  const text = parts.map((part) => (part.type === "text" ? (part.text ?? "") : JSON.stringify(part))).join("\n");
  if (text.trim()) return text;
  return JSON.stringify(result.structuredContent ?? result.toolResult ?? result.content ?? null);
}

export function describeMcpError(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return withoutResponseBody(`${error.message}${cause}`, error).slice(0, 500);
  }
  return String(error).slice(0, 500);
}

/**
 * The MCP client quotes a failed answer's body in its error ("… (HTTP 500): <body>"). Whatever
 * a server answered is not shown back on a page: for a server on a private network it may be
 * a neighbour's page. The status says enough.
 */
function withoutResponseBody(text: string, error: Error): string {
  const body = (error as { responseBody?: unknown }).responseBody;
  return typeof body === "string" && body.length > 0 ? text.split(body).join("(answer not shown)") : text;
}
