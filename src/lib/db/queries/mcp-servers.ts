import "server-only";
import { and, asc, eq, inArray, isNotNull, sql } from "drizzle-orm";
import { notFound } from "@/lib/errors";
import type { Db } from "../client";
import { mcpServers, type McpServer, type McpToolInfo, type McpTransport } from "../schema";

export type NewMcpServer = {
  teamId: string;
  name: string;
  transport: McpTransport;
  url?: string | null;
  headers?: Record<string, string>;
  command?: string | null;
  args?: string[];
  env?: Record<string, string>;
  callTimeoutMs?: number;
};

export type McpServerChanges = Partial<Omit<NewMcpServer, "teamId" | "transport">> & { enabled?: boolean };

export async function createMcpServer(db: Db, input: NewMcpServer): Promise<McpServer> {
  const [row] = await db.insert(mcpServers).values(input).returning();
  return row!;
}

export async function getMcpServer(db: Db, serverId: string): Promise<McpServer | null> {
  const [row] = await db.select().from(mcpServers).where(eq(mcpServers.id, serverId));
  return row ?? null;
}

export async function requireMcpServer(db: Db, serverId: string): Promise<McpServer> {
  const server = await getMcpServer(db, serverId);
  if (!server) throw notFound("mcp_server", serverId);
  return server;
}

/** A team's servers, in the order they were added. */
export function listMcpServers(db: Db, teamId: string, options: { enabledOnly?: boolean } = {}): Promise<McpServer[]> {
  return db
    .select()
    .from(mcpServers)
    .where(
      options.enabledOnly
        ? and(eq(mcpServers.teamId, teamId), eq(mcpServers.enabled, true))
        : eq(mcpServers.teamId, teamId),
    )
    .orderBy(asc(mcpServers.createdAt));
}

export async function updateMcpServer(db: Db, serverId: string, changes: McpServerChanges): Promise<McpServer> {
  const [row] = await db
    .update(mcpServers)
    .set({ ...changes, updatedAt: sql`now()` })
    .where(eq(mcpServers.id, serverId))
    .returning();
  if (!row) throw notFound("mcp_server", serverId);
  return row;
}

export async function deleteMcpServer(db: Db, serverId: string): Promise<void> {
  await db.delete(mcpServers).where(eq(mcpServers.id, serverId));
}

/**
 * What a connection found: its tools, or why it (or a call) failed. Written by whichever
 * process connected. A connection that works does not clear the last error: a server whose
 * every call fails connects fine each time, and its error must stay on the page. The error
 * goes when a call succeeds or the person clears it (clearMcpServerError).
 */
export async function recordMcpServerState(
  db: Db,
  serverId: string,
  state: { tools: McpToolInfo[] } | { error: string },
): Promise<void> {
  await db
    .update(mcpServers)
    .set(
      "tools" in state
        ? { tools: state.tools, lastConnectedAt: sql`now()` }
        : { lastError: state.error, lastErrorAt: sql`now()` },
    )
    .where(eq(mcpServers.id, serverId));
}

/** Forgets the server's last error (a call succeeded, or the person cleared it); a no-op write when there is none. */
export async function clearMcpServerError(db: Db, serverId: string): Promise<void> {
  await db
    .update(mcpServers)
    .set({ lastError: null, lastErrorAt: null })
    .where(and(eq(mcpServers.id, serverId), isNotNull(mcpServers.lastError)));
}

/** Of these server ids, the ones that still exist and are enabled. */
export async function listEnabledMcpServerIds(db: Db, serverIds: string[]): Promise<Set<string>> {
  if (serverIds.length === 0) return new Set();
  const rows = await db
    .select({ id: mcpServers.id })
    .from(mcpServers)
    .where(and(inArray(mcpServers.id, serverIds), eq(mcpServers.enabled, true)));
  return new Set(rows.map((row) => row.id));
}
