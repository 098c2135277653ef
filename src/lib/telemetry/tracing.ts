import "server-only";
import { OpenTelemetry } from "@ai-sdk/otel";
import { context, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type Span as SdkSpan,
  type SpanExporter,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import type { TelemetryOptions } from "ai";
import type { Agent, Team } from "@/lib/db/schema";
import { env, type Env } from "@/lib/env";

/**
 * OpenTelemetry export (OTEL_EXPORTER_OTLP_ENDPOINT). Model calls and tool calls are the
 * AI SDK's own spans (@ai-sdk/otel, GenAI semantic conventions), given to each call by
 * `modelCallTelemetry`; Cadre adds the spans they nest under — a work session, its turns
 * and a chat reply — naming team, agent, session and task. With the endpoint unset nothing
 * is registered, every model call says `isEnabled: false` and `inSpan` just runs its work.
 */

type Tracing = { tracer: Tracer; provider: BasicTracerProvider; handle: TelemetryHandle };

// On globalThis: Next bundles instrumentation.ts apart from the route handlers, so a module
// variable set by one would not be seen by the other.
const TRACING = Symbol.for("cadre.tracing");
const store = globalThis as typeof globalThis & { [TRACING]?: Tracing };

export type TelemetryHandle = {
  /** Sends the spans still buffered and stops tracing in this process. */
  shutdown: () => Promise<void>;
};

/**
 * Starts tracing for this process (the web server or a worker), once, when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set; returns null and does nothing otherwise. Tests pass
 * an `exporter` (an in-memory one) instead of the endpoint.
 */
export function startTelemetry(options: {
  serviceName: string;
  exporter?: SpanExporter;
  source?: Env;
}): TelemetryHandle | null {
  const source = options.source ?? env();
  if (!options.exporter && !source.OTEL_EXPORTER_OTLP_ENDPOINT) return null;
  // Started already (a dev server may run instrumentation again): the same tracing goes on.
  if (store[TRACING]) return store[TRACING].handle;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: source.OTEL_SERVICE_NAME ?? options.serviceName }),
    // The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS itself.
    // Batched for the collector; a test's exporter gets each span as it ends.
    // The scrubber first: it edits each span as it ends, before the exporting processor takes it.
    spanProcessors: [
      new UrlScrubber(),
      options.exporter ? new SimpleSpanProcessor(options.exporter) : new BatchSpanProcessor(new OTLPTraceExporter()),
    ],
  });
  // Registered as NodeTracerProvider.register() would: spans nest across awaits
  // (AsyncLocalStorage), and Next's own request spans use this provider too.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  const handle: TelemetryHandle = {
    shutdown: async () => {
      if (store[TRACING]?.provider !== provider) return;
      delete store[TRACING];
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        context.disable();
      }
    },
  };
  store[TRACING] = { tracer: provider.getTracer("cadre"), provider, handle };
  return handle;
}

/**
 * Keeps URL queries and credentials out of every span, whoever made it. Next traces each fetch
 * as "fetch GET <url>" with `http.url` — an MCP server's …/mcp?apikey=… among them — and a
 * collector is often run by someone else. Span names and URL-like attributes keep scheme, host
 * and path; `url.query` is dropped. Done in onEnding, while the span can still be changed.
 */
class UrlScrubber implements SpanProcessor {
  onStart(): void {}
  onEnding(span: SdkSpan): void {
    const name = withoutQueriesOrCredentials(span.name);
    if (name !== span.name) span.updateName(name);
    for (const [key, value] of Object.entries(span.attributes)) {
      if (key === "url.query") delete (span.attributes as Record<string, unknown>)[key];
      else if (typeof value === "string" && /url|target|span_name/i.test(key)) {
        const clean = key === "http.target" ? value.replace(/[?#].*$/s, "") : withoutQueriesOrCredentials(value);
        if (clean !== value) span.setAttribute(key, clean);
      }
    }
  }
  onEnd(): void {}
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** Every absolute URL in the text without its user name, password, query and fragment. */
function withoutQueriesOrCredentials(text: string): string {
  return text.replace(
    /\b([a-z][a-z0-9+.-]*:\/\/)(?:[^\s/?#@]*@)?([^\s/?#]*)([^\s?#]*)(?:\?[^\s#]*)?(?:#\S*)?/gi,
    "$1$2$3",
  );
}

function tracing(): Tracing | undefined {
  return store[TRACING];
}

/** Who a model call is for, as its spans should say. */
export type ModelCallSubject = {
  purpose: string;
  agentId: string | null;
  conversationId?: string | null;
  workSessionId?: string | null;
};

/**
 * The AI SDK's `telemetry` option for one model call: off unless tracing is started (no
 * event is built, for an integration or the `ai:telemetry` channel); on, the OpenTelemetry
 * integration with the call's agent, conversation and session on every span it makes.
 */
export function modelCallTelemetry(subject: ModelCallSubject): TelemetryOptions {
  const active = tracing();
  if (!active) return { isEnabled: false };
  const attributes = defined({
    "gen_ai.agent.id": subject.agentId,
    "gen_ai.conversation.id": subject.conversationId,
    "cadre.work_session.id": subject.workSessionId,
    "cadre.model_call.purpose": subject.purpose,
  });
  return {
    functionId: subject.purpose,
    // Per call rather than registered globally: nothing of it outlives the call, and the
    // attributes are this call's.
    integrations: [new OpenTelemetry({ tracer: active.tracer, enrichSpan: () => attributes })],
  };
}

/**
 * Runs `work` inside a span, so the model and tool spans it causes nest under it; the span
 * ends with the work, marked as an error if it throws. With tracing off, `work` runs as is
 * and gets no span.
 */
export async function inSpan<T>(
  name: string,
  attributes: Record<string, AttributeValue>,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const active = tracing();
  if (!active) return work(undefined);
  return active.tracer.startActiveSpan(name, { attributes: defined(attributes) }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      markFailed(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** A span whose end the caller decides (a streamed reply ends after its function returned); `run` makes it the parent of what it runs. */
export type OpenSpan = {
  span: Span;
  run: <T>(work: () => T) => T;
  end: (failure?: unknown) => void;
};

export function openSpan(name: string, attributes: Record<string, AttributeValue>): OpenSpan | undefined {
  const active = tracing();
  if (!active) return undefined;
  const span = active.tracer.startSpan(name, { attributes: defined(attributes) });
  const spanContext = trace.setSpan(context.active(), span);
  let ended = false;
  return {
    span,
    run: (work) => context.with(spanContext, work),
    end: (failure) => {
      if (ended) return;
      ended = true;
      if (failure !== undefined) markFailed(span, failure);
      span.end();
    },
  };
}

/** What a span says about the agent it is for: GenAI's names for the agent, Cadre's for its team. */
export function agentAttributes(
  agent: Pick<Agent, "id" | "name" | "role">,
  team: Pick<Team, "id" | "name">,
): Attributes {
  return {
    "gen_ai.agent.id": agent.id,
    "gen_ai.agent.name": agent.name,
    "cadre.agent.role": agent.role,
    "cadre.team.id": team.id,
    "cadre.team.name": team.name,
  };
}

export function markFailed(span: Span | undefined, failure: unknown): void {
  if (!span) return;
  if (failure instanceof Error) span.recordException(failure);
  span.setStatus({ code: SpanStatusCode.ERROR, message: failure instanceof Error ? failure.message : String(failure) });
}

type AttributeValue = string | number | boolean | null | undefined;

/** Attributes without the null and undefined values (OpenTelemetry drops them with a warning). */
function defined(attributes: Record<string, AttributeValue>): Attributes {
  const result: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== null && value !== undefined) result[key] = value;
  return result;
}
