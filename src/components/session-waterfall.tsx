import type { ReactNode } from "react";
import { parseToolOutput } from "@/lib/views/chat-messages";
import type { SessionTrace, TraceEvent, TraceSpan } from "@/lib/views/session-trace";
import { describeLogMessage, describeMarker, withoutIds } from "@/lib/views/plain-words";
import { describeToolCall, storedCallState } from "@/lib/views/tool-labels";
import { describeCache, formatTokensInOut } from "@/lib/usage/format";
import { Markdown } from "./markdown";

/** Seconds as a trace reads them: 0.42 s, 3.1 s, 48 s, 2 min 5 s. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

const at = (ms: number) => `+${formatDuration(ms)}`;

function Json({ value }: { value: unknown }) {
  return <pre className="json">{typeof value === "string" ? value : JSON.stringify(value, null, 2)}</pre>;
}

type Row = { key: string; start: number; end: number | null; node: SpanRowProps };
type SpanRowProps = {
  label: string;
  className: string;
  title: string;
  detail: string;
  start: number;
  end: number | null;
  duration: number;
  body: ReactNode;
  point?: boolean;
};

function spanRow(span: TraceSpan, duration: number): Row {
  if (span.type === "model") {
    // Cut off before the provider counted them: Cadre's estimate, said so.
    const tokens = `${formatTokensInOut(span)}${span.estimated ? " (estimated)" : ""}`;
    return {
      key: `model-${span.id}`,
      start: span.start,
      end: span.end,
      node: {
        label:
          span.purpose === "work"
            ? "Model call"
            : span.purpose === "compaction"
              ? "Compaction"
              : span.purpose === "extraction"
                ? "Extraction"
                : span.purpose === "embedding"
                  ? "Embedding"
                  : `Model call (${span.purpose})`,
        className: `wf-model wf-${span.purpose}`,
        title: span.model,
        detail: `${formatDuration(span.durationMs)} · ${tokens}${span.finishReason ? ` · ${span.finishReason}` : ""}`,
        start: span.start,
        end: span.end,
        duration,
        body: (
          <dl className="wf-facts">
            <dt>Model</dt>
            <dd>{span.model}</dd>
            <dt>Purpose</dt>
            <dd>{span.purpose}</dd>
            <dt>Duration</dt>
            <dd>{formatDuration(span.durationMs)}</dd>
            <dt>Tokens</dt>
            <dd>{tokens}</dd>
            <dt>Input cached</dt>
            <dd>{describeCache(span, { short: true }) ?? "—"}</dd>
            <dt>Finish reason</dt>
            <dd>{span.finishReason ?? "—"}</dd>
          </dl>
        ),
      },
    };
  }
  const output = span.result === null ? undefined : parseToolOutput(span.result);
  return {
    key: `tool-${span.id}`,
    start: span.start,
    end: span.end,
    node: {
      label: span.failed ? "Tool call failed" : span.end === null ? "Tool call (no result yet)" : "Tool call",
      className: span.failed ? "wf-tool wf-failed" : "wf-tool",
      // What the call did, in words; its technical name and raw input open below.
      title: describeToolCall(
        span.toolName,
        span.args,
        span.result === null ? "running" : storedCallState({ content: span.result, failed: span.failed }),
        output,
      ),
      detail: span.end === null ? "no result yet" : formatDuration(span.end - span.start),
      start: span.start,
      end: span.end,
      duration,
      body: (
        <>
          <div className="tool-label">
            Input to <code className="tool-name">{span.toolName}</code>
          </div>
          <Json value={span.args ?? {}} />
          <div className="tool-label">{span.failed ? "Error" : "Result"}</div>
          {span.result === null ? <p className="hint">No result stored yet.</p> : <Json value={output} />}
        </>
      ),
    },
  };
}

/** An event in the person's words: input the engine put in the log reads as its headline, a marker as a sentence. */
function eventWords(event: TraceEvent): { label: string; headline: string; text: string } {
  if (event.type === "input") {
    const described = describeLogMessage(event.text);
    return { label: described.engine ? "Cadre" : event.label, headline: described.headline, text: described.text };
  }
  if (event.type === "marker") {
    const marker = describeMarker(event.text);
    return { label: event.label, headline: marker.summary, text: marker.detail ?? "" };
  }
  return { label: event.label, headline: "", text: withoutIds(event.text) };
}

function eventRow(event: TraceEvent, duration: number): Row {
  const { label, headline, text } = eventWords(event);
  const line = headline || text;
  return {
    key: `event-${event.id}`,
    start: event.at,
    end: event.at,
    node: {
      label,
      className: `wf-event wf-${event.type}`,
      title: "",
      detail: line.length > 90 ? `${line.slice(0, 90).trim()}…` : line,
      start: event.at,
      end: event.at,
      duration,
      point: true,
      body: (
        <>
          {headline && <p className="wf-headline">{headline}</p>}
          {text && <Markdown text={text} />}
        </>
      ),
    },
  };
}

function SpanRow({ label, className, title, detail, start, end, duration, body, point = false }: SpanRowProps) {
  const left = Math.min(100, (Math.max(0, start) / duration) * 100);
  const right = end === null ? 100 : Math.min(100, (Math.max(start, end) / duration) * 100);
  const words =
    end === null
      ? `${label} ${title}, from ${at(start)}, still open`
      : point
        ? `${label} at ${at(start)}`
        : `${label} ${title}, from ${at(start)} to ${at(end)}`;
  return (
    <li className={`wf-row ${className}`}>
      <details>
        <summary>
          <span className="wf-label">
            <span className="wf-kind">{label}</span> {title && <span className="wf-title">{title}</span>}
            <span className="wf-detail">
              {at(start)} · {detail}
            </span>
          </span>
          <span className="wf-track" role="img" aria-label={words}>
            {point ? (
              <span className="wf-point" style={{ left: `${left}%` }} />
            ) : (
              <span
                className={end === null ? "wf-bar wf-open" : "wf-bar"}
                style={{ left: `${left}%`, width: `max(2px, ${right - left}%)` }}
              />
            )}
          </span>
        </summary>
        <div className="wf-body">{body}</div>
      </details>
    </li>
  );
}

/** The session's calls and moments along its time axis; each row opens to show what it carried. */
export function SessionWaterfall({ trace }: { trace: SessionTrace }) {
  const rows = [
    ...trace.spans.map((span) => spanRow(span, trace.duration)),
    ...trace.events.map((event) => eventRow(event, trace.duration)),
  ].sort((a, b) => a.start - b.start || (a.end ?? Infinity) - (b.end ?? Infinity));
  if (rows.length === 0) return <p className="hint">This session made no model or tool calls.</p>;
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  return (
    <div className="waterfall">
      <div className="wf-axis" aria-hidden="true">
        <span className="wf-label" />
        <span className="wf-track">
          {ticks.map((tick) => (
            <span key={tick} className="wf-tick" style={{ left: `${tick * 100}%` }}>
              {formatDuration(tick * trace.duration)}
            </span>
          ))}
        </span>
      </div>
      <ol className="wf-rows" aria-label="Model calls, tool calls and events in time order">
        {rows.map((row) => (
          <SpanRow key={row.key} {...row.node} />
        ))}
      </ol>
    </div>
  );
}
