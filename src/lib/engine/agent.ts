import "server-only";
import type { Span } from "@opentelemetry/api";
import type { Db } from "@/lib/db/client";
import type { Agent, WorkSession } from "@/lib/db/schema";
import { agentAfterDeletions } from "@/lib/db/queries/agents";
import { claimSession, endSession, heartbeatSession, readSessionStart } from "@/lib/db/queries/work-sessions";
import { agentAttributes, inSpan, markFailed } from "@/lib/telemetry/tracing";
import type { EngineDeps } from "@/lib/core/engine-config";
import { OUTCOME_UNKNOWN_RESULT, STOPPED_BY_PERSON } from "@/lib/core/formats";
import { endWorkSession, honourUnfinishedStop, type SessionEnding } from "./session-end";
import {
  type ClassifiedEnding,
  classifyEnding,
  DELETED_UNDER_SESSION,
  type DeletedUnderSession,
  interruptionText,
} from "./session-ending";
import { closeOpenToolCalls, hasOpenToolCalls } from "./work-log";
import { reportUnknownOutcome } from "@/lib/domain/alerts";
import { toolEffects } from "./tool-policies";
import { INTERRUPTED_RESULT } from "./model-messages";
import { startSessionState, workUntilIdle, type SessionState } from "./work-loop";
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
 * limit or a budget, each through endWorkSession in one transaction; classifyEnding
 * (session-ending.ts) decides which from what the work returned or threw. At most one runs
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
  const deletedMeanwhile = () => deletedUnderSession(db, session.agentId, state?.team.id ?? null);
  const deletedOutcome = (deleted: DeletedUnderSession): SessionOutcome => ({
    status: "deleted",
    sessionId: session.id,
    steps: state?.steps ?? 0,
    error: DELETED_UNDER_SESSION[deleted],
    ...(state ? { agentName: state.agent.name } : {}),
  });

  const end = async (ending: SessionEnding): Promise<SessionOutcome> => {
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
        if (deleted) return deletedOutcome(deleted);
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
    return { status: ending.status, sessionId: session.id, steps, ...(error ? { error } : {}) };
  };

  /** Carries out how the session ends (classifyEnding); `error`: what the run threw, thrown on for a retry. */
  const conclude = async (ending: ClassifiedEnding, error?: unknown): Promise<SessionOutcome> => {
    const steps = state?.steps ?? 0;
    if (ending.kind === "end" || ending.kind === "retry") {
      const { log } = ending;
      if (log) {
        const line = `[session ${session.id}] ${log.line}`;
        if ("error" in log) deps.log(line, log.error);
        else deps.log(line);
      }
    }
    switch (ending.kind) {
      case "idle":
        return { status: "completed", sessionId: session.id, steps };
      case "deleted":
        return deletedOutcome(ending.deleted);
      case "lost":
        return { status: "lost", sessionId: session.id, steps };
      case "end":
        return end(ending.ending);
      case "retry":
        await endSession(db, session.id, "interrupted", { steps, error: ending.interruption }).catch((cause: unknown) =>
          deps.log(
            `[session ${session.id}] could not mark the session interrupted (${describeForLog(cause)}); its lease expires and the reaper takes it over`,
          ),
        );
        throw error;
    }
  };

  try {
    // One round trip of reads: a wake-up's latency is mostly the session's start.
    const { agent, team, conversation, context, previous } = await readSessionStart(db, session.agentId, session.id);

    span?.setAttributes({ ...agentAttributes(agent, team), "gen_ai.conversation.id": conversation.id });
    // Where the log stands, a turn a dead worker left unfinished included: the task it was on.
    state = await startSessionState(
      deps,
      { session, agent, team, conversation, context },
      {
        signal: controller.signal,
        stop: () => abort("user"),
        shuttingDown: () => options.shutdown?.aborted === true,
      },
    );
    // A Stop whose session died before ending gets its marker; then a worker that died
    // mid-tool left calls without results: close them first.
    await honourUnfinishedStop(db, conversation.id, previous);
    if (hasOpenToolCalls(context)) await closeInterruptedCalls(deps, agent, conversation.id);
    const returned = await workUntilIdle(deps, state);
    return await conclude(classifyEnding({ returned, started: { team: state.team, steps: state.steps } }));
  } catch (error) {
    const started = state ? { team: state.team, steps: state.steps } : null;
    // Looked up first, for every failure: a deletion under the session explains whatever failed.
    const deleted = await deletedMeanwhile();
    return await conclude(classifyEnding({ threw: error, started, stopReason, deleted }), error);
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
function deletedUnderSession(db: Db, agentId: string, teamId: string | null): Promise<DeletedUnderSession | null> {
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
