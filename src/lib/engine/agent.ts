import "server-only";
import type { Span } from "@opentelemetry/api";
import type { Db } from "@/lib/db/client";
import type { Agent, WorkSession } from "@/lib/db/schema";
import { agentAfterDeletions } from "@/lib/db/queries/agents";
import { SessionTakenOver } from "@/lib/db/queries/messages";
import { databaseUnavailableReason, isDataException } from "@/lib/db/errors";
import { claimSession, endSession, heartbeatSession, readSessionStart } from "@/lib/db/queries/work-sessions";
import { describeModelError, isModelFailure } from "@/lib/llm/errors";
import { agentAttributes, inSpan, markFailed } from "@/lib/telemetry/tracing";
import { plural } from "@/lib/util/plural";
import { BudgetExceeded, TeamOverBudget } from "@/lib/domain/budgets";
import type { EngineDeps } from "@/lib/core/engine-config";
import { budgetMarker, errorMarker, OUTCOME_UNKNOWN_RESULT, STOPPED_BY_PERSON } from "@/lib/core/formats";
import { endWorkSession, honourUnfinishedStop, type SessionEnding } from "./session-end";
import { closeOpenToolCalls, hasOpenToolCalls } from "./work-log";
import { reportUnknownOutcome } from "@/lib/domain/alerts";
import { toolEffects } from "./tool-policies";
import { INTERRUPTED_RESULT } from "./model-messages";
import { StepLimitReached, workUntilIdle, type SessionState } from "./work-loop";
import { describeForLog } from "@/lib/telemetry/log";

export type SessionOutcome = {
  /** over-budget: the team's daily budget ran out; its work waits (endWorkSession). */
  status: "busy" | "completed" | "failed" | "stopped" | "over-budget" | "interrupted" | "lost" | "deleted";
  sessionId?: string;
  steps: number;
  error?: string;
  /** deleted: the agent's name, when the session had read it (the worker's line names it). */
  agentName?: string;
};

/** What a "deleted" session's error says was deleted under it: expected, so no error at all. */
const DELETED_UNDER_SESSION = {
  "team-deleted": "its team was deleted",
  "agent-deleted": "the agent was deleted",
} as const;

type StopReason = "user" | "lost";

class SessionAbort extends Error {
  constructor(readonly reason: StopReason) {
    super(reason === "user" ? STOPPED_BY_PERSON : "Another worker took this session over.");
    // Reads as an abort to everything that checks, like the SDK and the tool wrapper.
    this.name = "AbortError";
  }
}

/** Sessions running in this process, so a stop notification can reach them at once. */
const localSessions = new Map<string, () => void>();

/** Aborts a session of this process at once (the worker calls it on a stop NOTIFY). */
export function stopLocalSession(sessionId: string): boolean {
  const stop = localSessions.get(sessionId);
  stop?.();
  return stop !== undefined;
}

/**
 * One work session of an agent (flow 2): claim the agent's lease, work until nothing
 * is left (work-loop.ts), and end — normally, or by Stop, a model error, the step
 * limit or a budget, each through endWorkSession in one transaction. At most one runs
 * per agent (the lease in work_sessions); every step is stored as it completes.
 *
 * `shutdown` ends the session after the step in flight (the worker is stopping);
 * another worker picks the agent up again.
 */
export async function runWorkSession(
  deps: EngineDeps,
  agentId: string,
  options: { shutdown?: AbortSignal } = {},
): Promise<SessionOutcome> {
  const session = await claimSession(deps.db, agentId, deps.config.worker, deps.config.staleSessionSeconds);
  if (!session) return { status: "busy", steps: 0 };
  // The session's span: its turns, model calls and tool calls nest under it (when tracing is on).
  return inSpan("work_session", { "cadre.work_session.id": session.id, "gen_ai.agent.id": agentId }, async (span) => {
    const outcome = await runClaimedSession(deps, session, options, span);
    span?.setAttributes({ "cadre.work_session.status": outcome.status, "cadre.work_session.steps": outcome.steps });
    if (outcome.status === "failed") markFailed(span, outcome.error);
    return outcome;
  });
}

async function runClaimedSession(
  deps: EngineDeps,
  session: WorkSession,
  options: { shutdown?: AbortSignal },
  span: Span | undefined,
): Promise<SessionOutcome> {
  const { db } = deps;

  const controller = new AbortController();
  let stopReason: StopReason | undefined;
  const abort = (reason: StopReason) => {
    if (stopReason) return;
    stopReason = reason;
    controller.abort(new SessionAbort(reason));
  };
  localSessions.set(session.id, () => abort("user"));
  // A Stop that landed between the claim and the line above reached no listener.
  if (session.stopRequestedAt) abort("user");
  let state: SessionState | undefined;
  let reportedSteps = 0;
  const heartbeat = setInterval(
    () => {
      // The step count rides on the heartbeat, written only when it changed: the UI sees
      // progress within seconds, and a tool round saves a write.
      const steps = state && state.steps !== reportedSteps ? state.steps : undefined;
      if (steps !== undefined) reportedSteps = steps;
      heartbeatSession(db, session.id, steps)
        .then((beat) => {
          if (!beat.alive) abort("lost");
          else if (beat.stopRequested) abort("user");
        })
        .catch((error: unknown) => deps.log(`[session ${session.id}] heartbeat failed`, error));
      // Several beats fit in the stale window, so one slow beat never looks like a death.
    },
    Math.max(250, (deps.config.staleSessionSeconds * 1000) / 5),
  );

  // Whatever failed while the agent or its team was being deleted (see deletedUnderSession).
  const deletedMeanwhile = async (): Promise<SessionOutcome | null> => {
    const deleted = await deletedUnderSession(db, session.agentId, state?.team.id ?? null);
    if (!deleted) return null;
    return {
      status: "deleted",
      sessionId: session.id,
      steps: state?.steps ?? 0,
      error: DELETED_UNDER_SESSION[deleted],
      ...(state ? { agentName: state.agent.name } : {}),
    };
  };

  const end = async (ending: SessionEnding, status: SessionOutcome["status"]): Promise<SessionOutcome> => {
    const steps = state?.steps ?? 0;
    if (state) {
      try {
        await endWorkSession(
          deps,
          {
            sessionId: session.id,
            agent: state.agent,
            conversationId: state.conversation.id,
            steps,
            focus: state.focus ?? null,
          },
          ending,
        );
      } catch (error) {
        // An ending that lost to a deletion (an alert's write against the team's) has nothing left to end.
        const deleted = await deletedMeanwhile();
        if (deleted) return deleted;
        // Nothing of the ending was written (one transaction): free the lease so the retry starts over.
        await endSession(db, session.id, "interrupted", {
          steps,
          error: `Could not end the session: ${interruptionText(error)}`,
        }).catch((cause: unknown) =>
          deps.log(
            `[session ${session.id}] could not mark the session interrupted either (${describeForLog(cause)}); its lease expires and the reaper takes it over`,
          ),
        );
        throw error;
      }
    }
    const error = ending.status === "stopped" ? undefined : ending.reason;
    return { status, sessionId: session.id, steps, ...(error ? { error } : {}) };
  };

  try {
    // One round trip of reads: a wake-up's latency is mostly the session's start.
    const { agent, team, conversation, context, previous } = await readSessionStart(db, session.agentId, session.id);
    const tail = context.at(-1);

    span?.setAttributes({ ...agentAttributes(agent, team), "gen_ai.conversation.id": conversation.id });
    state = {
      session,
      agent,
      team,
      conversation,
      model: deps.chooseModel(agent.model),
      steps: 0,
      tokens: 0,
      stepsAtWrapUp: 0,
      briefed: false,
      focus: undefined,
      storyTask: null,
      startTail: tail?.id ?? null,
      freshlyRead: true,
      signal: controller.signal,
      stop: () => abort("user"),
      shuttingDown: () => options.shutdown?.aborted === true,
    };
    // A Stop whose session died before ending gets its marker; then a worker that died
    // mid-tool left calls without results: close them first.
    await honourUnfinishedStop(db, conversation.id, previous);
    if (hasOpenToolCalls(context)) await closeInterruptedCalls(deps, agent, conversation.id);
    const outcome = await workUntilIdle(deps, state);
    // Found before taking work: nothing was cut, so the log gets no marker.
    if (typeof outcome === "object")
      return await end(
        { status: "over-budget", reason: outcome.overBudget, marker: null, team: state.team },
        "over-budget",
      );
    if (outcome === "interrupted")
      return await end(
        { status: "interrupted", reason: "The worker shut down; another worker continues." },
        "interrupted",
      );
    if (outcome === "handed-over") {
      return await end(
        {
          status: "interrupted",
          reason: `Handed over to a new session after ${plural(state.steps, "tool round")} (MAX_STEPS_PER_SESSION).`,
        },
        "interrupted",
      );
    }
    return { status: "completed", sessionId: session.id, steps: state.steps };
  } catch (error) {
    const steps = state?.steps ?? 0;
    // The agent (or its team) was deleted while it worked: its log, its tasks and this session
    // went with it, so whatever failed on that is no error, and there is nothing to end, retry or
    // report. Asked first: a deletion also takes the session's row, which reads as a takeover.
    const deleted = await deletedMeanwhile();
    if (deleted) return deleted;
    // Taken over: by the heartbeat's own reading, or found by a write (a worker paused past the stale window).
    if (stopReason === "lost" || error instanceof SessionTakenOver)
      return { status: "lost", sessionId: session.id, steps };
    if (stopReason === "user" && state) return await end({ status: "stopped" }, "stopped");
    if (state && error instanceof StepLimitReached) {
      return await end({ status: "failed", reason: error.message, marker: error.marker }, "failed");
    }
    if (state && error instanceof TeamOverBudget) {
      return await end(
        { status: "over-budget", reason: error.message, marker: budgetMarker(error.message), team: state.team },
        "over-budget",
      );
    }
    if (state && error instanceof BudgetExceeded) {
      return await end({ status: "failed", reason: error.message, marker: budgetMarker(error.message) }, "failed");
    }
    // An abort nobody asked for is the model call's own timeout.
    if (state && isModelFailure(error)) {
      deps.log(`[session ${session.id}] model failure`, error);
      const reason = describeModelError(error);
      return await end({ status: "failed", reason, marker: errorMarker(reason) }, "failed");
    }
    // Something the database refuses to store fails on every retry the same way: the turn
    // fails visibly (its task, an alert) instead of being retried without end or dropped.
    if (state && isDataException(error)) {
      deps.log(`[session ${session.id}] could not store the agent's work`, error);
      const reason = `The agent's work could not be stored: ${error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error)}`;
      return await end({ status: "failed", reason, marker: errorMarker(reason) }, "failed");
    }
    // Anything else (the database went away, a bug): leave the lease to expire and let
    // the job be retried with backoff; the next session continues from the stored log.
    const unavailable = databaseUnavailableReason(error);
    if (unavailable)
      deps.log(`[session ${session.id}] lost the database (${unavailable}); the agent's work is retried`);
    else deps.log(`[session ${session.id}] ended by an unexpected error; the agent's work is retried`, error);
    await endSession(db, session.id, "interrupted", { steps, error: interruptionText(error) }).catch((cause: unknown) =>
      deps.log(
        `[session ${session.id}] could not mark the session interrupted (${describeForLog(cause)}); its lease expires and the reaper takes it over`,
      ),
    );
    throw error;
  } finally {
    clearInterval(heartbeat);
    localSessions.delete(session.id);
  }
}

/**
 * What was deleted under a session that failed, once a deletion under way has ended (its write
 * may have lost a deadlock to the deletion's cascade, which commits a moment later); null when
 * the agent is still there or that cannot be known (the database is away, or the wait ran out).
 */
function deletedUnderSession(
  db: Db,
  agentId: string,
  teamId: string | null,
): Promise<keyof typeof DELETED_UNDER_SESSION | null> {
  return agentAfterDeletions(db, agentId, teamId, DELETION_WAIT_MS).then(
    (found) => (found === "present" ? null : found),
    () => null,
  );
}

/** How long a failed session waits for a deletion under way to commit: a team's is one statement. */
const DELETION_WAIT_MS = 10_000;

/**
 * The calls a dead worker left without a result get one. A Cadre tool's effect was rolled
 * back with it ("interrupted": the agent may call it again). A tool acting outside Cadre (an
 * MCP server) may or may not have done its part: "outcome unknown", never run again by
 * itself, and the person (and a subordinate's lead) is told, as of any failure.
 */
async function closeInterruptedCalls(deps: EngineDeps, agent: Agent, conversationId: string): Promise<void> {
  // Called only when the session's first read of the log found some (nearly never); closing
  // reads again, in the transaction. A call left open cannot gain its result meanwhile: only
  // this session, which holds the agent's lease, writes results to its log.
  // The results and the alerts in one transaction: a crash between them would leave a call
  // closed as "outcome unknown" that nobody was told about.
  await deps.db.transaction(async (tx) => {
    const closed = await closeOpenToolCalls(tx, conversationId, (call) =>
      toolEffects(call.toolName) === "outside" ? OUTCOME_UNKNOWN_RESULT : INTERRUPTED_RESULT,
    );
    for (const call of closed.filter((call) => toolEffects(call.toolName) === "outside")) {
      await reportUnknownOutcome(tx, deps.jobs, agent, conversationId, call);
    }
  });
}

/**
 * Why a session was interrupted, as its trace and work log show it to the person: never the SQL
 * or the parameters of a failed query (drizzle puts both in its message), and what happens next.
 */
function interruptionText(error: unknown): string {
  const unavailable = databaseUnavailableReason(error);
  if (unavailable)
    return `The database could not be reached (${unavailable}); the work is taken up again when it is back.`;
  const failedQuery = error instanceof Error && error.message.startsWith("Failed query:");
  const cause = failedQuery && error.cause instanceof Error ? error.cause.message : null;
  if (failedQuery) return `A database error${cause ? ` (${cause.split("\n")[0]})` : ""}; the work is taken up again.`;
  return `${describeForLog(error).slice(0, 300)}; the work is taken up again.`;
}
