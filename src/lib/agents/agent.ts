import { generateText, stepCountIs, type ToolSet } from "ai";
import { and, eq, inArray, sql } from "drizzle-orm";
import { requireAgent } from "@/lib/db/queries/agents";
import { getBackgroundConversation } from "@/lib/db/queries/conversations";
import { appendMessage, getLastMessage, getMessagesSince } from "@/lib/db/queries/messages";
import { listOpenSubtasks, listTasksByAgent, openTaskStatuses, setTaskStatus } from "@/lib/db/queries/tasks";
import { listTeamAgents, requireTeam } from "@/lib/db/queries/teams";
import { getTeamTokensToday } from "@/lib/db/queries/usage";
import { recordModelUsage } from "@/lib/llm/usage";
import {
  claimSession,
  endSession,
  finishSessionIfIdle,
  heartbeatSession,
} from "@/lib/db/queries/work-sessions";
import { tasks, type Agent, type Conversation, type Task, type Team, type UsagePurpose, type WorkSession } from "@/lib/db/schema";
import { describeModelError } from "@/lib/llm/errors";
import type { ModelChoice } from "@/lib/llm/provider";
import { ContextReader, loadContextForCall } from "./compaction";
import type { EngineDeps } from "./engine-config";
import { extractKnowledgeFromConversation } from "./knowledge-items";
import { BRIEFING_DECISION_PROMPT, taskMessage, workInstructions } from "./prompts";
import { closeInterruptedToolCalls, StepRecorder } from "./step-recorder";
import { cancelTask, postToBackground } from "./tasks";
import { briefingTools, workTools, type ToolContext } from "./tools";

export const STOPPED_MARKER = "(stopped by user)";
export const errorMarker = (message: string) => `(error: ${message})`;
export const stepLimitMarker = (limit: number) =>
  `(stopped: this session reached its limit of ${limit} tool rounds; raise MAX_STEPS_PER_SESSION to allow longer sessions)`;


export type SessionOutcome = {
  status: "busy" | "completed" | "failed" | "stopped" | "interrupted" | "lost";
  sessionId?: string;
  steps: number;
  error?: string;
};

type StopReason = "user" | "lost";

/** A session or team spent its token budget: the session stops and says why. */
export class BudgetExceeded extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BudgetExceeded";
  }
}

export const budgetMarker = (message: string) => `(stopped: ${message})`;

class SessionAbort extends Error {
  constructor(readonly reason: StopReason) {
    super(reason === "user" ? "Stopped by the person." : "Another worker took this session over.");
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

type SessionState = {
  session: WorkSession;
  agent: Agent;
  team: Team;
  conversation: Conversation;
  model: ModelChoice;
  steps: number;
  /** Input + output tokens this session has spent. */
  tokens: number;
  /** The team's tokens today as last read, and this session's total at that moment. */
  teamTokens?: { total: number; readAt: number; sessionTokensAtRead: number };
  stepsAtWrapUp: number;
  briefed: boolean;
  /** The log's tail when the session started: extraction reads what came after. */
  startTail: string | null;
  signal: AbortSignal;
  shuttingDown: () => boolean;
  recorder?: StepRecorder;
};

/**
 * One work session of an agent (flow 2): claim the agent's lease, take its pending
 * tasks and unanswered messages, run the tool loop until nothing is left, then
 * extract knowledge and, for a lead, decide whether to brief. At most one runs per
 * agent (the lease in work_sessions); every step is stored as it completes.
 *
 * `shutdown` ends the session after the step in flight (the worker is stopping);
 * another worker picks the agent up again.
 */
export async function runWorkSession(deps: EngineDeps, agentId: string, options: { shutdown?: AbortSignal } = {}): Promise<SessionOutcome> {
  const { db } = deps;
  const session = await claimSession(db, agentId, deps.config.worker, deps.config.staleSessionSeconds);
  if (!session) return { status: "busy", steps: 0 };

  const controller = new AbortController();
  let stopReason: StopReason | undefined;
  const abort = (reason: StopReason) => {
    if (stopReason) return;
    stopReason = reason;
    controller.abort(new SessionAbort(reason));
  };
  localSessions.set(session.id, () => abort("user"));
  let state: SessionState | undefined;
  let reportedSteps = 0;
  const heartbeat = setInterval(() => {
    // The step count rides on the heartbeat, written only when it changed: the UI sees
    // progress within seconds, and a tool round saves a write.
    const steps = state && state.steps !== reportedSteps ? state.steps : undefined;
    if (steps !== undefined) reportedSteps = steps;
    heartbeatSession(db, session.id, steps)
      .then((beat) => {
        if (!beat.alive) abort("lost");
        else if (beat.stopRequested) abort("user");
      })
      .catch((error) => deps.log(`[session ${session.id}] heartbeat failed: ${error instanceof Error ? error.message : error}`));
    // Several beats fit in the stale window, so one slow beat never looks like a death.
  }, Math.max(250, (deps.config.staleSessionSeconds * 1000) / 5));

  try {
    const agent = await requireAgent(db, agentId);
    const conversation = await getBackgroundConversation(db, agentId);
    state = {
      session,
      agent,
      team: await requireTeam(db, agent.teamId),
      conversation,
      model: deps.chooseModel(agent.model),
      steps: 0,
      tokens: 0,
      stepsAtWrapUp: 0,
      briefed: false,
      startTail: (await getLastMessage(db, conversation.id))?.id ?? null,
      signal: controller.signal,
      shuttingDown: () => options.shutdown?.aborted === true,
    };
    // A worker that died mid-tool left calls without results; close them first.
    await closeInterruptedToolCalls(db, conversation.id);
    const outcome = await workUntilIdle(deps, state);
    return { ...outcome, sessionId: session.id };
  } catch (error) {
    const steps = state?.steps ?? 0;
    if (stopReason === "lost") return { status: "lost", sessionId: session.id, steps };
    if (stopReason === "user" && state) {
      await recordStop(deps, state);
      return { status: "stopped", sessionId: session.id, steps };
    }
    if (state && error instanceof BudgetExceeded) {
      await state.recorder?.recordMissingResults(budgetMarker(error.message));
      await appendMessage(db, state.conversation.id, { role: "assistant", content: budgetMarker(error.message) });
      await failOpenTasks(deps, state.agent.id, error.message);
      await endSession(db, session.id, "failed", { steps, error: error.message });
      return { status: "failed", sessionId: session.id, steps, error: error.message };
    }
    // An abort nobody asked for is the model call's own timeout.
    if (state && (isModelFailure(error) || (error instanceof Error && error.name === "AbortError" && !state.signal.aborted))) {
      const message = describeModelError(error);
      deps.log(`[session ${session.id}] model failure: ${error instanceof Error ? error.message : error}`);
      await state.recorder?.recordMissingResults(errorMarker(message));
      await appendMessage(db, state.conversation.id, { role: "assistant", content: errorMarker(message) });
      await failOpenTasks(deps, state.agent.id, message);
      await endSession(db, session.id, "failed", { steps, error: message });
      return { status: "failed", sessionId: session.id, steps, error: message };
    }
    // Anything else (the database went away, a bug): leave the lease to expire and let
    // the job be retried with backoff; the next session continues from the stored log.
    await endSession(db, session.id, "interrupted", { steps, error: error instanceof Error ? error.message : String(error) }).catch(() => {});
    throw error;
  } finally {
    clearInterval(heartbeat);
    localSessions.delete(session.id);
  }
}

/** Model calls fail with API errors; the database and our own bugs fail differently. */
function isModelFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if ("cause" in error && error.cause && typeof error.cause === "object" && "code" in error.cause) {
    const code = String((error.cause as { code: unknown }).code);
    // Postgres SQLSTATEs are five characters; those are not the model's fault.
    if (/^[0-9A-Z]{5}$/.test(code)) return false;
  }
  return /AI_|APICallError|RetryError|NoSuchTool|InvalidToolInput|TypeValidation|JSONParse|NoOutput|NoObject|Timeout/i.test(
    `${error.name} ${error.constructor?.name ?? ""}`,
  );
}

async function workUntilIdle(deps: EngineDeps, state: SessionState): Promise<Omit<SessionOutcome, "sessionId">> {
  const { db } = deps;
  for (;;) {
    if (state.shuttingDown()) {
      await endSession(db, state.session.id, "interrupted", { steps: state.steps, error: "The worker shut down; another worker continues." });
      await deps.jobs.nudgeAgent(state.agent.id);
      return { status: "interrupted", steps: state.steps };
    }
    state.agent = await requireAgent(db, state.agent.id);
    state.team = await requireTeam(db, state.agent.teamId);
    const paused = state.team.status === "paused";

    await settleFinishedTasks(deps, state);
    const started = paused ? [] : await startPendingTasks(deps, state);
    if (!paused && (started.length > 0 || (await awaitsReply(deps, state)))) {
      const limited = await runTurn(deps, state, { purpose: "work", tools: (context) => workTools(context) });
      await settleFinishedTasks(deps, state);
      if (limited) {
        const message = `The session reached its limit of ${deps.config.maxStepsPerSession} tool rounds.`;
        await appendMessage(db, state.conversation.id, { role: "assistant", content: stepLimitMarker(deps.config.maxStepsPerSession) });
        await failOpenTasks(deps, state.agent.id, message);
        await endSession(db, state.session.id, "failed", { steps: state.steps, error: message });
        return { status: "failed", steps: state.steps, error: message };
      }
      continue;
    }
    if (!paused && state.steps > state.stepsAtWrapUp) {
      await wrapUp(deps, state);
      state.stepsAtWrapUp = state.steps;
      continue;
    }
    if (await finishSessionIfIdle(db, state.session.id, state.agent.id, state.steps)) {
      return { status: "completed", steps: state.steps };
    }
  }
}

/** Pending tasks become in_progress and enter the work log, each in one transaction. */
async function startPendingTasks(deps: EngineDeps, state: SessionState): Promise<Task[]> {
  const pending = await listTasksByAgent(deps.db, state.agent.id, ["pending"]);
  const started: Task[] = [];
  for (const task of pending.reverse()) {
    const begun = await deps.db.transaction(async (tx) => {
      const updated = await setTaskStatus(tx, task.id, "in_progress");
      if (updated) await appendMessage(tx, state.conversation.id, { role: "user", content: taskMessage(updated) });
      return updated;
    });
    if (begun) started.push(begun);
  }
  return started;
}

/** Something in the log wants an answer: new input, a tool result, or a turn cut short. */
async function awaitsReply(deps: EngineDeps, state: SessionState): Promise<boolean> {
  const tail = await getLastMessage(deps.db, state.conversation.id);
  if (!tail) return false;
  return tail.role === "user" || tail.role === "tool" || tail.role === "summary" || (tail.role === "assistant" && (tail.toolCalls?.length ?? 0) > 0);
}

/**
 * When a turn has ended, an in_progress task with nothing delegated still open is
 * done: its result is the turn's last words. A subordinate that finishes without
 * reporting reports anyway, so its lead is never left waiting.
 */
async function settleFinishedTasks(deps: EngineDeps, state: SessionState): Promise<void> {
  if (await awaitsReply(deps, state)) return;
  const inProgress = await listTasksByAgent(deps.db, state.agent.id, ["in_progress"]);
  if (inProgress.length === 0) return;
  const tail = await getLastMessage(deps.db, state.conversation.id);
  const result = tail?.role === "assistant" && tail.content.trim() ? tail.content.trim() : "Done.";
  for (const task of inProgress) {
    if ((await listOpenSubtasks(deps.db, task.id)).length > 0) continue;
    const parentAgentId = state.agent.role === "subordinate" ? state.agent.parentAgentId : null;
    // Completion and the report it implies stand or fall together.
    await deps.db.transaction(async (tx) => {
      const completed = await setTaskStatus(tx, task.id, "completed", result);
      if (completed && parentAgentId) {
        await postToBackground(tx, deps.jobs, parentAgentId, `Subordinate ${state.agent.name} reports: ${result}`);
      }
    });
  }
}

async function failOpenTasks(deps: EngineDeps, agentId: string, reason: string): Promise<void> {
  await deps.db
    .update(tasks)
    .set({ status: "failed", result: reason, updatedAt: sql`now()`, completedAt: sql`now()` })
    .where(and(eq(tasks.agentId, agentId), inArray(tasks.status, ["in_progress"])));
}

/** A stopped session says so in its log, and what it was working on is cancelled, with everything delegated from it. */
async function recordStop(deps: EngineDeps, state: SessionState): Promise<void> {
  await state.recorder?.recordMissingResults(STOPPED_MARKER);
  await appendMessage(deps.db, state.conversation.id, { role: "assistant", content: STOPPED_MARKER });
  for (const task of await listTasksByAgent(deps.db, state.agent.id, openTaskStatuses)) {
    if (task.status !== "pending") await cancelTask(deps.db, task.id, "Stopped by the person.");
  }
  await endSession(deps.db, state.session.id, "stopped", { steps: state.steps, error: "Stopped by the person." });
}

/**
 * After the work: knowledge extraction over what the session added to the log and,
 * for a lead that has not briefed yet, the briefing decision as one more turn.
 */
async function wrapUp(deps: EngineDeps, state: SessionState): Promise<void> {
  const messages = await getMessagesSince(deps.db, state.conversation.id, state.startTail);
  await extractKnowledgeFromConversation({
    db: deps.db,
    model: state.model,
    agentId: state.agent.id,
    conversationId: state.conversation.id,
    messages,
    maxInputChars: deps.config.contextTokenBudget * 4 * 0.8,
    abortSignal: state.signal,
  });
  state.startTail = messages.at(-1)?.id ?? state.startTail;
  if (state.agent.role === "lead" && !state.briefed) {
    await appendMessage(deps.db, state.conversation.id, { role: "user", content: BRIEFING_DECISION_PROMPT });
    await runTurn(deps, state, { purpose: "briefing", tools: (context) => briefingTools(context), maxSteps: 2 });
  }
}

/**
 * Runs the model with tools until it stops calling them. Before every model call:
 * compaction when over budget, then the context reloaded from the database — that
 * reload is the injection: whatever reached the log since the last step (a report,
 * an answer, a webhook) is in the next call. Returns true when the step limit cut
 * the turn short.
 */
async function runTurn(
  deps: EngineDeps,
  state: SessionState,
  turn: { purpose: UsagePurpose; tools: (context: ToolContext) => ToolSet; maxSteps?: number },
): Promise<boolean> {
  const { db, config } = deps;
  const remaining = Math.min(turn.maxSteps ?? Infinity, config.maxStepsPerSession - state.steps);
  if (remaining <= 0) return true;

  const recorder = new StepRecorder(db, state.conversation.id);
  state.recorder = recorder;
  const toolContext: ToolContext = {
    db,
    jobs: deps.jobs,
    agent: state.agent,
    team: state.team,
    conversationId: state.conversation.id,
    search: config.search,
    currentTaskIds: async () =>
      (await listTasksByAgent(db, state.agent.id, ["in_progress", "waiting_input"])).reverse().map((task) => task.id),
    effect: (toolCallId, write) => recorder.runEffect(toolCallId, write),
  };
  const tools = recorder.wrapTools(turn.tools(toolContext));
  const instructions = async () => {
    const [members, openTasks] = await Promise.all([listTeamAgents(db, state.team.id), listTasksByAgent(db, state.agent.id, openTaskStatuses)]);
    return workInstructions({ agent: state.agent, team: state.team, members, openTasks: openTasks.reverse() });
  };
  const history = new ContextReader(db, state.conversation.id);
  // Independent reads go out together: each round trip sits between two model calls.
  const prepare = async () => {
    const [system, context] = await Promise.all([instructions(), history.read(), checkBudgets(deps, state)]);
    const messages = await loadContextForCall(
      { db, model: state.model, agentId: state.agent.id, budget: config.contextTokenBudget, instructions: system, abortSignal: state.signal },
      history,
      context,
    );
    return { instructions: system, messages };
  };

  const first = await prepare();
  let callStarted = Date.now();
  const result = await generateText({
    model: state.model.model,
    instructions: first.instructions,
    messages: first.messages,
    tools,
    toolCallConcurrency: 1,
    stopWhen: [stepCountIs(remaining), () => state.shuttingDown()],
    abortSignal: state.signal,
    maxRetries: 2,
    timeout: { stepMs: config.modelTimeoutMs },
    prepareStep: async ({ stepNumber }) => {
      if (stepNumber === 0) return undefined;
      const next = await prepare();
      callStarted = Date.now();
      return next;
    },
    onLanguageModelCallEnd: async (event) => {
      state.steps += 1;
      state.tokens += (event.usage.inputTokens ?? 0) + (event.usage.outputTokens ?? 0);
      await Promise.all([
        recorder.recordModelResponse(event.content),
        recordModelUsage(db, {
          agentId: state.agent.id,
          conversationId: state.conversation.id,
          purpose: turn.purpose,
          model: state.model.modelId,
          usage: event.usage,
          durationMs: Date.now() - callStarted,
        }),
      ]);
    },
    onStepEnd: async (step) => {
      // A stop gives the step's open calls their marker itself.
      if (state.signal.aborted) return;
      const errors = step.content.flatMap((part) => (part.type === "tool-error" ? [{ toolCallId: part.toolCallId, error: part.error }] : []));
      await recorder.recordMissingResults("(no result: the tool did not run)", errors);
    },
  });
  if (recorder.executedTools.includes("createInboxItem")) state.briefed = true;
  const last = result.steps.at(-1);
  return last?.finishReason === "tool-calls" && state.steps >= config.maxStepsPerSession;
}

const TEAM_TOKENS_TTL_MS = 30_000;

/**
 * The team's tokens today: read from the usage rows at most every 30 s, with this
 * session's own spending since that read added, so a tool round needs no query for it.
 * Other sessions of the team are counted at the next read.
 */
async function teamTokensToday(deps: EngineDeps, state: SessionState): Promise<number> {
  const cached = state.teamTokens;
  if (cached && Date.now() - cached.readAt < TEAM_TOKENS_TTL_MS) return cached.total + (state.tokens - cached.sessionTokensAtRead);
  const total = await getTeamTokensToday(deps.db, state.team.id);
  state.teamTokens = { total, readAt: Date.now(), sessionTokensAtRead: state.tokens };
  return total;
}

/** Refuses the next model call when the session or its team has spent its tokens. */
async function checkBudgets(deps: EngineDeps, state: SessionState): Promise<void> {
  const { sessionTokenBudget, teamDailyTokenBudget } = deps.config;
  if (state.tokens >= sessionTokenBudget) {
    throw new BudgetExceeded(
      `this session used ${state.tokens} tokens, over its budget of ${sessionTokenBudget} (SESSION_TOKEN_BUDGET)`,
    );
  }
  const today = await teamTokensToday(deps, state);
  if (today >= teamDailyTokenBudget) {
    throw new BudgetExceeded(
      `the team "${state.team.name}" used ${today} tokens today, over its daily budget of ${teamDailyTokenBudget} (TEAM_DAILY_TOKEN_BUDGET); it resumes tomorrow`,
    );
  }
}
