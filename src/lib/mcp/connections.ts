import "server-only";
import { createHash } from "node:crypto";
import { createMCPClient, type ListToolsResult, type MCPClient } from "@ai-sdk/mcp";
import type { ChildProcess } from "node:child_process";
import { StdioMCPTransport } from "@ai-sdk/mcp/mcp-stdio";
import type { McpServer, McpToolInfo } from "@/lib/db/schema";
import { checkedAddresses, outboundPolicy, policyFetch, type OutboundPolicy } from "@/lib/http/outbound-url";

/**
 * Connections to MCP servers, one per server per process (the worker for work sessions,
 * the web process for the chat), kept on globalThis so dev reloads reuse them. Opened
 * lazily on first use, reused across sessions, dropped after a failure (the next use
 * connects again) or when the server's settings change, and closed on shutdown.
 */
export type McpConnection = {
  client: MCPClient;
  definitions: ListToolsResult;
  tools: McpToolInfo[];
  /** A stdio server's command that has exited, in words ("The server's command exited with code 7: …"); null while it runs, and for HTTP. */
  exited: () => string | null;
};

type Entry = { key: string; connection: Promise<McpConnection> };
const holder = globalThis as typeof globalThis & { cadreMcpConnections?: Map<string, Entry> };
const pool = (): Map<string, Entry> => (holder.cadreMcpConnections ??= new Map());

/** How long connecting and listing may take before the server counts as down. */
const MCP_CONNECT_TIMEOUT_MS = 10_000;

/** What identifies a connection: the settings it was made with (an edit makes a new one). */
function settingsKey(server: McpServer): string {
  const settings = [server.transport, server.url, server.headers, server.command, server.args, server.env];
  return createHash("sha256").update(JSON.stringify(settings)).digest("hex");
}

/**
 * Opens a client and lists its tools, or fails within `timeoutMs` with the reason. An HTTP
 * server is reached under the outbound-URL policy: checked before connecting (a clear refusal
 * rather than the client's own error), then every request the client makes is checked again
 * as it connects (policyFetch), since the name may resolve elsewhere by then.
 */
export async function openMcpConnection(
  server: McpServer,
  timeoutMs = MCP_CONNECT_TIMEOUT_MS,
  policy: OutboundPolicy = outboundPolicy(),
): Promise<McpConnection> {
  if (server.transport === "http") await checkedAddresses(new URL(server.url!), policy);
  const stdio =
    server.transport === "stdio"
      ? new WatchedStdioTransport({ command: server.command!, args: server.args, env: server.env, stderr: "pipe" })
      : null;
  const transport = stdio ?? {
    type: "http" as const,
    url: server.url!,
    headers: server.headers,
    redirect: "error" as const,
    fetch: policyFetch(policy),
  };
  let client: MCPClient | undefined;
  try {
    client = await createMCPClient({
      transport,
      clientName: "cadre",
      initializationOptions: { timeout: timeoutMs },
      // Servers send notifications this client does not ask for (logging, list changes): not a
      // broken connection. A transport that really broke fails its next call, which drops it.
      onUncaughtError: () => {},
    });
    const definitions = await client.listTools({ options: { timeout: timeoutMs } });
    const tools = definitions.tools.map((tool) => ({
      name: tool.name,
      description: tool.description ?? "",
      readOnly: tool.annotations?.readOnlyHint === true,
    }));
    return { client, definitions, tools, exited: () => stdio?.exitDescription() ?? null };
  } catch (error) {
    await (client ?? stdio)?.close().catch(() => {});
    // The client only knows its pipe closed ("… closed client"): the command's exit says why.
    const exited = stdio?.exitDescription();
    if (exited) throw new Error(exited, { cause: error });
    throw error;
  }
}

/**
 * The stdio transport, watching its child: a command that exits (a wrong path, a missing
 * argument, a crash at start) is reported with its exit code and the last line it wrote to
 * stderr. Of stderr only that last line is kept (the server's log is not the worker's log).
 */
class WatchedStdioTransport extends StdioMCPTransport {
  private exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private lastStderrLine = "";

  override async start(): Promise<void> {
    await super.start();
    // The transport keeps its child private; it is there once started (spawned).
    const child = (this as unknown as { process?: ChildProcess }).process;
    child?.on("exit", (code, signal) => {
      this.exit = { code, signal };
    });
    let pending = "";
    child?.stderr?.setEncoding("utf8");
    child?.stderr?.on("data", (chunk: string) => {
      const lines = (pending + chunk).split(/\r?\n/);
      pending = (lines.pop() ?? "").slice(-1000);
      const last = lines
        .map((line) => line.trim())
        .filter(Boolean)
        .at(-1);
      if (last) this.lastStderrLine = last;
    });
    child?.stderr?.on("end", () => {
      if (pending.trim()) this.lastStderrLine = pending.trim();
    });
  }

  /** "The command exited with code 1: <its last stderr line>", or null while it runs. */
  exitDescription(): string | null {
    if (!this.exit) return null;
    const how = this.exit.code !== null ? `exited with code ${this.exit.code}` : `was ended by ${this.exit.signal}`;
    const said = this.lastStderrLine ? `: ${this.lastStderrLine.slice(0, 300)}` : " (it wrote nothing to stderr)";
    return `The server's command ${how}${said}`;
  }
}

/**
 * A pooled connection and the calls running on it: one that is replaced (its settings
 * changed) or dropped is closed only once those calls have ended, so an edit never cuts off
 * a call a server already started.
 */
type PooledEntry = Entry & { inFlight: number; retired: boolean };

/** A server that failed to connect is not tried again for this long: a hung server must not cost every turn its timeout. */
const MCP_RETRY_AFTER_MS = 60_000;
const failures = new Map<string, { key: string; until: number; reason: string }>();

/** Why this server is skipped for now (it failed to connect a moment ago), or null. */
export function recentMcpFailure(server: McpServer): string | null {
  const failure = failures.get(server.id);
  if (!failure || failure.key !== settingsKey(server) || failure.until < Date.now()) return null;
  return failure.reason;
}

/** The process's connection to this server, opened now if there is none (or its settings changed). */
export function mcpConnection(server: McpServer): Promise<McpConnection> {
  return pooledEntry(server).connection;
}

function pooledEntry(server: McpServer): PooledEntry {
  const key = settingsKey(server);
  const existing = pool().get(server.id) as PooledEntry | undefined;
  if (existing?.key === key) return existing;
  if (existing) retire(server.id, existing);
  const connection = openMcpConnection(server);
  const entry: PooledEntry = { key, connection, inFlight: 0, retired: false };
  pool().set(server.id, entry);
  failures.delete(server.id);
  // A failed connection is not kept: the next call after the back-off tries again.
  connection.catch((error: unknown) => {
    failures.set(server.id, {
      key,
      until: Date.now() + MCP_RETRY_AFTER_MS,
      reason: error instanceof Error ? error.message : String(error),
    });
    if (pool().get(server.id) === entry) pool().delete(server.id);
  });
  return entry;
}

/** Runs `use` on the server's connection, counted as in flight, so retiring the connection waits for it. */
export async function withMcpConnection<T>(
  server: McpServer,
  use: (connection: McpConnection) => Promise<T>,
): Promise<T> {
  let entry = pooledEntry(server);
  // A stdio server that exited since its last call (a crash between turns) is started again
  // before this call rather than failing it with the client's "closed client".
  if ((await entry.connection.catch(() => null))?.exited()) {
    retire(server.id, entry);
    entry = pooledEntry(server);
  }
  entry.inFlight += 1;
  try {
    return await use(await entry.connection);
  } finally {
    entry.inFlight -= 1;
    if (entry.retired && entry.inFlight === 0) closeEntry(entry);
  }
}

function retire(serverId: string, entry: PooledEntry): void {
  if (pool().get(serverId) === entry) pool().delete(serverId);
  entry.retired = true;
  if (entry.inFlight === 0) closeEntry(entry);
}

function closeEntry(entry: Entry): void {
  void entry.connection.then((connection) => connection.client.close()).catch(() => {});
}

/** Drops a connection that failed, once its other calls have ended; the next use reconnects. */
export function forgetMcpConnection(serverId: string): void {
  const entry = pool().get(serverId) as PooledEntry | undefined;
  if (entry) retire(serverId, entry);
  failures.delete(serverId);
}

/**
 * Closes the connections of servers that are gone or turned off (deleted, disabled, their
 * team deleted): a stdio server is a child process, and it must not outlive its settings.
 * `stillWanted` answers which of the pooled server ids still exist and are enabled.
 */
export async function pruneMcpConnections(stillWanted: (serverIds: string[]) => Promise<Set<string>>): Promise<number> {
  const ids = [...pool().keys()];
  if (ids.length === 0) return 0;
  const wanted = await stillWanted(ids);
  let closed = 0;
  for (const id of ids) {
    if (wanted.has(id)) continue;
    const entry = pool().get(id) as PooledEntry | undefined;
    if (entry) retire(id, entry);
    closed += 1;
  }
  return closed;
}

/** Closes every connection of this process (worker shutdown). */
export async function closeMcpConnections(): Promise<void> {
  const entries = [...pool().values()];
  pool().clear();
  failures.clear();
  await Promise.all(
    entries.map((entry) => entry.connection.then((connection) => connection.client.close()).catch(() => {})),
  );
}
