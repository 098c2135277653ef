import { Markdown } from "./markdown";

function Json({ value }: { value: unknown }) {
  return <pre className="json">{typeof value === "string" ? value : JSON.stringify(value, null, 2)}</pre>;
}

/**
 * One tool call, collapsed: its name and state; open, its input and its output (string
 * output as Markdown, structured output as JSON — never as HTML).
 */
export function ToolCall(props: { toolName: string; input: unknown; state: "running" | "waiting" | "done" | "error"; output?: unknown; errorText?: string }) {
  const { toolName, input, state, output, errorText } = props;
  const label = state === "running" ? "running…" : state === "waiting" ? "waits for your approval" : state === "error" ? "failed" : "done";
  return (
    <details className={`tool tool-${state}`}>
      <summary>
        <span className="tool-icon" aria-hidden="true">⚙</span>
        <span className="tool-name">{toolName}</span>
        <span className="tool-state">{label}</span>
      </summary>
      <div className="tool-body">
        <div className="tool-section">
          <div className="tool-label">Input</div>
          <Json value={input ?? {}} />
        </div>
        {state === "error" && (
          <div className="tool-section">
            <div className="tool-label">Error</div>
            <Json value={errorText ?? "The tool failed."} />
          </div>
        )}
        {state === "done" && (
          <div className="tool-section">
            <div className="tool-label">Output</div>
            {typeof output === "string" ? <Markdown text={output} className="tool-output" /> : <Json value={output} />}
          </div>
        )}
      </div>
    </details>
  );
}
