import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { tracingChannel } from "node:diagnostics_channel";
import { SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { AI_SDK_TELEMETRY_TRACING_CHANNEL } from "ai";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { runWorkSession } from "@/lib/engine/agent";
import { streamChatReply } from "@/lib/engine/chat";
import { assignTask } from "@/lib/domain/tasks";
import { getForegroundConversation } from "@/lib/db/queries";
import { parseEnv } from "@/lib/env";
import { modelCallTelemetry, startTelemetry, type TelemetryHandle } from "@/lib/telemetry/tracing";
import type { TestDatabase } from "../support/database";
import { useEngineTests } from "../support/engine";
import { createTeamFixture } from "../support/fixtures";
import { chatAndSessionModel, textReply, toolCallReply } from "../support/mock-model";

const tests = useEngineTests();
let database: TestDatabase;
beforeAll(() => {
  database = tests.database;
});

let telemetry: TelemetryHandle | null = null;
afterEach(async () => {
  await telemetry?.shutdown();
  telemetry = null;
});

/**
 * A subordinate's session: one tool call that works, one whose effect Postgres refuses (a NUL
 * in the text), then its last words; and a chat reply of its lead. What the spans must show.
 */
async function runSessionAndChat() {
  const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
  const scout = subordinates[0]!;
  const model = chatAndSessionModel((options, call) => {
    if (options.tools?.some((offered) => offered.name === "reportToLead")) {
      if (call === 0) return toolCallReply("addKnowledgeItem", { type: "fact", content: "The launch moved to May." });
      if (call === 1) return toolCallReply("addKnowledgeItem", { type: "fact", content: "broken \u0000 text" });
      return textReply("The launch moved to May.");
    }
    return textReply("Hello from the lead.");
  });
  const engine = await tests.engineWith({ model });
  const task = await assignTask(database.db, engine.jobs, {
    agentId: scout.id,
    source: "lead",
    title: "Find the launch date",
  });
  const outcome = await runWorkSession(engine.deps, scout.id);
  expect(outcome.status).toBe("completed");
  const reply = await (await streamChatReply(engine.deps, lead.id, "Hi", new AbortController().signal)).text();
  expect(reply).toContain("Hello from the lead.");
  return {
    team,
    lead,
    scout,
    task,
    sessionId: outcome.sessionId!,
    modelId: model.modelId,
    chatConversationId: (await getForegroundConversation(database.db, lead.id)).id,
  };
}

/** Every `type` the AI SDK announces on its `ai:telemetry` tracing channel while `work` runs. */
async function aiTelemetryEvents(work: () => Promise<unknown>): Promise<string[]> {
  const events: string[] = [];
  const channel = tracingChannel(AI_SDK_TELEMETRY_TRACING_CHANNEL);
  const subscriber = {
    start: (message: unknown) => void events.push((message as { type: string }).type),
    end() {},
    asyncStart() {},
    asyncEnd() {},
    error() {},
  };
  channel.subscribe(subscriber);
  try {
    await work();
  } finally {
    channel.unsubscribe(subscriber);
  }
  return events;
}

describe("OpenTelemetry export", () => {
  it("with OTEL_EXPORTER_OTLP_ENDPOINT unset, is not started and every model call's telemetry is off", async () => {
    telemetry = startTelemetry({ serviceName: "cadre-test", source: parseEnv({}) });
    expect(telemetry).toBeNull();
    expect(modelCallTelemetry({ purpose: "work", agentId: null })).toEqual({ isEnabled: false });
    // The SDK announces every call with telemetry on over this channel: none may reach it.
    expect(await aiTelemetryEvents(runSessionAndChat)).toEqual([]);
  });

  it("exports the session, its turn, each model call (model, tokens) and each tool call (arguments, result or error), nested, and the chat reply", async () => {
    const exporter = new InMemorySpanExporter();
    telemetry = startTelemetry({ serviceName: "cadre-test", exporter, source: parseEnv({}) });
    let world!: Awaited<ReturnType<typeof runSessionAndChat>>;
    // The control for the test above: with tracing on, the same run does reach the channel.
    expect(await aiTelemetryEvents(async () => (world = await runSessionAndChat()))).toContain("languageModelCall");
    const spans = exporter.getFinishedSpans();
    const byId = new Map(spans.map((span) => [span.spanContext().spanId, span]));
    const parentOf = (span: ReadableSpan) => byId.get(span.parentSpanContext?.spanId ?? "");
    const ancestors = (span: ReadableSpan): ReadableSpan[] => {
      const parent = parentOf(span);
      return parent ? [parent, ...ancestors(parent)] : [];
    };
    const named = (prefix: string) => spans.filter((span) => span.name.startsWith(prefix));

    const [session] = named("work_session").filter(
      (span) => span.attributes["cadre.work_session.id"] === world.sessionId,
    );
    expect(session).toBeDefined();
    expect(session!.attributes).toMatchObject({
      "cadre.team.id": world.team.id,
      "cadre.team.name": world.team.name,
      "gen_ai.agent.id": world.scout.id,
      "gen_ai.agent.name": "Scout",
      "cadre.agent.role": "subordinate",
      "cadre.work_session.status": "completed",
    });
    expect(parentOf(session!)).toBeUndefined();

    const [turn, ...otherTurns] = named("work_turn");
    expect(otherTurns).toEqual([]);
    expect(parentOf(turn!)).toBe(session);
    expect(turn!.attributes).toMatchObject({ "cadre.task.id": world.task.id, "cadre.turn.purpose": "work" });

    // Model calls: the turn's three (tool, tool, last words) and the knowledge extraction of the wrap-up.
    const sessionCalls = named("chat ").filter((span) => ancestors(span).includes(session!));
    expect(sessionCalls).toHaveLength(4);
    expect(sessionCalls.filter((span) => ancestors(span).includes(turn!))).toHaveLength(3);
    for (const call of sessionCalls) {
      expect(call.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": world.modelId,
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.agent.id": world.scout.id,
        "cadre.work_session.id": world.sessionId,
      });
    }
    const extraction = sessionCalls.find((span) => !ancestors(span).includes(turn!))!;
    expect(extraction.attributes["cadre.model_call.purpose"]).toBe("extraction");

    const tools = named("execute_tool addKnowledgeItem");
    expect(tools).toHaveLength(2);
    for (const tool of tools) expect(ancestors(tool)).toContain(turn);
    const [saved, refused] = [...tools].sort(
      (a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1],
    );
    expect(JSON.parse(String(saved!.attributes["gen_ai.tool.call.arguments"]))).toEqual({
      type: "fact",
      content: "The launch moved to May.",
    });
    expect(JSON.parse(String(saved!.attributes["gen_ai.tool.call.result"]))).toMatchObject({ saved: true });
    expect(saved!.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(refused!.status.code).toBe(SpanStatusCode.ERROR);
    expect(refused!.attributes["gen_ai.tool.call.result"]).toBeUndefined();

    const [chatReply] = named("chat_reply");
    expect(chatReply!.attributes).toMatchObject({
      "gen_ai.agent.id": world.lead.id,
      "gen_ai.conversation.id": world.chatConversationId,
      "cadre.team.id": world.team.id,
    });
    expect(parentOf(chatReply!)).toBeUndefined();
    const chatCalls = named("chat ").filter((span) => ancestors(span).includes(chatReply!));
    expect(chatCalls).toHaveLength(1);
    expect(chatCalls[0]!.attributes).toMatchObject({
      "gen_ai.request.model": world.modelId,
      "gen_ai.conversation.id": world.chatConversationId,
      "cadre.model_call.purpose": "chat",
    });
    // Nothing of the run was left outside the two roots.
    for (const span of spans) expect([session, chatReply]).toContain(ancestors(span).at(-1) ?? span);
  });

  it("sends the spans over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT, with OTEL_EXPORTER_OTLP_HEADERS", async () => {
    const requests: { url: string; headers: IncomingMessage["headers"]; body: string }[] = [];
    const collector = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        requests.push({
          url: request.url ?? "",
          headers: request.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        });
        response.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    const saved = {
      endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT,
      headers: process.env.OTEL_EXPORTER_OTLP_HEADERS,
    };
    // The exporter reads these itself, as it would in the worker.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
    process.env.OTEL_EXPORTER_OTLP_HEADERS = "x-collector-key=secret-123";
    try {
      telemetry = startTelemetry({
        serviceName: "cadre-worker",
        source: parseEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }),
      });
      expect(telemetry).not.toBeNull();
      const world = await runSessionAndChat();
      // Batched: shutdown sends what is buffered, as the worker's does on SIGTERM.
      await telemetry!.shutdown();
      telemetry = null;
      expect(requests.length).toBeGreaterThan(0);
      expect(
        requests.every(
          (request) => request.url === "/v1/traces" && request.headers["x-collector-key"] === "secret-123",
        ),
      ).toBe(true);
      const body = requests.map((request) => request.body).join("\n");
      expect(body).toContain('"cadre-worker"');
      expect(body).toContain('"work_session"');
      expect(body).toContain(world.sessionId);
      expect(body).toContain('"execute_tool addKnowledgeItem"');
    } finally {
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved.endpoint;
      process.env.OTEL_EXPORTER_OTLP_HEADERS = saved.headers;
      if (saved.endpoint === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      if (saved.headers === undefined) delete process.env.OTEL_EXPORTER_OTLP_HEADERS;
      await new Promise((resolve) => collector.close(resolve));
    }
  });
});
