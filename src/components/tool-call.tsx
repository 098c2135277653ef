import { notRunReason } from "@/lib/views/plain-words";
import { describeToolCall, searchSources, type ToolCallState } from "@/lib/views/tool-labels";
import { Markdown } from "./markdown";

function Json({ value }: { value: unknown }) {
  return <pre className="json">{typeof value === "string" ? value : JSON.stringify(value, null, 2)}</pre>;
}

const STATE_WORDS: Record<ToolCallState, string> = {
  running: "running…",
  waiting: "waits for your approval",
  error: "failed",
  done: "done",
  "not-run": "not run",
};

/**
 * One tool call as a person reads it: what it did ("Searched the web for …") and its state;
 * a search's results right below as sources with links. Opened, the raw call: the tool's
 * name, its input and its output (string output as Markdown, structured output as JSON —
 * never as HTML).
 */
export function ToolCall(props: {
  toolName: string;
  input: unknown;
  state: ToolCallState;
  output?: unknown;
  errorText?: string;
}) {
  const { toolName, input, state, output, errorText } = props;
  const sources = state === "done" ? searchSources(toolName, output) : [];
  return (
    <div className="tool-call">
      <details className={`tool tool-${state}`}>
        <summary>
          <span className="tool-icon" aria-hidden="true">
            ⚙
          </span>
          <span className="tool-title">{describeToolCall(toolName, input, state, output)}</span>
          <span className="tool-state">{STATE_WORDS[state]}</span>
        </summary>
        <div className="tool-body">
          <div className="tool-section">
            <div className="tool-label">
              Input to <code className="tool-name">{toolName}</code>
            </div>
            <Json value={input ?? {}} />
          </div>
          {state === "error" && (
            <div className="tool-section">
              <div className="tool-label">Error</div>
              <Json value={errorText ?? "The tool failed."} />
            </div>
          )}
          {state === "not-run" && (
            <div className="tool-section">
              <div className="tool-label">Why it did not run</div>
              <p>{typeof output === "string" ? notRunReason(output) : "It was not run."}</p>
            </div>
          )}
          {state === "done" && (
            <div className="tool-section">
              <div className="tool-label">Output</div>
              {typeof output === "string" ? (
                <Markdown text={output} className="tool-output" />
              ) : (
                <Json value={output} />
              )}
            </div>
          )}
        </div>
      </details>
      {sources.length > 0 && (
        <ol
          className="tool-sources"
          aria-label={`Sources found for ${describeToolCall(toolName, input, state, output).replace(/^Searched the web for /, "")}`}
        >
          {sources.map((source) => (
            <li key={source.url}>
              <a href={source.url} target="_blank" rel="noopener noreferrer">
                {source.title}
              </a>{" "}
              <span className="tool-source-host">{source.host}</span>
              {source.content && (
                <p className="tool-source-snippet">
                  {source.content.length > 220 ? `${source.content.slice(0, 219)}…` : source.content}
                </p>
              )}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
