// OpenTelemetry from the real processes: `npm start` (production build + worker, offline model)
// with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a tiny OTLP/HTTP collector. A task (the worker's
// work session) and a chat message (the web server's reply) must arrive as spans of both
// services, the model calls nested under their session or reply; stopping the app flushes them.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { buildIfStale, startApp, type AppServer } from "./app-server";

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean };
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: { key: string; value: OtlpValue }[];
};
type OtlpExport = {
  resourceSpans: {
    resource: { attributes: { key: string; value: OtlpValue }[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
};
type Span = OtlpSpan & { service: string; attribute: (key: string) => string | number | boolean | undefined };

let database: TestDatabase;
let app: AppServer | undefined;
let collector: Server;
const exports: OtlpExport[] = [];

function spans(): Span[] {
  return exports.flatMap((body) =>
    body.resourceSpans.flatMap((resource) => {
      const service =
        resource.resource.attributes.find((attribute) => attribute.key === "service.name")?.value.stringValue ?? "";
      return resource.scopeSpans.flatMap((scope) =>
        scope.spans.map((span) => ({
          ...span,
          service,
          attribute: (key: string) => {
            const value = span.attributes?.find((attribute) => attribute.key === key)?.value;
            return value?.stringValue ?? (value?.intValue !== undefined ? Number(value.intValue) : value?.boolValue);
          },
        })),
      );
    }),
  );
}

async function call<T>(
  pathname: string,
  init: { method?: string; body?: unknown } = {},
): Promise<{ status: number; text: string; body: T }> {
  const response = await fetch(`${app!.url}${pathname}`, {
    method: init.method ?? "GET",
    headers: init.body === undefined ? undefined : { "content-type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  return {
    status: response.status,
    text,
    body: (response.headers.get("content-type")?.includes("json") ? JSON.parse(text) : null) as T,
  };
}

describe("tracing from the web server and the worker", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    collector = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        if (request.url === "/v1/traces")
          exports.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpExport);
        response.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
    app = await startApp({
      DATABASE_URL: database.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
    });
  }, 300_000);

  afterAll(async () => {
    await app?.stop();
    await new Promise((resolve) => collector?.close(resolve));
    await database?.drop();
  }, 60_000);

  it("exports the work session and the chat reply, each with its model calls under it", async () => {
    const team = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
      method: "POST",
      body: { name: "Traced", mission: "Be watched.", leadName: "Ada" },
    });
    expect(team.status).toBe(201);
    const leadId = team.body.lead.id;
    const task = await call<{ task: { id: string } }>(`/api/agents/${leadId}/tasks`, {
      method: "POST",
      body: { title: "Find the launch date" },
    });
    expect(task.status).toBe(201);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { body } = await call<{ tasks: { id: string; status: string }[] }>(`/api/agents/${leadId}/tasks`);
      if (body.tasks.find((candidate) => candidate.id === task.body.task.id)?.status === "completed") break;
      if (Date.now() > deadline)
        throw new Error(`The task did not finish:\n${app!.output().split("\n").slice(-30).join("\n")}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const chat = await call(`/api/agents/${leadId}/chat`, {
      method: "POST",
      body: { messages: [{ role: "user", parts: [{ type: "text", text: "How is it going?" }] }] },
    });
    expect(chat.status).toBe(200);

    // SIGTERM: the worker flushes after its sessions end, the web server as it shuts down.
    await app!.stop();
    app = undefined;

    const all = spans();
    const byId = new Map(all.map((span) => [span.spanId, span]));
    const ancestors = (span: Span): Span[] => {
      const parent = span.parentSpanId ? byId.get(span.parentSpanId) : undefined;
      return parent ? [parent, ...ancestors(parent)] : [];
    };

    const session = all.find((span) => span.name === "work_session" && span.attribute("gen_ai.agent.id") === leadId);
    expect(
      session,
      `spans: ${[...new Set(all.map((span) => `${span.service}:${span.name}`))].join(", ")}`,
    ).toBeDefined();
    expect(session!.service).toBe("cadre-worker");
    expect(session!.attribute("cadre.team.id")).toBe(team.body.team.id);
    expect(session!.attribute("cadre.work_session.status")).toBe("completed");
    const sessionCalls = all.filter((span) => span.name.startsWith("chat ") && ancestors(span).includes(session!));
    expect(sessionCalls.length).toBeGreaterThan(0);
    for (const call of sessionCalls) expect(call.attribute("gen_ai.usage.input_tokens")).toBeGreaterThan(0);
    expect(all.some((span) => span.name.startsWith("execute_tool ") && ancestors(span).includes(session!))).toBe(true);

    const reply = all.find((span) => span.name === "chat_reply" && span.attribute("gen_ai.agent.id") === leadId);
    expect(reply).toBeDefined();
    expect(reply!.service).toBe("cadre-web");
    expect(
      all.filter((span) => span.name.startsWith("chat ") && ancestors(span).includes(reply!)).length,
    ).toBeGreaterThan(0);
  }, 120_000);
});
