// MCP tools from real servers nobody here wrote: @modelcontextprotocol/server-everything over
// stdio and over streamable HTTP, and @modelcontextprotocol/server-memory. Tools are listed and
// called from a work session and from the chat; a server killed mid-session, a hanging call and
// a server that is down never break the session; a tool that can change things asks first; a
// worker killed during a call leaves "outcome unknown", never a silent retry.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { and, eq, like } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decideApproval } from "@/lib/engine/approvals";
import { streamChatReply } from "@/lib/engine/chat";
import { OUTCOME_UNKNOWN_RESULT } from "@/lib/core/formats";
import { assignTask } from "@/lib/domain/tasks";
import { getAllMessages, getBackgroundConversation, getForegroundConversation, getTask } from "@/lib/db/queries";
import { listAgentApprovals } from "@/lib/db/queries/approvals";
import { getMcpServer } from "@/lib/db/queries/mcp-servers";
import { inboxItems } from "@/lib/db/schema";
import { closeMcpConnections } from "@/lib/mcp/connections";
import { addMcpServer, changeMcpServer, mcpServerChangesBody, setToolScope, testMcpServer } from "@/lib/mcp/servers";
import { recordMcpServerState } from "@/lib/db/queries/mcp-servers";
import { STORED_TOOL_RESULT_MAX_CHARS } from "@/lib/engine/step-recorder";
import { JobQueue } from "@/lib/jobs/job-queue";
import { freePort } from "../../scripts/lib/embedded-postgres";
import { startFakeOpenAI, lastUserText, type FakeOpenAI } from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import { runUntilQuiet, useEngineTests } from "../support/engine";
import {
  chatAndSessionModel,
  offeredTools,
  promptText,
  sessionModel,
  textReply,
  toolCallReply,
} from "../support/mock-model";
import { toolNames } from "../support/team-play";
import { startWorkerProcess, waitFor } from "../support/worker-process";

const tests = useEngineTests();
const EVERYTHING = path.resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const MEMORY = path.resolve("node_modules/@modelcontextprotocol/server-memory/dist/index.js");
const EDGE = path.resolve("tests/support/mcp-edge-server.mjs");
const figures = { servers: 0, tools: new Set<string>(), calls: 0, failuresIsolated: 0, outcomeUnknown: 0 };
let tempDir: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  tempDir = await mkdtemp(path.join(os.tmpdir(), "cadre-mcp-"));
});
afterAll(async () => {
  await closeMcpConnections();
  for (const child of children) child.kill("SIGKILL");
  await rm(tempDir, { recursive: true, force: true });
  console.log(
    `[mcp] servers: ${figures.servers}, tools: ${figures.tools.size}, calls: ${figures.calls}, failures isolated: ${figures.failuresIsolated}, outcome unknown: ${figures.outcomeUnknown}`,
  );
});

const lastMessage = (options: Parameters<Parameters<typeof sessionModel>[0]>[0]) =>
  promptText(options.prompt.slice(-1));

/** server-everything over streamable HTTP, as its own process on a free port. */
async function startHttpEverything(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: "ignore",
  });
  children.push(child);
  const url = `http://127.0.0.1:${port}/mcp`;
  await waitFor(
    async () =>
      fetch(url, { method: "GET" }).then(
        () => true,
        () => false,
      ),
    { timeoutMs: 15_000, what: "server-everything over HTTP" },
  );
  return { url, child };
}

const stdioEverything = (name = "everything", callTimeoutMs?: number) => ({
  transport: "stdio" as const,
  name,
  command: process.execPath,
  args: [EVERYTHING, "stdio"],
  ...(callTimeoutMs ? { callTimeoutMs } : {}),
});

function noteTools(tools: readonly string[]) {
  for (const tool of tools) if (tool.includes("__")) figures.tools.add(tool);
}

describe("MCP tools in work sessions and the chat", () => {
  it("a stdio server's tools are offered namespaced and called from a work session; Test connection lists them", async () => {
    const { team, lead } = await createTeamFixture(tests.database.db);
    const server = await addMcpServer(tests.database.db, team.id, stdioEverything());
    figures.servers += 1;
    // The team page hears of the server's new state (live events: table mcp_servers).
    const events: string[] = [];
    const listening = await tests.database.sql.listen("cadre_events", (payload) => events.push(payload));
    const tested = await testMcpServer(tests.database.db, server.id);
    await waitFor(async () => events.some((event) => event.includes('"mcp_servers"') && event.includes(team.id)), {
      timeoutMs: 5000,
      what: "the mcp_servers event",
    });
    await listening.unlisten();
    expect(tested.ok).toBe(true);
    expect(tested.ms).toBeLessThan(2000);
    expect(tested.ok && tested.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["echo", "get-sum"]));
    const engine = await tests.engineWith({
      model: sessionModel((options) => {
        noteTools(offeredTools(options));
        const last = options.prompt.at(-1);
        if (/^Task from the person/.test(lastMessage(options))) {
          expect(offeredTools(options)).toEqual(
            expect.arrayContaining(["everything__echo", "everything__get-sum", "tavilySearch"]),
          );
          return toolCallReply("everything__get-sum", { a: 2, b: 40 });
        }
        if (last?.role === "tool" && /The sum of 2 and 40 is 42/.test(promptText([last])))
          return toolCallReply("everything__echo", { message: "hello from Cadre" });
        return textReply(last?.role === "tool" ? `Done: ${promptText([last]).slice(0, 200)}` : "Nothing to do.");
      }),
    });
    const task = await assignTask(tests.database.db, engine.jobs, {
      agentId: lead.id,
      source: "user",
      title: "Add and echo",
    });
    await runUntilQuiet(engine.deps, 30, { agentIds: [lead.id] });
    figures.calls += 2;
    const done = await getTask(tests.database.db, task.id);
    expect(done).toMatchObject({ status: "completed" });
    expect(done!.result).toContain("Echo: hello from Cadre");
    const stored = await getMcpServer(tests.database.db, server.id);
    expect(stored!.tools.find((tool) => tool.name === "echo")).toMatchObject({ readOnly: true });
  });

  it("an HTTP server's tools are used from the chat, and a scope limits what an agent sees", async () => {
    const { team, lead, subordinates } = await createTeamFixture(tests.database.db, { subordinates: ["Scout"] });
    const http = await startHttpEverything();
    await addMcpServer(tests.database.db, team.id, {
      transport: "http",
      name: "web",
      url: http.url,
      headers: { "x-api-key": "secret-value" },
    });
    figures.servers += 1;
    await setToolScope(tests.database.db, subordinates[0]!.id, { allow: ["web__echo", "reportToLead"] });
    const offered = new Map<string, string[]>();
    const engine = await tests.engineWith({
      model: chatAndSessionModel((options) => {
        const who = /the lead of the team|talking with the person/.test(promptText(options.prompt.slice(0, 1)))
          ? "lead"
          : "scout";
        offered.set(who, offeredTools(options));
        noteTools(offeredTools(options));
        const last = options.prompt.at(-1);
        if (last?.role === "tool") return textReply(`It said: ${promptText([last]).slice(0, 200)}`);
        if (who === "lead") return toolCallReply("web__echo", { message: "from the chat" });
        return toolCallReply("web__echo", { message: "from Scout" });
      }),
    });
    const stream = await (
      await streamChatReply(engine.deps, lead.id, "echo something", new AbortController().signal)
    ).text();
    figures.calls += 1;
    expect(stream).toContain("Echo: from the chat");
    const chat = await getAllMessages(
      tests.database.db,
      (await getForegroundConversation(tests.database.db, lead.id)).id,
    );
    expect(chat.at(-1)?.content).toContain("Echo: from the chat");
    expect(offered.get("lead")).toEqual(expect.arrayContaining(["web__echo", "web__get-sum"]));

    await assignTask(tests.database.db, engine.jobs, { agentId: subordinates[0]!.id, source: "lead", title: "Echo" });
    await runUntilQuiet(engine.deps, 30, { agentIds: [subordinates[0]!.id] });
    figures.calls += 1;
    expect(offered.get("scout")?.sort()).toEqual(["reportToLead", "web__echo"]);
  });

  it("a server killed mid-session, a hanging call and a server that is down: the model gets a clear error, the other tools and the session go on", async () => {
    const { team, lead } = await createTeamFixture(tests.database.db);
    const http = await startHttpEverything();
    await addMcpServer(tests.database.db, team.id, { transport: "http", name: "flaky", url: http.url });
    await addMcpServer(tests.database.db, team.id, { ...stdioEverything("slow", 1000) });
    const down = await addMcpServer(tests.database.db, team.id, {
      transport: "http",
      name: "down",
      url: `http://127.0.0.1:${await freePort()}/mcp`,
    });
    figures.servers += 3;
    const results: string[] = [];
    let step = 0;
    const engine = await tests.engineWith({
      model: sessionModel((options) => {
        const last = options.prompt.at(-1);
        if (last?.role === "tool") results.push(promptText([last]));
        step += 1;
        if (step === 1) {
          expect(offeredTools(options).some((name) => name.startsWith("down__"))).toBe(false);
          return toolCallReply("flaky__echo", { message: "first" });
        }
        if (step === 2) {
          http.child.kill("SIGKILL");
          return toolCallReply("flaky__echo", { message: "after the kill" });
        }
        if (step === 3) return toolCallReply("slow__trigger-long-running-operation", { duration: 10, steps: 2 });
        if (step === 4) return toolCallReply("searchKnowledge", { query: "anything" });
        return textReply("Worked around the broken servers.");
      }),
    });
    const task = await assignTask(tests.database.db, engine.jobs, {
      agentId: lead.id,
      source: "user",
      title: "Use what works",
    });
    const started = Date.now();
    await runUntilQuiet(engine.deps, 30, { agentIds: [lead.id] });
    figures.calls += 4;
    expect(results[0]).toContain("Echo: first");
    expect(results[1]).toMatch(/The MCP server \W*flaky\W* could not run echo/);
    expect(results[2]).toMatch(
      /The MCP server \W*slow\W* could not run trigger-long-running-operation: it did not answer within 1 s/,
    );
    expect(results[3]).toMatch(/No knowledge items match/);
    figures.failuresIsolated += 3;
    expect(Date.now() - started).toBeLessThan(8000); // the hanging call was cut at 1 s, not waited out (10 s)
    expect(await getTask(tests.database.db, task.id)).toMatchObject({
      status: "completed",
      result: "Worked around the broken servers.",
    });
    expect((await getMcpServer(tests.database.db, down.id))!.lastError).toBeTruthy();
  });

  it("a tool that can change things (server-memory) asks first; approved, it runs once", async () => {
    const { team, lead } = await createTeamFixture(tests.database.db);
    await addMcpServer(tests.database.db, team.id, {
      transport: "stdio",
      name: "memory",
      command: process.execPath,
      args: [MEMORY],
      env: { MEMORY_FILE_PATH: path.join(tempDir, `memory-${team.id}.jsonl`) },
    });
    figures.servers += 1;
    const results: string[] = [];
    const engine = await tests.engineWith({
      model: sessionModel((options) => {
        noteTools(offeredTools(options));
        const last = options.prompt.at(-1);
        // The decision came after the session's wrap-up: the call still reads as waiting where it
        // stands (the history never changes behind the model), and a note says what was decided, with the result.
        if (/^The person decided/.test(lastMessage(options))) {
          results.push(lastMessage(options));
          return toolCallReply("memory__read_graph", {});
        }
        if (last?.role === "tool") {
          results.push(promptText([last]));
          return textReply(`Graph: ${promptText([last]).slice(0, 300)}`);
        }
        if (/^Task from the person/.test(lastMessage(options))) {
          return toolCallReply("memory__create_entities", {
            entities: [{ name: "Ada Lovelace", entityType: "person", observations: ["wrote the first program"] }],
          });
        }
        return textReply("Nothing to do.");
      }),
    });
    const task = await assignTask(tests.database.db, engine.jobs, {
      agentId: lead.id,
      source: "user",
      title: "Remember Ada",
    });
    await runUntilQuiet(engine.deps, 30, { agentIds: [lead.id] });
    const [approval] = await listAgentApprovals(tests.database.db, lead.id);
    expect(approval).toMatchObject({ toolName: "memory__create_entities", status: "pending" });
    expect(await getTask(tests.database.db, task.id)).toMatchObject({ status: "waiting_input" });
    await decideApproval(tests.database.db, engine.jobs, approval!.id, { decision: "approve" });
    await runUntilQuiet(engine.deps, 30, { agentIds: [lead.id] });
    figures.calls += 2;
    expect(results[0]).toContain("Ada Lovelace");
    expect(results[1]).toContain("wrote the first program"); // read_graph (read-only: no approval) sees it once
    expect((results[1]!.match(/"name":\s*"Ada Lovelace"/g) ?? []).length).toBe(1);
    expect(await getTask(tests.database.db, task.id)).toMatchObject({ status: "completed" });
  });
});

describe("a worker killed during an MCP call", () => {
  let openai: FakeOpenAI;
  let jobs: JobQueue;
  afterAll(async () => {
    await jobs?.stop({ graceful: false, timeoutMs: 1000 });
    await openai?.close();
  });

  it("leaves '(outcome unknown …)', not a retry; the person is alerted", { timeout: 120_000 }, async () => {
    const { database } = tests;
    const { team, lead } = await createTeamFixture(database.db);
    await addMcpServer(database.db, team.id, stdioEverything("ops", 60_000));
    figures.servers += 1;
    let calls = 0;
    openai = await startFakeOpenAI((request) => {
      if (request.response_format) return { text: '{"items":[]}' };
      if (!toolNames(request).length) return { text: "Summary." };
      const last = request.messages.at(-1)!;
      if (last.role === "tool") return { text: "After the long operation." };
      if (/^Task from/.test(lastUserText(request))) {
        calls += 1;
        return { toolCalls: [{ name: "ops__trigger-long-running-operation", arguments: { duration: 30, steps: 3 } }] };
      }
      return { text: "Nothing to do." };
    });
    jobs = await JobQueue.start(database.url, "web", { quiet: true });
    const env = {
      DATABASE_URL: database.url,
      OPENAI_BASE_URL: openai.url,
      LLM_MODEL: "fake-model",
      SESSION_STALE_SECONDS: "2",
    };
    const first = startWorkerProcess(env);
    const task = await assignTask(database.db, jobs, {
      agentId: lead.id,
      source: "user",
      title: "Run the long operation",
    });
    const conversation = await getBackgroundConversation(database.db, lead.id);
    await waitFor(
      async () => (await getAllMessages(database.db, conversation.id)).some((message) => message.toolCalls?.length),
      {
        timeoutMs: 30_000,
        what: "the MCP call to start",
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await first.stop("SIGKILL");
    const second = startWorkerProcess(env);
    try {
      await waitFor(
        async () => (await getAllMessages(database.db, conversation.id)).some((message) => message.role === "tool"),
        {
          timeoutMs: 60_000,
          what: "the cut-off call's result",
        },
      );
      const log = await getAllMessages(database.db, conversation.id);
      const callRows = log.filter((message) => message.toolCalls?.length);
      expect(callRows).toHaveLength(1); // not run again by itself
      expect(log.find((message) => message.role === "tool")?.content).toBe(OUTCOME_UNKNOWN_RESULT);
      figures.outcomeUnknown += 1;
      const alerts = await database.db
        .select()
        .from(inboxItems)
        .where(and(eq(inboxItems.type, "alert"), like(inboxItems.dedupeKey, `outcome-unknown:${conversation.id}:%`)));
      expect(alerts).toHaveLength(1);
      expect(calls).toBe(1);
      await waitFor(async () => (await getTask(database.db, task.id))?.status === "completed", {
        timeoutMs: 30_000,
        what: "the task to end",
      });
    } finally {
      await second.stop("SIGKILL");
    }
  });
});

describe("secrets and names", () => {
  it("a header value never shows in an error, and a name that would split wrong is refused", async () => {
    const { team } = await createTeamFixture(tests.database.db);
    const server = await addMcpServer(tests.database.db, team.id, {
      transport: "http",
      name: "leaky",
      url: `http://127.0.0.1:${await freePort()}/mcp`,
      headers: { Authorization: "Bearer SUPERSECRET_VALUE" },
    });
    const tested = await testMcpServer(tests.database.db, server.id);
    expect(tested.ok).toBe(false);
    expect(!tested.ok && tested.error).not.toContain("SUPERSECRET");
    expect((await getMcpServer(tests.database.db, server.id))!.lastError).not.toContain("SUPERSECRET");
    await expect(
      addMcpServer(tests.database.db, team.id, { transport: "http", name: "u_", url: "https://x.example/mcp" }),
    ).rejects.toThrow(/no _ at the end/);
  });
});

describe("MCP edges", () => {
  it("tools whose names clash once sanitized both stay reachable, a 3 MB result is stored cut, and a failed call's error outlives a reconnect", async () => {
    const { db } = tests.database;
    const { team, lead } = await createTeamFixture(db);
    const server = await addMcpServer(db, team.id, {
      transport: "stdio",
      name: "edge",
      command: process.execPath,
      args: [EDGE],
    });
    figures.servers += 1;
    const tested = await testMcpServer(db, server.id);
    expect(tested.ok && tested.renamed).toEqual([{ tool: "get_page", as: "edge__get_page_2" }]);

    const results: string[] = [];
    const calls = ["edge__get_page", "edge__huge", "edge__broken"];
    const engine = await tests.engineWith({
      model: sessionModel((options) => {
        const last = options.prompt.at(-1);
        if (/^Task from the person.*Read the pages/s.test(lastMessage(options))) {
          expect(offeredTools(options)).toEqual(
            expect.arrayContaining(["edge__get_page", "edge__get_page_2", "edge__huge", "edge__broken"]),
          );
          return toolCallReply("edge__get_page_2", {});
        }
        if (last?.role === "tool") {
          results.push(promptText([last]));
          const next = calls[results.length - 1];
          return next ? toolCallReply(next, {}) : textReply("Done.");
        }
        return textReply("Nothing to do.");
      }),
    });
    await assignTask(db, engine.jobs, { agentId: lead.id, source: "user", title: "Read the pages" });
    await runUntilQuiet(engine.deps, 30, { agentIds: [lead.id] });
    figures.calls += 4;
    expect(results[0]).toContain("page from the underscored tool");
    expect(results[1]).toContain("page from the dotted tool");
    const log = await getAllMessages(db, (await getBackgroundConversation(db, lead.id)).id);
    const huge = log.find((message) => message.role === "tool" && message.content.startsWith("xxxx"));
    expect(huge!.content.length).toBeLessThan(STORED_TOOL_RESULT_MAX_CHARS + 100);
    expect(huge!.content).toMatch(/…\(2900000 characters cut\)$/);
    expect(results[3]).toMatch(/could not run broken/);
    const failed = await getMcpServer(db, server.id);
    expect(failed!.lastError).toMatch(/backend is down/);
    expect(failed!.lastErrorAt).toBeInstanceOf(Date);

    // The next session connects again (the failed call dropped the connection): the error stays.
    await assignTask(db, engine.jobs, { agentId: lead.id, source: "user", title: "Nothing this time" });
    await runUntilQuiet(engine.deps, 30, { agentIds: [lead.id] });
    const reconnected = await getMcpServer(db, server.id);
    expect(reconnected!.lastConnectedAt!.getTime()).toBeGreaterThanOrEqual(failed!.lastConnectedAt!.getTime());
    expect(reconnected!.lastError).toMatch(/backend is down/);
    expect(reconnected!.lastErrorAt).toEqual(failed!.lastErrorAt);
    // Test connection that works does not clear it either; the person's Clear does.
    expect((await testMcpServer(db, server.id)).ok).toBe(true);
    expect((await getMcpServer(db, server.id))!.lastError).toMatch(/backend is down/);
    await changeMcpServer(db, server.id, mcpServerChangesBody.parse({ clearError: true }));
    expect(await getMcpServer(db, server.id)).toMatchObject({ lastError: null, lastErrorAt: null });

    // A call that succeeds clears it too.
    await recordMcpServerState(db, server.id, { error: "it failed earlier" });
    const again = await tests.engineWith({
      model: sessionModel((options) => {
        const last = options.prompt.at(-1);
        if (last?.role === "tool") return textReply("Read it.");
        if (/^Task from the person/.test(lastMessage(options))) return toolCallReply("edge__get_page", {});
        return textReply("Nothing to do.");
      }),
    });
    await assignTask(db, again.jobs, { agentId: lead.id, source: "user", title: "Read the page again" });
    await runUntilQuiet(again.deps, 30, { agentIds: [lead.id] });
    figures.calls += 1;
    expect(await getMcpServer(db, server.id)).toMatchObject({ lastError: null, lastErrorAt: null });
  });

  it("a stdio command that exits at once: the error says it exited, with its code and its last stderr line", async () => {
    const { team } = await createTeamFixture(tests.database.db);
    const server = await addMcpServer(tests.database.db, team.id, {
      transport: "stdio",
      name: "gone",
      command: process.execPath,
      args: [EDGE, "exit"],
    });
    const tested = await testMcpServer(tests.database.db, server.id);
    expect(tested.ok).toBe(false);
    expect(!tested.ok && tested.error).toMatch(
      /exited with code 3: edge server: cannot read \/nonexistent\/config\.json/,
    );
    expect((await getMcpServer(tests.database.db, server.id))!.lastError).toMatch(/exited with code 3/);
  });

  it("a stdio server that dies mid-call: the result and the team page say it exited, with its code; the next call starts it again", async () => {
    const { db } = tests.database;
    const { team, lead } = await createTeamFixture(db);
    const server = await addMcpServer(db, team.id, {
      transport: "stdio",
      name: "fragile",
      command: process.execPath,
      args: [EDGE],
    });
    const results: string[] = [];
    const engine = await tests.engineWith({
      model: sessionModel((options) => {
        const last = options.prompt.at(-1);
        if (last?.role === "tool") {
          results.push(promptText([last]));
          return results.length === 1 ? toolCallReply("fragile__get_page", {}) : textReply("Done.");
        }
        if (/^Task from the person/.test(lastMessage(options))) return toolCallReply("fragile__crash", {});
        return textReply("Nothing to do.");
      }),
    });
    await assignTask(db, engine.jobs, { agentId: lead.id, source: "user", title: "Crash it" });
    await runUntilQuiet(engine.deps, 30, { agentIds: [lead.id] });
    figures.calls += 2;
    expect(results[0]).toMatch(
      /could not run crash: The server's command exited with code 7: edge server: out of memory; Cadre starts it again at the next call\./,
    );
    expect(results[0]).not.toMatch(/closed client/);
    expect(results[1]).toContain("page from the dotted tool");
    // The call after it worked, on a command started again: the team page shows no error.
    expect((await getMcpServer(db, server.id))!.lastError).toBeNull();
  });

  it("a header with a line break in its value, or a name that is no token, is refused when saved, naming the header", async () => {
    const { team } = await createTeamFixture(tests.database.db);
    const http = (headers: Record<string, string>) =>
      addMcpServer(tests.database.db, team.id, {
        transport: "http",
        name: "hdr",
        url: "https://mcp.example/mcp",
        headers,
      });
    await expect(http({ Authorization: "Bearer abc\r\nX-Injected: 1" })).rejects.toThrow(
      /"Authorization"[\s\S]*line break/,
    );
    await expect(http({ "X-Key": "abc\n" })).rejects.toThrow(/"X-Key"[\s\S]*line break/);
    await expect(http({ "Bad Header": "abc" })).rejects.toThrow(/"Bad Header"[\s\S]*not a valid header name/);
    expect(() => mcpServerChangesBody.parse({ headers: { "X-Api-Key": "a\rb" } })).toThrow(/X-Api-Key/);
    await expect(http({ "X-Api-Key": "fine value" })).resolves.toMatchObject({ name: "hdr" });
  });
});
