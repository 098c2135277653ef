import "server-only";
import { z } from "zod";
import type { Db } from "@/lib/db/client";
import { isUniqueViolation } from "@/lib/db/errors";
import {
  clearMcpServerError,
  createMcpServer,
  deleteMcpServer,
  listMcpServers,
  recordMcpServerState,
  requireMcpServer,
  updateMcpServer,
} from "@/lib/db/queries/mcp-servers";
import { updateAgent } from "@/lib/db/queries/agents";
import { writeUnderAgent, writeUnderTeam } from "@/lib/db/queries/teams";
import type { Agent, McpServer, McpToolInfo, ToolScope } from "@/lib/db/schema";
import { CadreError } from "@/lib/errors";
import { outboundUrlProblem, privateAddressesAllowed, type OutboundPolicy } from "@/lib/http/outbound-url";
import { forgetMcpConnection, openMcpConnection } from "./connections";
import { renamedMcpTools } from "./names";
import { describeMcpError, redactSecrets } from "./tools";

/** What a page is shown of a server: everything but the secrets (header and environment values). */
export type McpServerView = Omit<McpServer, "headers" | "env"> & { headerNames: string[]; envNames: string[] };

export function mcpServerView(server: McpServer): McpServerView {
  const { headers, env, ...rest } = server;
  return { ...rest, headerNames: Object.keys(headers), envNames: Object.keys(env) };
}

const name = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9_-]{1,40}$/, "1 to 40 letters, digits, - or _ (it prefixes the server's tools: NAME__TOOL)")
  // NAME__TOOL is split at its first "__": a name with "__" in it, or ending in "_", would split wrong.
  .refine(
    (value) => !value.includes("__") && !value.endsWith("_"),
    "no double underscore and no _ at the end (NAME__TOOL is split at the first __)",
  );
const secrets = z
  .record(z.string().trim().min(1).max(200), z.string().max(8000))
  .refine((value) => Object.keys(value).length <= 50, "at most 50 entries");
/** A header name is an HTTP token (RFC 9110 §5.1). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * Header names and values checked when they are saved: a line break in a value (or a name that
 * is no token) is refused by fetch only when the server is first reached, as an error far from
 * the form that caused it; here it is a 400 whose path names the header.
 */
const headers = secrets.superRefine((value, context) => {
  for (const [headerName, headerValue] of Object.entries(value)) {
    if (!HEADER_NAME.test(headerName)) {
      context.addIssue({
        code: "custom",
        path: [headerName],
        message: "not a valid header name (letters, digits and ! # $ % & ' * + - . ^ _ ` | ~ only)",
      });
    } else if (/[\r\n\0]/.test(headerValue)) {
      context.addIssue({
        code: "custom",
        path: [headerName],
        message: "a header value may not contain a line break (CR or LF) or NUL",
      });
    }
  }
});
const callTimeoutMs = z.number().int().min(1000).max(600_000);

export const newMcpServerBody = z.discriminatedUnion("transport", [
  z.strictObject({
    transport: z.literal("http"),
    name,
    url: z.url({ protocol: /^https?$/, error: "an http(s) address of a streamable HTTP MCP endpoint" }).max(2000),
    headers: headers.default({}),
    callTimeoutMs: callTimeoutMs.optional(),
  }),
  z.strictObject({
    transport: z.literal("stdio"),
    name,
    command: z.string().trim().min(1).max(1000),
    args: z.array(z.string().max(4000)).max(100).default([]),
    env: secrets.default({}),
    callTimeoutMs: callTimeoutMs.optional(),
  }),
]);

/** Changes; `headers` or `env`, when given, replace the stored ones whole (values are never sent back to be edited). */
export const mcpServerChangesBody = z.strictObject({
  name: name.optional(),
  url: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .optional(),
  headers: headers.optional(),
  command: z.string().trim().min(1).max(1000).optional(),
  args: z.array(z.string().max(4000)).max(100).optional(),
  env: secrets.optional(),
  enabled: z.boolean().optional(),
  callTimeoutMs: callTimeoutMs.optional(),
  /** true: the person has seen the server's last error and clears it (it stays until then, or until a call succeeds). */
  clearError: z.literal(true).optional(),
});

function nameTaken(error: unknown, serverName: string | undefined): never {
  if (isUniqueViolation(error))
    throw new CadreError("conflict:mcp_server_name", `This team already has an MCP server named "${serverName}".`, {
      cause: error,
    });
  throw error;
}

/** An address Cadre will not connect to (credentials in it, a refused address) is a 400 when it is saved. */
function requireReachableUrl(url: string | undefined, options: { allowPrivate?: boolean }): void {
  if (url === undefined) return;
  const problem = outboundUrlProblem(url, { allowPrivate: options.allowPrivate ?? privateAddressesAllowed() });
  if (problem) throw new CadreError("bad_request:mcp_server", `url ${problem}.`);
}

export async function addMcpServer(
  db: Db,
  teamId: string,
  input: z.input<typeof newMcpServerBody>,
  options: { allowPrivate?: boolean } = {},
): Promise<McpServer> {
  const body = newMcpServerBody.parse(input);
  if (body.transport === "http") requireReachableUrl(body.url, options);
  return writeUnderTeam(db, teamId, (tx) => createMcpServer(tx, { teamId, ...body })).catch((error: unknown) =>
    nameTaken(error, body.name),
  );
}

export async function changeMcpServer(
  db: Db,
  serverId: string,
  changes: z.infer<typeof mcpServerChangesBody>,
  options: { allowPrivate?: boolean } = {},
): Promise<McpServer> {
  requireReachableUrl(changes.url, options);
  const server = await requireMcpServer(db, serverId);
  if (
    server.transport === "http" &&
    (changes.command !== undefined || changes.args !== undefined || changes.env !== undefined)
  ) {
    throw new CadreError(
      "bad_request:mcp_server",
      "An HTTP server has a url and headers; command, args and env are for stdio servers.",
    );
  }
  if (server.transport === "stdio" && (changes.url !== undefined || changes.headers !== undefined)) {
    throw new CadreError(
      "bad_request:mcp_server",
      "A stdio server has a command, args and env; url and headers are for HTTP servers.",
    );
  }
  const { clearError, ...settings } = changes;
  const updated = await writeUnderTeam(db, server.teamId, async (tx) => {
    if (clearError) await clearMcpServerError(tx, serverId);
    return updateMcpServer(tx, serverId, settings);
  }).catch((error: unknown) => nameTaken(error, changes.name));
  // A new address or secret makes a new connection anyway (its settings are the pool's key);
  // turned off, its connection closes once the calls on it end. A new name or timeout keeps it.
  if (changes.enabled === false) forgetMcpConnection(serverId);
  return updated;
}

export async function removeMcpServer(db: Db, serverId: string): Promise<void> {
  const server = await requireMcpServer(db, serverId);
  await writeUnderTeam(db, server.teamId, (tx) => deleteMcpServer(tx, serverId));
  forgetMcpConnection(serverId);
}

export function listMcpServerViews(db: Db, teamId: string): Promise<McpServerView[]> {
  return listMcpServers(db, teamId).then((servers) => servers.map(mcpServerView));
}

/** How long Test connection waits for the server to answer with its tools. */
const TEST_CONNECTION_TIMEOUT_MS = 2000;

export type McpTestResult =
  | { ok: true; tools: McpToolInfo[]; renamed: { tool: string; as: string }[]; ms: number }
  | { ok: false; error: string; ms: number };

/**
 * Test connection: a fresh connection (not the pooled one), its tools listed within 2 s or
 * the reason it failed; the server's state is updated either way. `renamed`: tools whose names
 * clash once made fit for the model (see mcpToolNames), under the name agents see them by.
 */
export async function testMcpServer(db: Db, serverId: string, policy?: OutboundPolicy): Promise<McpTestResult> {
  const server = await requireMcpServer(db, serverId);
  const started = Date.now();
  try {
    const connection = await openMcpConnection(server, TEST_CONNECTION_TIMEOUT_MS, policy);
    await connection.client.close().catch(() => {});
    await recordMcpServerState(db, serverId, { tools: connection.tools });
    return {
      ok: true,
      tools: connection.tools,
      renamed: renamedMcpTools(server.name, connection.tools),
      ms: Date.now() - started,
    };
  } catch (error) {
    const reason = redactSecrets(describeMcpError(error), server);
    await recordMcpServerState(db, serverId, { error: reason });
    return { ok: false, error: reason, ms: Date.now() - started };
  }
}

export const toolScopeBody = z.strictObject({
  /** null: every tool of the agent's role and every MCP server of its team. */
  scope: z
    .strictObject({
      allow: z
        .array(
          z
            .string()
            .trim()
            .min(1)
            .max(200)
            .regex(/^[A-Za-z0-9_*-]+$/, "tool names: letters, digits, _, - (and SERVER__* for a whole server)"),
        )
        .max(500),
    })
    .nullable(),
});

/** Which tools an agent may use (see scopeAllows), under the team's lock. */
export async function setToolScope(db: Db, agentId: string, scope: ToolScope | null): Promise<Agent> {
  return writeUnderAgent(db, agentId, (tx) => updateAgent(tx, agentId, { toolScope: scope }));
}
