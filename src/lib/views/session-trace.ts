import "server-only";
// A work session's trace: its model calls (usage rows named for the session), its tool calls
// (the work log's calls and results written while it ran), compactions and extraction, laid
// out on the session's own time axis, with how it ended.
import { isFailedToolResult, parseLogInput, splitMarker } from "@/lib/core/formats";
import type { Db } from "@/lib/db/client";
import type { AgentRole, UsagePurpose, WorkSessionStatus } from "@/lib/db/schema";
import { notFound } from "@/lib/errors";
import { getTraceSession, listTraceKnowledge, listTraceMessages, listTraceUsage } from "@/lib/db/queries/session-trace";
import { listToolResults } from "@/lib/db/queries/timeline";
import { keptPrice } from "@/lib/db/queries/usage";
import { cachedShare, roundUsd } from "@/lib/usage/prices";
import { loadPriceTable } from "@/lib/usage/spend";

/** More rows than one session writes under MAX_STEPS_PER_SESSION; a trace shows the first ones and says so. */
const MAX_MESSAGES = 2_000;

export type TraceSpan =
  | {
      type: "model";
      id: string;
      /** Milliseconds from the session's start. */
      start: number;
      end: number;
      durationMs: number;
      purpose: UsagePurpose;
      model: string;
      inputTokens: number;
      outputTokens: number;
      /** Input tokens served from the provider's prompt cache (part of inputTokens). */
      cachedTokens: number;
      /** cachedTokens / inputTokens, 0 to 1. */
      cachedShare: number;
      /** What the cache saved on this call at the price it kept, else today's (0 without a price or a cached rate). */
      savedUsd: number;
      finishReason: string | null;
      /** The tokens are Cadre's estimate: the call was stopped or timed out before the provider counted them (or its process died). */
      estimated: boolean;
    }
  | {
      type: "tool";
      id: string;
      start: number;
      /** Null: no result yet (running, or waiting for the person). */
      end: number | null;
      toolName: string;
      args: unknown;
      result: string | null;
      failed: boolean;
    };

/** Moments without a duration: input that reached the log, a compaction's summary, knowledge recorded. */
export type TraceEvent = {
  type: "input" | "summary" | "knowledge" | "marker";
  id: string;
  at: number;
  label: string;
  text: string;
};

export type SessionTrace = {
  session: {
    id: string;
    status: WorkSessionStatus;
    steps: number;
    error: string | null;
    worker: string;
    startedAt: string;
    endedAt: string | null;
    stopRequestedAt: string | null;
  };
  agent: { id: string; name: string; role: AgentRole; teamId: string; teamName: string };
  /** Milliseconds the axis spans: the session's duration (so far, while it runs). */
  duration: number;
  /** The marker the session's end left in the log, if it left one. */
  marker: string | null;
  totals: {
    modelCalls: number;
    inputTokens: number;
    outputTokens: number;
    cachedTokens: number;
    cachedShare: number;
    savedUsd: number;
    modelMs: number;
    toolCalls: number;
    failedToolCalls: number;
  };
  spans: TraceSpan[];
  events: TraceEvent[];
  /** The log held more than a trace shows. */
  truncated: boolean;
};

export async function getSessionTrace(db: Db, sessionId: string): Promise<SessionTrace> {
  const session = await getTraceSession(db, sessionId);
  if (!session) throw notFound("session", sessionId);

  const inWorkLog = session.conversation_id ? { ...session, conversation_id: session.conversation_id } : null;
  const [usageRows, messageRows, knowledgeRows, prices] = await Promise.all([
    listTraceUsage(db, sessionId),
    inWorkLog ? listTraceMessages(db, inWorkLog, MAX_MESSAGES + 1) : Promise.resolve([]),
    inWorkLog ? listTraceKnowledge(db, inWorkLog) : Promise.resolve([]),
    loadPriceTable(db),
  ]);
  const messages = [...messageRows].slice(0, MAX_MESSAGES);

  const origin = Date.parse(session.started_at);
  const offset = (at: string) => Date.parse(at) - origin;
  const duration = Math.max(1, offset(session.ended_at ?? session.now));

  const spans: TraceSpan[] = usageRows.map((row) => ({
    type: "model",
    id: row.id,
    start: Math.max(0, offset(row.created_at) - row.duration_ms),
    end: offset(row.created_at),
    durationMs: row.duration_ms,
    purpose: row.purpose,
    model: row.model,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    cachedTokens: row.cached_tokens,
    cachedShare: cachedShare({ inputTokens: row.input_tokens, cachedTokens: row.cached_tokens }),
    savedUsd: roundUsd(
      prices.savedOf(
        row.model,
        { inputTokens: row.input_tokens, cachedTokens: row.cached_tokens },
        keptPrice(row.input_usd_per_mtok, row.cached_input_usd_per_mtok, row.output_usd_per_mtok),
      ),
    ),
    finishReason: row.finish_reason,
    estimated: row.estimated,
  }));

  const calls = messages.flatMap((message) => (message.tool_calls ?? []).map((call) => ({ call, message })));
  const results = session.conversation_id
    ? await listToolResults(
        db,
        calls.map(({ call }) => ({ conversationId: session.conversation_id!, toolCallId: call.toolCallId })),
      )
    : new Map<string, { content: string; createdAt: string }>();
  for (const { call, message } of calls) {
    const result = results.get(`${session.conversation_id}:${call.toolCallId}`);
    spans.push({
      type: "tool",
      id: call.toolCallId,
      // The call's assistant row is stored when its model call ends, before the tool runs.
      start: offset(message.created_at),
      end: result ? offset(result.createdAt) : null,
      toolName: call.toolName,
      args: call.args,
      result: result?.content ?? null,
      failed: result ? isFailedToolResult(result.content) : false,
    });
  }
  spans.sort((a, b) => a.start - b.start || (a.type === b.type ? 0 : a.type === "model" ? -1 : 1));

  const events: TraceEvent[] = [];
  let marker: string | null = null;
  for (const message of messages) {
    if (message.role === "summary") {
      events.push({
        type: "summary",
        id: message.id,
        at: offset(message.created_at),
        label: "Compaction summary",
        text: message.content,
      });
    } else if (message.role === "user") {
      const input = parseLogInput(message.content);
      events.push({
        type: "input",
        id: message.id,
        at: offset(message.created_at),
        label: input ? inputLabel(input.kind) : "Input",
        text: message.content,
      });
    } else if (message.role === "assistant") {
      const found = splitMarker(message.content.trim())?.marker;
      if (found) {
        marker = found;
        events.push({
          type: "marker",
          id: message.id,
          at: offset(message.created_at),
          label: found.startsWith("(error") ? "Error" : "Stopped",
          text: found,
        });
      }
    }
  }
  for (const item of knowledgeRows) {
    events.push({
      type: "knowledge",
      id: item.id,
      at: offset(item.created_at),
      label: `Knowledge (${item.type})`,
      text: item.content,
    });
  }
  events.sort((a, b) => a.at - b.at);

  const models = spans.filter((span) => span.type === "model");
  const tools = spans.filter((span) => span.type === "tool");
  const inputTokens = sum(models.map((span) => span.inputTokens));
  const cachedTokens = sum(models.map((span) => span.cachedTokens));
  return {
    session: {
      id: session.id,
      status: session.status,
      steps: session.steps,
      error: session.error,
      worker: session.worker,
      startedAt: session.started_at,
      endedAt: session.ended_at,
      stopRequestedAt: session.stop_requested_at,
    },
    agent: {
      id: session.agent_id,
      name: session.agent_name,
      role: session.agent_role,
      teamId: session.team_id,
      teamName: session.team_name,
    },
    duration,
    marker,
    totals: {
      modelCalls: models.length,
      inputTokens,
      outputTokens: sum(models.map((span) => span.outputTokens)),
      cachedTokens,
      cachedShare: cachedShare({ inputTokens, cachedTokens }),
      savedUsd: roundUsd(sum(models.map((span) => span.savedUsd))),
      modelMs: sum(models.map((span) => span.durationMs)),
      toolCalls: tools.length,
      failedToolCalls: tools.filter((span) => span.failed).length,
    },
    spans,
    events,
    truncated: messageRows.length > MAX_MESSAGES,
  };
}

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

function inputLabel(kind: string): string {
  const labels: Record<string, string> = {
    task: "Task taken up",
    report: "Report arrived",
    failed: "Subordinate failed",
    cancelled: "Subordinate cancelled",
    removed: "Subordinate removed",
    question: "Question arrived",
    answer: "Answer arrived",
    "person-answer": "Your answer",
    "task-cancelled": "Task cancelled",
    webhook: "Webhook",
    "outcome-unknown": "Outcome unknown",
  };
  return labels[kind] ?? "Input";
}
