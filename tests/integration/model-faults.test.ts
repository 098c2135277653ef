// Model faults from a local fake OpenAI-compatible server, through the real
// @ai-sdk/openai client: bounded retries, then a failed task with a reason a person
// can act on; nothing left in_progress; the chat says what went wrong.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runWorkSession } from "@/lib/engine/agent";
import { streamChatReply } from "@/lib/engine/chat";
import { assignTask } from "@/lib/domain/tasks";
import {
  getAllMessages,
  getBackgroundConversation,
  getForegroundConversation,
  listTasksByAgent,
} from "@/lib/db/queries";
import { chooseModel } from "@/lib/llm/provider";
import { startFakeOpenAI, type FakeChatRequest, type FakeOpenAI, type FakeReply } from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTestEngine, type TestEngine } from "../support/engine";
import { systemText, toolNames } from "../support/team-play";

let database: TestDatabase;
let openai: FakeOpenAI;
let engine: TestEngine;
/** Per agent (by name in the system prompt): what the fake server answers, call by call. */
const scripts = new Map<string, (request: FakeChatRequest, call: number) => FakeReply>();
const calls = new Map<string, number>();

beforeAll(async () => {
  database = await createTestDatabase({ max: 20 });
  openai = await startFakeOpenAI((request) => {
    if (request.response_format) return { text: '{"items":[]}' };
    if (toolNames(request).length === 0) return { text: "Summary." };
    const system = systemText(request);
    for (const [name, script] of scripts) {
      if (!system.includes(name)) continue;
      const call = calls.get(name) ?? 0;
      calls.set(name, call + 1);
      return script(request, call);
    }
    return { text: "No script." };
  });
  engine = await createTestEngine(database, { config: { modelTimeoutMs: 8_000 } });
  // The real provider path: Chat Completions against OPENAI_BASE_URL.
  engine.deps.chooseModel = (override) =>
    chooseModel(override, { OPENAI_BASE_URL: openai.url, OPENAI_API_KEY: undefined, LLM_MODEL: "fake-model" });
});
afterAll(async () => {
  await engine?.close();
  await openai?.close();
  await database?.drop();
});

type Case = {
  name: string;
  script: (request: FakeChatRequest, call: number) => FakeReply;
  expect: "completed" | "failed";
  reason?: RegExp;
};

const lastIsTool = (request: FakeChatRequest) => request.messages.at(-1)?.role === "tool";
const cases: Case[] = [
  {
    name: "429 with Retry-After, then success",
    script: (_r, call) =>
      call < 2 ? { fault: "status", status: 429, retryAfterSeconds: 0 } : { text: "Done after waiting." },
    expect: "completed",
  },
  {
    name: "500 every time",
    script: () => ({ fault: "status", status: 500, retryAfterSeconds: 0 }),
    expect: "failed",
    reason: /model server failed \(HTTP 500\)/,
  },
  {
    name: "401 (bad key)",
    script: () => ({ fault: "status", status: 401 }),
    expect: "failed",
    reason: /refused the credentials.*OPENAI_API_KEY/,
  },
  {
    name: "connection reset",
    script: () => ({ fault: "reset" }),
    expect: "failed",
    reason: /reach the model server|model call failed/,
  },
  { name: "timeout", script: () => ({ fault: "hang" }), expect: "failed", reason: /in time|timed? ?out|abort/i },
  { name: "response cut off mid-way", script: () => ({ fault: "cut" }), expect: "failed", reason: /model/ },
  {
    name: "malformed tool-call JSON, then recovery",
    script: (request) =>
      lastIsTool(request) ? { text: "Recovered from the bad call." } : { fault: "malformed-tool-call" },
    expect: "completed",
  },
  {
    name: "a call to an unknown tool, then recovery",
    script: (request) =>
      lastIsTool(request) ? { text: "Recovered." } : { toolCalls: [{ name: "launchMissiles", arguments: {} }] },
    expect: "completed",
  },
];

describe("model faults in work sessions", () => {
  it.each(cases)("$name → task $expect", { timeout: 60_000 }, async (testCase) => {
    const { lead } = await createTeamFixture(database.db, { name: `Faults ${testCase.name}` });
    scripts.set(lead.name, testCase.script);
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Try it" });
    const started = Date.now();
    const outcome = await runWorkSession(engine.deps, lead.id);
    const [after] = await listTasksByAgent(database.db, lead.id);
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    console.log(
      `[model faults] ${testCase.name}: session ${outcome.status} in ${Date.now() - started} ms after ${calls.get(lead.name)} model request(s); task ${after!.status}${after!.status === "failed" ? `: ${after!.result}` : ""}`,
    );

    expect(after!.id).toBe(task.id);
    expect(after!.status).toBe(testCase.expect);
    expect(["pending", "in_progress", "waiting_input"]).not.toContain(after!.status);
    // Bounded: the SDK's two retries at most per model call.
    expect(calls.get(lead.name)).toBeLessThanOrEqual(8);
    if (testCase.reason) {
      expect(after!.result).toMatch(testCase.reason);
      expect(after!.result).not.toMatch(/^An error occurred/);
      expect(log.at(-1)!.content).toMatch(/^\(error: /);
    }
    // Every stored call has exactly one result, whatever went wrong.
    for (const call of log.flatMap((m) => m.toolCalls ?? [])) {
      expect(log.filter((m) => m.role === "tool" && m.toolCallId === call.toolCallId)).toHaveLength(1);
    }
  });
});

describe("model faults in the chat", () => {
  it("streams a helpful error, not a bare 'An error occurred', and stores it", async () => {
    const { lead } = await createTeamFixture(database.db, { name: "Faults chat" });
    scripts.set(lead.name, () => ({ fault: "status", status: 500, retryAfterSeconds: 0 }));
    const response = await streamChatReply(engine.deps, lead.id, "hello?", new AbortController().signal);
    const body = await response.text();
    expect(body).toMatch(/"type":"error","errorText":"The model server failed \(HTTP 500\)\. Try again in a moment\."/);
    expect(body).not.toMatch(/An error occurred/);
    const foreground = await getAllMessages(database.db, (await getForegroundConversation(database.db, lead.id)).id);
    await expect
      .poll(
        async () =>
          (await getAllMessages(database.db, (await getForegroundConversation(database.db, lead.id)).id)).at(-1)
            ?.content,
      )
      .toMatch(/^\(error: The model server failed/);
    expect(foreground[0]).toMatchObject({ role: "user", content: "hello?" });
  });
});
