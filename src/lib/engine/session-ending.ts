import "server-only";
// How a work session ends, decided from what its run came to: what the work loop returned, or
// what it threw. Pure (no database, no I/O): runWorkSession (agent.ts) looks up what it needs
// first (was the agent or its team deleted meanwhile?) and carries out the answer — the ending
// endWorkSession writes, a log line, or the interruption that leaves the job to its retry.
import { SessionTakenOver } from "@/lib/db/queries/messages";
import { databaseUnavailableReason, isDataException } from "@/lib/db/errors";
import { describeModelError, isModelFailure, modelWithoutTools } from "@/lib/llm/errors";
import { describeForLog } from "@/lib/telemetry/log";
import { plural } from "@/lib/util/plural";
import { BudgetExceeded, type TeamBudgetFields, TeamOverBudget } from "@/lib/domain/budgets";
import { budgetMarker, errorMarker } from "@/lib/core/formats";
import type { SessionEnding } from "./session-end";
import { StepLimitReached, ToolCallsAsText, UnusableAnswers, type WorkLoopOutcome } from "./work-loop";

/** What was deleted under a session, found once it failed (agentAfterDeletions). */
export type DeletedUnderSession = "team-deleted" | "agent-deleted";

/** A "deleted" session's error: what was deleted under it. Expected, so no error at all. */
export const DELETED_UNDER_SESSION: Record<DeletedUnderSession, string> = {
  "team-deleted": "its team was deleted",
  "agent-deleted": "the agent was deleted",
};

/** What the session had read when its run ended: its team (a budget stop's alert names it) and its tool rounds. */
type Started = { team: TeamBudgetFields; steps: number };

/** What a work session's run came to. */
export type SessionRun =
  /** workUntilIdle returned. */
  | { returned: WorkLoopOutcome; started: Started }
  | {
      threw: unknown;
      /** Null: the session failed before it read its start, so it has nothing to end. */
      started: Started | null;
      /** Why the session's own abort fired, when it did: the person's Stop, or the lease found lost by the heartbeat. */
      stopReason?: "user" | "lost";
      /** The agent or its team was deleted meanwhile (looked up after the failure). */
      deleted?: DeletedUnderSession | null;
    };

/** A line for the operator's log; with `error`, the error is logged with it (its cause and stack). */
type LogLine = { line: string } | { line: string; error: unknown };

export type ClassifiedEnding =
  /** Nothing left to do: the loop ended the session itself (finishSessionIfIdle). */
  | { kind: "idle" }
  /** The agent or its team was deleted under the session: nothing to end, retry or report. */
  | { kind: "deleted"; deleted: DeletedUnderSession }
  /** Another worker took the session over: this one writes nothing more. */
  | { kind: "lost" }
  /** endWorkSession ends it so, after the log line when there is one. */
  | { kind: "end"; ending: SessionEnding; log?: LogLine }
  /**
   * Anything else (the database went away, a bug): the session is marked interrupted with
   * `interruption`, the error goes on to the job's retry with backoff, and the next session
   * continues from the stored log.
   */
  | { kind: "retry"; interruption: string; log: LogLine };

/** How the session ends, given what its run came to (see ClassifiedEnding). */
export function classifyEnding(run: SessionRun): ClassifiedEnding {
  if ("returned" in run) {
    const { returned, started } = run;
    // Found before taking work: nothing was cut, so the log gets no marker.
    if (typeof returned === "object")
      return {
        kind: "end",
        ending: { status: "over-budget", reason: returned.overBudget, marker: null, team: started.team },
      };
    if (returned === "interrupted")
      return {
        kind: "end",
        ending: { status: "interrupted", reason: "The worker shut down; another worker continues." },
      };
    if (returned === "handed-over") {
      const reason = `Handed over to a new session after ${plural(started.steps, "tool round")} (MAX_STEPS_PER_SESSION).`;
      return { kind: "end", ending: { status: "interrupted", reason } };
    }
    return { kind: "idle" };
  }

  const { threw: error, started, stopReason } = run;
  // The agent (or its team) was deleted while it worked: its log, its tasks and this session
  // went with it, so whatever failed on that is no error. Asked first: a deletion also takes
  // the session's row, which reads as a takeover.
  if (run.deleted) return { kind: "deleted", deleted: run.deleted };
  // Taken over: by the heartbeat's own reading, or found by a write (a worker paused past the stale window).
  if (stopReason === "lost" || error instanceof SessionTakenOver) return { kind: "lost" };
  if (started) {
    if (stopReason === "user") return { kind: "end", ending: { status: "stopped" } };
    if (error instanceof StepLimitReached)
      return { kind: "end", ending: { status: "failed", reason: error.message, marker: error.marker } };
    // The model kept sending calls nothing could run: its task fails in words, as a model failure does.
    if (error instanceof UnusableAnswers)
      return { kind: "end", ending: { status: "failed", reason: error.message, marker: errorMarker(error.message) } };
    // Its tool calls come as text: no work of the agent's can be done with this model, as when its server refuses tools.
    if (error instanceof ToolCallsAsText) {
      const reason = error.message;
      return {
        kind: "end",
        ending: { status: "failed", reason, marker: errorMarker(reason), modelWithoutTools: error.modelId },
      };
    }
    if (error instanceof TeamOverBudget) {
      const ending = {
        status: "over-budget",
        reason: error.message,
        marker: budgetMarker(error.message),
        team: started.team,
      } as const;
      return { kind: "end", ending };
    }
    if (error instanceof BudgetExceeded)
      return { kind: "end", ending: { status: "failed", reason: error.message, marker: budgetMarker(error.message) } };
    // An abort nobody asked for is the model call's own timeout.
    if (isModelFailure(error)) {
      const reason = describeModelError(error);
      const withoutTools = modelWithoutTools(error);
      return {
        kind: "end",
        ending: {
          status: "failed",
          reason,
          marker: errorMarker(reason),
          ...(withoutTools !== null && { modelWithoutTools: withoutTools }),
        },
        log: { line: "model failure", error },
      };
    }
    // Something the database refuses to store fails on every retry the same way: the turn
    // fails visibly (its task, an alert) instead of being retried without end or dropped.
    if (isDataException(error)) {
      const reason = `The agent's work could not be stored: ${error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error)}`;
      return {
        kind: "end",
        ending: { status: "failed", reason, marker: errorMarker(reason) },
        log: { line: "could not store the agent's work", error },
      };
    }
  }
  const unavailable = databaseUnavailableReason(error);
  return {
    kind: "retry",
    interruption: interruptionText(error),
    log: unavailable
      ? { line: `lost the database (${unavailable}); the agent's work is retried` }
      : { line: "ended by an unexpected error; the agent's work is retried", error },
  };
}

/**
 * Why a session was interrupted, as its trace and work log show it to the person: never the SQL
 * or the parameters of a failed query (drizzle puts both in its message), and what happens next.
 */
export function interruptionText(error: unknown): string {
  const unavailable = databaseUnavailableReason(error);
  if (unavailable)
    return `The database could not be reached (${unavailable}); the work is taken up again when it is back.`;
  const failedQuery = error instanceof Error && error.message.startsWith("Failed query:");
  const cause = failedQuery && error.cause instanceof Error ? error.cause.message : null;
  if (failedQuery) return `A database error${cause ? ` (${cause.split("\n")[0]})` : ""}; the work is taken up again.`;
  return `${describeForLog(error).slice(0, 300)}; the work is taken up again.`;
}
