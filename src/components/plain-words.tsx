// The engine's record in the person's words, as components: a problem (one sentence and a
// Details disclosure for its kind) and a message of a work log (a log input, an engine
// prompt, an agent's text with its closing marker). The work log, the timeline entries and
// the trace render through these, so each says a thing the same way.
import { splitMarker } from "@/lib/core/formats";
import {
  describeAgentText,
  describeLogMessage,
  describeMarker,
  describeProblem,
  withoutIds,
  type Names,
  type Problem,
} from "@/lib/views/plain-words";
import { Markdown } from "./markdown";

/** One sentence saying what happened and what happens next; the kind of failure behind "Details". */
export function ProblemText({ problem, className }: { problem: Problem; className?: string }) {
  return (
    <div className={className ? `problem ${className}` : "problem"}>
      <span className="problem-summary">{problem.summary}</span>
      {problem.detail && (
        <details className="problem-detail">
          <summary>Details</summary>
          <p>{problem.detail}</p>
        </details>
      )}
    </div>
  );
}

/** A session's or a task's error as the person reads it. */
export function ErrorText({ error, retried, className }: { error: string; retried?: boolean; className?: string }) {
  return <ProblemText problem={describeProblem(error, { retried })} className={className} />;
}

/** Input the engine put into an agent's log: a headline, and its text when it says something. */
export function LogInputBody({
  content,
  names,
  headlineClassName = "log-headline",
}: {
  content: string;
  names?: Names;
  headlineClassName?: string;
}) {
  const described = describeLogMessage(content, names);
  return (
    <>
      <p className={described.failed ? `${headlineClassName} log-failed` : headlineClassName}>{described.headline}</p>
      {described.text && <Markdown text={described.text} />}
    </>
  );
}

/** An agent's own text; a marker it ends with (a Stop, an error) becomes a sentence. */
export function AgentTextBody({
  content,
  names,
  markerClassName = "log-marker",
}: {
  content: string;
  names?: Names;
  markerClassName?: string;
}) {
  const split = splitMarker(content.trim());
  const text = split ? split.text : content;
  const marker = split ? describeMarker(split.marker) : null;
  return (
    <>
      {text.trim() && <Markdown text={describeAgentText(text, names)} />}
      {marker && (
        <ProblemText problem={marker} className={`${markerClassName} ${marker.kind === "error" ? "log-failed" : ""}`} />
      )}
    </>
  );
}

/** Any other text of the log (a compaction's summary, a tool result on its own), its ids put in words. */
export function PlainMarkdown({ text, names }: { text: string; names?: Names }) {
  return <Markdown text={withoutIds(text, names)} />;
}
