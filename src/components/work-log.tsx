import { Fragment } from "react";
import type { Message } from "@/lib/db/schema";
import { parseLogInput, splitMarker } from "@/lib/agents/formats";
import { parseToolOutput } from "@/lib/chat-messages";
import { ApprovalCard, type ApprovalData } from "./approval-card";
import { Markdown } from "./markdown";
import { ToolCall } from "./tool-call";
import { EmptyState, LocalTime } from "./ui";

const INPUT_LABELS = {
  task: "Task",
  report: "Report",
  failed: "Failed",
  cancelled: "Cancelled",
  removed: "Removed",
  question: "Question",
  answer: "Answer",
  "person-answer": "Your answer",
  "outcome-unknown": "Outcome unknown",
  "task-cancelled": "Cancelled",
  webhook: "Webhook",
} as const;

function kindOf(message: Message): { label: string; className: string } {
  if (message.role === "summary") return { label: "Summary", className: "log-summary" };
  if (message.role === "user") {
    const input = parseLogInput(message.content);
    if (input?.kind === "failed") return { label: INPUT_LABELS.failed, className: "log-injected log-error" };
    return { label: input ? INPUT_LABELS[input.kind] : "Message", className: "log-injected" };
  }
  const marker = splitMarker(message.content.trim())?.marker;
  if (marker?.startsWith("(error")) return { label: "Error", className: "log-error" };
  if (marker) return { label: "Stopped", className: "log-stopped" };
  return { label: "Assistant", className: "log-assistant" };
}

/**
 * An agent's background conversation as a log: messages it was given (tasks, reports,
 * injected messages), what it said, each tool call with its input and result, summaries,
 * errors and stop markers.
 */
export function WorkLog({ messages, agentName, approvals = [] }: { messages: Message[]; agentName: string; approvals?: ApprovalData[] }) {
  if (messages.length === 0) {
    return (
      <EmptyState title="No background work yet">
        <p>When this agent gets a task, every step of its work session shows up here as it happens.</p>
      </EmptyState>
    );
  }
  const results = new Map(messages.filter((message) => message.role === "tool").map((message) => [message.toolCallId, message]));
  const callIds = new Set(messages.flatMap((message) => (message.toolCalls ?? []).map((call) => call.toolCallId)));
  // A call held for the person shows its approval under it (newest first: the first per call wins).
  const approvalOf = new Map<string, ApprovalData>();
  for (const approval of approvals) if (!approvalOf.has(approval.toolCallId)) approvalOf.set(approval.toolCallId, approval);
  return (
    <ol className="work-log">
      {messages.map((message) => {
        if (message.role === "tool" && callIds.has(message.toolCallId ?? "")) return null; // shown with its call
        if (message.role === "tool") {
          return (
            <li key={message.id} className="log-entry log-tool">
              <div className="log-meta">
                <span className="log-kind">Tool result</span> <LocalTime value={message.createdAt.toISOString()} />
              </div>
              <Markdown text={message.content} />
            </li>
          );
        }
        const kind = kindOf(message);
        return (
          <li key={message.id} className={`log-entry ${kind.className}`}>
            <div className="log-meta">
              <span className="log-kind">{kind.label}</span> <LocalTime value={message.createdAt.toISOString()} />
            </div>
            {message.thinking && (
              <details className="thinking">
                <summary>Thinking</summary>
                <Markdown text={message.thinking} />
              </details>
            )}
            {message.content && <Markdown text={message.content} />}
            {(message.toolCalls ?? []).map((call) => {
              const result = results.get(call.toolCallId);
              const approval = approvalOf.get(call.toolCallId);
              return (
                <Fragment key={call.toolCallId}>
                  <ToolCall
                    toolName={call.toolName}
                    input={call.args}
                    state={result ? "done" : approval?.status === "pending" ? "waiting" : "running"}
                    output={result ? parseToolOutput(result.content) : undefined}
                  />
                  {approval && <ApprovalCard approval={approval} agentName={agentName} compact />}
                </Fragment>
              );
            })}
          </li>
        );
      })}
    </ol>
  );
}
