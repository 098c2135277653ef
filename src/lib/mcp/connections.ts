import { createHash } from "node:crypto";
import { createMCPClient, type ListToolsResult, type MCPClient } from "@ai-sdk/mcp";
import { Experimental_StdioMCPTransport } from "@ai-sdk/mcp/mcp-stdio";
import type { McpServer, McpToolInfo } from "@/lib/db/schema";

/**
 * Connections to MCP servers, one per server per process (the worker for work sessions,
 * the web process for the chat), kept on globalThis so dev reloads reuse them. Opened
 * lazily on first use, reused across sessions, dropped after a failure (the next use
 * connects again) or when the server's settings change, and closed on shutdown.
 */
export type McpConnection = { client: MCPClient; definitions: ListToolsResult; tools: McpToolInfo[] };

type Entry = { key: string; connection: Promise<McpConnection> };
const holder = globalThis as typeof globalThis & { cadreMcpConnections?: Map<string, Entry> };
const pool = (): Map<string, Entry> => (holder.cadreMcpConnections ??= new Map());

/** How long connecting and listing may take before the server counts as down. */
export const MCP_CONNECT_TIMEOUT_MS = 10_000;

/** What identifies a connection: the settings it was made with (an edit makes a new one). */
function settingsKey(server: McpServer): string {
  const settings = [server.transport, server.url, server.headers, server.command, server.args, server.env];
  return createHash("sha256").update(JSON.stringify(settings)).digest("hex");
}

/** Opens a client and lists its tools, or fails within `timeoutMs` with the reason. */
export async function openMcpConnection(server: McpServer, timeoutMs = MCP_CONNECT_TIMEOUT_MS): Promise<McpConnection> {
  const transport =
    server.transport === "http"
      ? { type: "http" as const, url: server.url!, headers: server.headers, redirect: "error" as const }
      : // A server's own log goes nowhere: its stderr is not the worker's log.
        new Experimental_StdioMCPTransport({ command: server.command!, args: server.args, env: server.env, stderr: "ignore" });
  // Declared first: the transport can fail while the client is still being created, and that error must be the one thrown.
  let created: MCPClient | undefined;
  const client = (created = await createMCPClient({
    transport,
    clientName: "cadre",
    initializationOptions: { timeout: timeoutMs },
    // A transport that breaks later (the server exits) is noticed here; the next use reconnects.
    onUncaughtError: () => {
      if (created) forgetMcpConnection(server.id, created);
    },
  }));
  try {
    const definitions = await client.listTools({ options: { timeout: timeoutMs } });
    const tools = definitions.tools.map((tool) => ({
      name: tool.name,
      description: tool.description ?? "",
      readOnly: tool.annotations?.readOnlyHint === true,
    }));
    return { client, definitions, tools };
  } catch (error) {
    await client.close().catch(() => {});
    throw error;
  }
}

/** The process's connection to this server, opened now if there is none (or its settings changed). */
export function mcpConnection(server: McpServer): Promise<McpConnection> {
  const key = settingsKey(server);
  const existing = pool().get(server.id);
  if (existing?.key === key) return existing.connection;
  if (existing) void existing.connection.then((old) => old.client.close()).catch(() => {});
  const connection = openMcpConnection(server);
  pool().set(server.id, { key, connection });
  // A failed connection is not kept: the next call tries again.
  connection.catch(() => {
    if (pool().get(server.id)?.connection === connection) pool().delete(server.id);
  });
  return connection;
}

/** Drops a connection that failed (only the one that failed: a newer one stays). */
export function forgetMcpConnection(serverId: string, client?: MCPClient): void {
  const entry = pool().get(serverId);
  if (!entry) return;
  void entry.connection
    .then((connection) => {
      if (client && connection.client !== client) return;
      if (pool().get(serverId) === entry) pool().delete(serverId);
      return connection.client.close();
    })
    .catch(() => {
      if (pool().get(serverId) === entry) pool().delete(serverId);
    });
}

/** Closes every connection of this process (worker shutdown). */
export async function closeMcpConnections(): Promise<void> {
  const entries = [...pool().values()];
  pool().clear();
  await Promise.all(entries.map((entry) => entry.connection.then((connection) => connection.client.close()).catch(() => {})));
}
