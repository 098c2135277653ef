import "server-only";
import { JSONParseError, stepCountIs, type FinishReason, type StepResult, type ToolSet } from "ai";
import { TransactionRollbackError } from "drizzle-orm";
import type { Db } from "@/lib/db/client";
import { requireAgent } from "@/lib/db/queries/agents";
import { getOldestAgentInput, hasAgentInputAbout } from "@/lib/db/queries/agent-inputs";
import {
  appendMessage,
  appendMessages,
  getLastMessage,
  getMessagesSince,
  latestInContext,
  tailAnswersLastCall,
  type NewMessage,
} from "@/lib/db/queries/messages";
import { hasOpenQuestion } from "@/lib/db/queries/questions";
import {
  hasDecidedUnresolvedApproval,
  hasPendingApproval,
  hasUnresolvedApprovalOfTask,
} from "@/lib/db/queries/approvals";
import { getTask, listOpenSubtasks, listTasksByAgent } from "@/lib/db/queries/tasks";
import { openTaskStatuses } from "@/lib/db/task-statuses";
import { type NextCallFacts as NextCallFactsRead, readNextCallFacts } from "@/lib/db/queries/next-call";
import { requireTeam, settledTeamStatus } from "@/lib/db/queries/teams";
import {
  finishSessionIfIdle,
  isSessionStopRequested,
  type SessionStart,
  setSessionTask,
} from "@/lib/db/queries/work-sessions";
import type { Agent, Conversation, Message, Task, Team, UsagePurpose, WorkSession } from "@/lib/db/schema";
import { generateModelText, usageRowOf, type ModelCall } from "@/lib/llm/model-call";
import { cutAnswerReason, emptyAnswerReason, toolCallsAsTextReason, unusableAnswersReason } from "@/lib/llm/errors";
import type { ModelChoice } from "@/lib/llm/provider";
import { inSpan } from "@/lib/telemetry/tracing";
import { carryOutDecisions, decisionsNote, tasksReadyToGoOn } from "./approvals";
import { checkBudgets, recordSpending, recordTeamSpending, teamOverBudget } from "@/lib/domain/budgets";
import { ContextReader, loadContextForCall } from "./compaction";
import type { EngineDeps } from "@/lib/core/engine-config";
import {
  formatOpenTasks,
  OPEN_TASKS_LIKE,
  parseLogInput,
  parseOpenTasks,
  stepLimitMarker,
  taskSourceWords,
} from "@/lib/core/formats";
import { extractKnowledgeFromConversation } from "@/lib/domain/knowledge-items";
import {
  BRIEFING_DECISION_PROMPT,
  CUT_ANSWER_NOTE,
  EMPTY_ANSWER_NOTE,
  resumeTaskMessage,
  TOOL_CALL_AS_TEXT_NOTE,
  taskMessage,
  workInstructions,
} from "@/lib/core/prompts";
import { StepRecorder } from "./step-recorder";
import { completeTask, failTask, startTask } from "@/lib/domain/task-lifecycle";
import { workTools } from "./tools";
import { openTurn, type TurnOwner, turnTools } from "./turn";
import { awaitsReply, moveQueuedInput, storyTaskOfInput } from "./work-log";

export type SessionState = {
  session: WorkSession;
  agent: Agent;
  team: Team;
  conversation: Conversation;
  model: ModelChoice;
  steps: number;
  /** Input + output tokens this session has spent (its own budget; the team's is kept in budgets.ts). */
  tokens: number;
  stepsAtWrapUp: number;
  briefed: boolean;
  /**
   * The task the current turn serves: its result is that turn's last words, and what
   * the agent delegates or asks in it belongs to it. Null: a turn about no task (a
   * webhook, a report on work delegated outside any task); undefined: no turn yet.
   */
  focus: string | null | undefined;
  /**
   * The task what the session writes belongs to (messages.task_id, usage.task_id,
   * work_sessions.task_id): the task in focus, or the task the input of a turn about no open
   * task was about (a report on a task that ended); kept through the wrap-up, whose knowledge
   * and briefing come of that work. Null for a turn about no task at all.
   */
  storyTask: string | null;
  /** Why the model's last answer of the latest turn ended ("length": cut off at its output limit). */
  lastFinish?: FinishReason;
  /**
   * The turn the agent's last session did not finish (its worker was killed mid-call, or it
   * is retried after an error), found where the log stands as this session starts
   * (startSessionState): it goes on first, about the task it was about. Cleared once taken up.
   */
  cutTurn?: CutTurn;
  /** The log's tail when the session started: extraction reads what came after. */
  startTail: string | null;
  /**
   * The latest note on the agent's open tasks that its context holds (formatOpenTasks): null,
   * none since the latest summary; undefined, not read yet this session (or compacted since).
   */
  tasksNote?: string | null;
  /** Agent and team were read a moment ago, after the claim (whose row carries any Stop): the loop's first look need not read them again. */
  freshlyRead?: boolean;
  signal: AbortSignal;
  /** Aborts the session as the person's Stop does. */
  stop: () => void;
  shuttingDown: () => boolean;
  recorder?: StepRecorder;
};

/** A turn a session did not finish: the task it was about (focus), the task its rows belong to (story), and whether it was the briefing decision. */
type CutTurn = { focus: string | null; story: string | null; briefing: boolean };

/**
 * A work session's state as it starts — the one place it is made, for a fresh session and for
 * one that takes over from a worker that died. Where the log stands says whether a turn was
 * cut short (its tail still awaits the model): then the session knows the task it was working
 * on, goes on with that turn first (workUntilIdle), and the session row names that task at
 * once, so the results the dead worker's calls get (closeInterruptedCalls) belong to it too.
 * Without this a taken-over turn ran about no task: what the lead delegated in it had no
 * parent task, and the lead's task completed while that work was still open.
 */
export async function startSessionState(
  deps: EngineDeps,
  start: Pick<SessionStart, "agent" | "team" | "conversation" | "context"> & { session: WorkSession },
  controls: Pick<SessionState, "signal" | "stop" | "shuttingDown">,
): Promise<SessionState> {
  const { session, agent, team, conversation, context } = start;
  const cutTurn = await cutTurnOf(deps.db, agent.id, context);
  const state: SessionState = {
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
    startTail: context.at(-1)?.id ?? null,
    freshlyRead: true,
    ...controls,
    ...(cutTurn ? { cutTurn } : {}),
  };
  if (cutTurn?.story) {
    state.storyTask = cutTurn.story;
    await setSessionTask(deps.db, session.id, cutTurn.story);
  }
  return state;
}

/**
 * The turn the log's tail shows was cut short, or undefined when the last turn ended. Its task
 * is the one its last rows were written for (messages.task_id: the story's task, which is the
 * task in focus whenever the agent's own); a turn about no task of the agent's stays about none.
 */
async function cutTurnOf(db: Db, agentId: string, context: readonly Message[]): Promise<CutTurn | undefined> {
  const tail = context.at(-1) ?? null;
  if (!tail || !awaitsReply(tail)) return undefined;
  const briefing = context.findLast((message) => message.role === "user")?.content === BRIEFING_DECISION_PROMPT;
  const task = tail.taskId ? await getTask(db, tail.taskId) : null;
  // The agent's own task even when it ended meanwhile: a delegation or question for it is then refused, not stored without it.
  const focus = !briefing && task?.agentId === agentId ? task.id : null;
  return { focus, story: tail.taskId, briefing };
}

/**
 * Goes on with the turn the session's start found cut short (startSessionState), about its own
 * task, before any new work: input about another task would otherwise come in after its calls'
 * results and run that turn's rest about the wrong task. False when the log moved on
 * meanwhile (nothing awaits the model: a call waits for the person).
 */
async function continueCutTurn(deps: EngineDeps, state: SessionState): Promise<boolean> {
  const cut = state.cutTurn;
  state.cutTurn = undefined;
  if (!cut || !(await logAwaitsModel(deps.db, state.conversation.id))) return false;
  await focusOn(deps.db, state, cut.focus, cut.story);
  if (cut.briefing) {
    await runTurn(deps, state, BRIEFING_TURN);
    // The briefing decision was the wrap-up's last part: it is not asked again for the same work.
    state.stepsAtWrapUp = state.steps;
    return true;
  }
  await runTurn(deps, state, { purpose: "work", takesInput: true });
  if (!state.shuttingDown()) await settleFocus(deps, state);
  return true;
}

/** A turn reached MAX_STEPS_PER_SESSION rounds without finishing: the session ends, and what it was working on fails. */
export class StepLimitReached extends Error {
  readonly marker: string;
  constructor(limit: number) {
    super(`The session reached its limit of ${limit} tool rounds.`);
    this.name = "StepLimitReached";
    this.marker = stepLimitMarker(limit);
  }
}

/**
 * A turn's model sent MAX_UNUSABLE_ANSWERS answers in a row that nothing could be done with:
 * each told so, each answer no better. The session ends, and what it was working on fails,
 * instead of spending the step limit's rounds on more of the same.
 */
export class UnusableAnswers extends Error {
  constructor(modelId: string, answers: number) {
    super(unusableAnswersReason(modelId, answers));
    this.name = "UnusableAnswers";
  }
}

/**
 * A task's model wrote its tool calls as text twice, told in between that text is not run: its
 * server does not pass tool calls for it, so no task of the agent's can be done with it. The
 * session ends as for a model whose server refuses tools (classifyEnding): all of the agent's
 * open work fails with the one reason, and the person hears it once.
 */
export class ToolCallsAsText extends Error {
  constructor(readonly modelId: string) {
    super(toolCallsAsTextReason(modelId));
    this.name = "ToolCallsAsText";
  }
}

/**
 * Whether an answer is nothing but a tool call written out as JSON text (`{"name": …,
 * "arguments": …}`, or a list of them, maybe in a code fence): what a model prints when its
 * server's chat template does not pass tools.
 */
export function writesToolCallAsText(words: string): boolean {
  const json = words.replace(/^```(?:json)?\s*/i, "").replace(/\s*```$/, "");
  if (!/^[[{]/.test(json)) return false;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return false;
  }
  const calls = Array.isArray(value) ? value : [value];
  return (
    calls.length > 0 &&
    calls.every((call: unknown) => {
      if (typeof call !== "object" || call === null) return false;
      const named = call as { name?: unknown; function?: { name?: unknown } };
      const name = typeof named.name === "string" ? named.name : named.function?.name;
      return typeof name === "string" && ["arguments", "parameters", "input", "function"].some((key) => key in call);
    })
  );
}

/** Answers in a row whose every tool call could not be run (arguments not JSON, a tool never offered) a turn takes. */
const MAX_UNUSABLE_ANSWERS = 3;

/** How many of a turn's latest answers, in a row, called tools and every one of those calls was unusable. */
function unusableAnswersInARow(steps: readonly Pick<StepResult<ToolSet>, "toolCalls">[]): number {
  let count = 0;
  for (let index = steps.length - 1; index >= 0; index--) {
    const calls = steps[index]!.toolCalls;
    if (calls.length === 0 || !calls.every(unusableCall)) break;
    count += 1;
  }
  return count;
}

/**
 * A call nothing can run: a tool never offered, or arguments that are not JSON (as an answer
 * cut at the length limit leaves them). Arguments in JSON that the tool does not take are a
 * tool error like any other: the model is told, and may well put them right.
 */
function unusableCall(call: { invalid?: boolean; error?: unknown }): boolean {
  if (call.invalid !== true || !(call.error instanceof Error)) return false;
  return call.error.name === "AI_NoSuchToolError" || JSONParseError.isInstance(call.error.cause);
}

/**
 * How the session's loop ended: nothing left (completed, the session ended itself), the
 * worker shutting down (interrupted), MAX_STEPS_PER_SESSION reached between turns (handed
 * over), or the team over its daily budget (the reason). See classifyEnding.
 */
export type WorkLoopOutcome = "completed" | "interrupted" | "handed-over" | { overBudget: string };

/**
 * The session's loop: take the next piece of work (queued input for one task, or one
 * pending task), run a turn with that task in focus, settle it, and again; when
 * nothing is left, wrap up once (knowledge, a lead's briefing decision) and end if no
 * wake-up came meanwhile. New input after the wrap-up sends it back to work. A team over its
 * daily budget takes no work: the session ends (`overBudget`, the reason) and the work waits.
 */
export async function workUntilIdle(deps: EngineDeps, state: SessionState): Promise<WorkLoopOutcome> {
  const { db } = deps;
  for (;;) {
    if (state.shuttingDown()) return "interrupted";
    // A long run of turns (many tasks, many reports) hands over to a fresh session between turns.
    if (state.steps >= deps.config.maxStepsPerSession) return "handed-over";
    if (state.freshlyRead) state.freshlyRead = false;
    else {
      const [agent, stopRequested] = await Promise.all([
        requireAgent(db, state.agent.id),
        isSessionStopRequested(db, state.session.id),
      ]);
      state.agent = agent;
      state.team = await requireTeam(db, state.agent.teamId);
      // The NOTIFY and the heartbeat usually get there first; this catches a Stop that reached neither yet.
      if (stopRequested) {
        state.stop();
        state.signal.throwIfAborted();
      }
    }
    state.signal.throwIfAborted();
    const paused = state.team.status === "paused";
    // Checked before work is taken, so nothing is begun that the budget would cut at its first call.
    // Cheap: the team's spending is an estimate kept in this process (budgets.ts), read again only now and then.
    const overBudget = paused ? null : await teamOverBudget(deps, state.team);
    if (overBudget) return { overBudget };

    if (!paused && state.cutTurn && (await continueCutTurn(deps, state))) continue;
    if (!paused && ((await takeNextWork(deps, state)) || (await logAwaitsModel(db, state.conversation.id)))) {
      await runTurn(deps, state, { purpose: "work", takesInput: true });
      if (state.shuttingDown()) return "interrupted";
      await settleFocus(deps, state);
      continue;
    }
    if (!paused && state.steps > state.stepsAtWrapUp) {
      await wrapUp(deps, state);
      state.stepsAtWrapUp = state.steps;
      continue;
    }
    // Paused, as read without a lock: a resume whose transaction is still open reads as paused
    // here, and it may have looked for agents with work before this agent's arrived (a
    // delegation committed meanwhile, whose wake-up started this very session). Ending now
    // would leave that work to nobody; so the pause is read again once any such write has
    // committed, and a team found active sends the session back to work.
    if (paused && (await settledTeamStatus(db, state.team.id)) === "active") continue;
    if (await finishSessionIfIdle(db, state.session.id, state.agent.id, state.steps)) return "completed";
  }
}

/**
 * Puts the next piece of work into the log and focuses on it, oldest kind first:
 * queued input (for the task the oldest input is about, with input about no task), a
 * task left in progress with nothing under way (after a crash), then the oldest
 * pending task. When the agent's open tasks or its focus change with it, a note saying
 * so goes in just before (see noteOpenTasks). Returns false when there is none.
 */
async function takeNextWork(deps: EngineDeps, state: SessionState): Promise<boolean> {
  const { db } = deps;
  const agentId = state.agent.id;
  const held = { heldBy: state.session.id };
  // The person decided on calls that waited: carry the decisions out, and go on with a
  // task whose calls all have their results now (its turn continues from them).
  // The places work can come from, read together; re-read after decisions were carried out.
  let [decided, oldest, open] = await Promise.all([
    hasDecidedUnresolvedApproval(db, state.conversation.id),
    getOldestAgentInput(db, agentId),
    listOpenTasks(db, agentId),
  ]);
  if (decided) {
    const recorder = new StepRecorder(db, state.conversation.id, {
      heldBy: state.session.id,
      task: () => state.storyTask,
    });
    const { tools } = await turnTools(deps, ownerOf(state, recorder), workTools);
    const carried = await carryOutDecisions(
      {
        db,
        jobs: deps.jobs,
        agent: state.agent,
        tools,
        recorder,
        abortSignal: state.signal,
        focus: (taskId) => (state.focus = state.storyTask = taskId),
      },
      state.conversation.id,
    );
    const [readyTasks, nextOldest, nextOpen] = await Promise.all([
      tasksReadyToGoOn(db, carried),
      getOldestAgentInput(db, agentId),
      listOpenTasks(db, agentId),
    ]);
    [oldest, open] = [nextOldest, nextOpen];
    const ready = readyTasks[0];
    if (ready !== undefined) {
      await focusOn(db, state, ready);
      // The results sit with their calls, unless the log moved on meanwhile: then a note says
      // what was decided, and (only then: a turn that goes on from its results is still on
      // its task) a note on the open tasks goes before it.
      const decisions = await decisionsNote(
        db,
        state.conversation.id,
        carried.filter((approval) => approval.taskId === ready),
      );
      if (decisions) await appendNotes(db, state, [await noteOpenTasks(db, state, open, ready), decisions], held);
      return true;
    }
  }
  const openIds = new Set(open.map((task) => task.id));
  if (oldest) {
    const focus = oldest.taskId && openIds.has(oldest.taskId) ? oldest.taskId : null;
    const note = await noteOpenTasks(db, state, open, focus);
    const moved = await moveQueuedInput(
      db,
      agentId,
      state.conversation.id,
      { taskId: oldest.taskId },
      { ...held, before: note },
    );
    if (moved.length > 0) {
      if (note) state.tasksNote = note.content;
      await focusOn(db, state, focus, storyTaskOfInput(oldest));
      return true;
    }
  }
  // Oldest first.
  const waiting = [...open].reverse();
  for (const task of waiting.filter((task) => task.status === "in_progress")) {
    if (task.id === state.focus || (await hasWorkUnderWay(db, task.id))) continue;
    await focusOn(db, state, task.id);
    await appendNotes(
      db,
      state,
      [
        await noteOpenTasks(db, state, open, task.id),
        { role: "user", content: resumeTaskMessage(task), taskId: task.id },
      ],
      held,
    );
    return true;
  }
  for (const task of waiting.filter((task) => task.status === "pending")) {
    // The note the task's start makes (it is in progress and in focus from now on).
    const note = await noteOpenTasks(
      db,
      state,
      open.map((each) => (each.id === task.id ? { ...each, status: "in_progress" as const } : each)),
      task.id,
    );
    // The task's start and its message in the log go out together, pipelined in the
    // transaction (one round trip, not two); a task that ended meanwhile rolls its message back.
    const begun = await db
      .transaction(async (tx) => {
        const [updated] = await Promise.all([
          startTask(tx, task.id),
          appendMessages(
            tx,
            state.conversation.id,
            [...(note ? [note] : []), { role: "user", content: taskMessage(task), taskId: task.id }],
            held,
          ),
        ]);
        if (!updated) tx.rollback();
        return updated;
      })
      .catch((error: unknown) => {
        if (error instanceof TransactionRollbackError) return null;
        throw error;
      });
    if (begun) {
      if (note) state.tasksNote = note.content;
      await focusOn(db, state, begun.id);
      return true;
    }
  }
  return false;
}

/** The agent's open tasks, newest first. */
function listOpenTasks(db: Db, agentId: string): Promise<Task[]> {
  return listTasksByAgent(db, agentId, openTaskStatuses);
}

/**
 * The note on the agent's open tasks and its focus (formatOpenTasks) that goes into the log
 * just before the input of a turn about `focus`; null when the latest note in its context says
 * the same already. This is how the agent learns what changes as it works, instead of from
 * its instructions: those stay the same, so each request extends the one before it and the
 * provider's prompt cache serves all of it. `open`: newest first, as the turn will find them.
 */
async function noteOpenTasks(
  db: Db,
  state: SessionState,
  open: readonly Pick<Task, "id" | "title" | "status">[],
  focus: string | null,
): Promise<NewMessage | null> {
  const note = formatOpenTasks([...open].reverse(), focus);
  if (state.tasksNote === undefined)
    state.tasksNote = await latestInContext(db, state.conversation.id, OPEN_TASKS_LIKE);
  // With no note to correct, and no task open beside the one the input is about, the input says it all.
  const onlyFocus = open.length === 0 || (open.length === 1 && open[0]!.id === focus);
  if (state.tasksNote === null && onlyFocus) return null;
  return note === state.tasksNote ? null : { role: "user", content: note, taskId: focus };
}

/** Appends notes (the nulls left out) in order, and remembers the note on open tasks among them. */
async function appendNotes(
  db: Db,
  state: SessionState,
  notes: (NewMessage | null)[],
  options: { heldBy: string },
): Promise<void> {
  const present = notes.filter((note) => note !== null);
  await appendMessages(db, state.conversation.id, present, options);
  for (const note of present) if (note.content.startsWith(OPEN_TASKS_LIKE.slice(0, -1))) state.tasksNote = note.content;
}

/**
 * The turn about to run serves `focus`; what it writes belongs to `story` (see SessionState).
 * The session row names the story's task, for the pages ("what is it doing now") and for the
 * rows written without naming one (markers, closed calls: see NewMessage.taskId).
 */
async function focusOn(db: Db, state: SessionState, focus: string | null, story: string | null = focus): Promise<void> {
  state.focus = focus;
  if (story === state.storyTask) return;
  state.storyTask = story;
  await setSessionTask(db, state.session.id, story);
}

/** Delegated work still open, a question unanswered or a call waiting for the person: the task is waiting, not stalled. */
async function hasWorkUnderWay(db: Db, taskId: string): Promise<boolean> {
  return (
    (await listOpenSubtasks(db, taskId)).length > 0 ||
    (await hasOpenQuestion(db, taskId)) ||
    (await hasUnresolvedApprovalOfTask(db, taskId))
  );
}

/**
 * Something in the log wants the model's answer — unless it is a step whose calls wait
 * for the person: then the person answers first (a decision wakes the agent again).
 */
async function logAwaitsModel(db: Db, conversationId: string): Promise<boolean> {
  const tail = await getLastMessage(db, conversationId);
  if (!awaitsReply(tail) || (await hasPendingApproval(db, conversationId))) return false;
  // A result that came after the log moved on past its call (withdrawn with its task) is news to
  // nobody: the model sees its call as it saw it, waiting (toModelMessages), and has nothing to answer.
  return tail?.role !== "tool" || (await tailAnswersLastCall(db, conversationId));
}

/** Who runs the session's turns, recorded by `recorder`: the task in focus and the story's task as they change. */
function ownerOf(state: SessionState, recorder: StepRecorder): TurnOwner {
  return {
    agent: state.agent,
    team: state.team,
    conversationId: state.conversation.id,
    recorder,
    focus: () => state.focus ?? null,
    story: () => state.storyTask,
    workSessionId: state.session.id,
  };
}

/**
 * After a work turn: the task in focus is done when nothing it started is still open —
 * its result is the turn's last words. A subordinate that ends without reportToLead
 * reports anyway (completeTask tells the lead), so its lead is never left waiting.
 *
 * Empty last words (no text, no call), words cut off at the model's output limit, or a tool
 * call written out as text are no result: a note at the log's tail says what was missing and
 * the model answers once more. If its turn after the note is no result either and called no
 * tool (`asks.progressed` false), the task fails with a reason the person and its lead can
 * read — never "completed" with nothing behind it (a tool call as text again ends the
 * session: ToolCallsAsText). A turn after the note that did work with its tools recovered:
 * a missing result at its end is a new one, asked again in turn, up to MAX_ASKS_AGAIN times.
 */
async function settleFocus(
  deps: EngineDeps,
  state: SessionState,
  asks: { made: number; progressed: boolean } = { made: 0, progressed: true },
): Promise<void> {
  const { db } = deps;
  if (!state.focus) return;
  const tail = await getLastMessage(db, state.conversation.id);
  if (awaitsReply(tail)) return;
  const task = await getTask(db, state.focus);
  if (task?.status !== "in_progress" || (await hasWorkUnderWay(db, task.id))) return;
  // Input about it arrived during the turn's last call (a report, an answer): the turn's last
  // words were written without it. The next turn takes it up and settles the task then.
  if (await hasAgentInputAbout(db, state.agent.id, task.id)) return;
  const words = tail?.role === "assistant" ? tail.content.trim() : "";
  const cut = state.lastFinish === "length";
  const asText = words !== "" && writesToolCallAsText(words);
  if (words && !cut && !asText) {
    await db.transaction((tx) => completeTask(tx, deps.jobs, task.id, words));
    return;
  }
  if (asks.progressed && asks.made < MAX_ASKS_AGAIN) {
    await appendMessage(
      db,
      state.conversation.id,
      {
        role: "user",
        content: cut ? CUT_ANSWER_NOTE : asText ? TOOL_CALL_AS_TEXT_NOTE : EMPTY_ANSWER_NOTE,
        taskId: task.id,
      },
      { heldBy: state.session.id },
    );
    const { calledTools } = await runTurn(deps, state, { purpose: "work", takesInput: true });
    if (state.shuttingDown()) return;
    return settleFocus(deps, state, { made: asks.made + 1, progressed: calledTools });
  }
  if (asText && !cut) throw new ToolCallsAsText(state.model.modelId);
  const reason = cut ? cutAnswerReason(state.model.modelId) : emptyAnswerReason(state.model.modelId);
  await db.transaction((tx) => failTask(tx, deps.jobs, task.id, reason));
}

/**
 * How many times one settling asks again after a missing result (each time after the model
 * did work with its tools in between): bounds a model that keeps working and never ends in words.
 */
const MAX_ASKS_AGAIN = 3;

/**
 * After the work: knowledge extraction over what the session added to the log and,
 * for a lead that has not briefed yet, the briefing decision as one more turn.
 */
async function wrapUp(deps: EngineDeps, state: SessionState): Promise<void> {
  const messages = await getMessagesSince(deps.db, state.conversation.id, state.startTail);
  // A check-in that found nothing to do costs its one model call: nothing to learn from, nothing to brief on.
  if (quietCheckIns(messages)) {
    state.startTail = messages.at(-1)?.id ?? state.startTail;
    return;
  }
  await extractKnowledgeFromConversation({
    db: deps.db,
    model: state.model,
    agentId: state.agent.id,
    teamId: state.agent.teamId,
    conversationId: state.conversation.id,
    workSessionId: state.session.id,
    taskId: state.storyTask,
    messages,
    maxInputChars: deps.config.contextTokenBudget * 4 * 0.8,
    abortSignal: state.signal,
    timeoutMs: deps.config.modelTimeoutMs,
    embedding: deps.embedding,
    jobs: deps.jobs,
  });
  state.startTail = messages.at(-1)?.id ?? state.startTail;
  if (state.agent.role === "lead" && !state.briefed) {
    await appendMessage(
      deps.db,
      state.conversation.id,
      { role: "user", content: BRIEFING_DECISION_PROMPT },
      { heldBy: state.session.id },
    );
    state.focus = null;
    // The same tools as every turn, in the same order (the request extends the one before it:
    // the prompt cache), of which only the briefing tool runs: the prompt says so, and so do the others' results.
    await runTurn(deps, state, BRIEFING_TURN);
  }
}

/** The wrap-up's briefing decision: the same tools as every turn, of which only the briefing tool runs. */
const BRIEFING_TURN: Turn = { purpose: "briefing", only: ["createInboxItem"], maxSteps: 2, takesInput: false };

/** Tools that only look at what the team has already (its status, its knowledge): nothing is learned or changed by calling them. */
const LOOKS_INWARD = new Set(["getTeamStatus", "searchKnowledge"]);

/**
 * Whether what a session added to the log is only check-ins its schedule gave, in which the
 * agent at most looked at its team and its knowledge: nothing was done, searched or read
 * outside, and nothing heard from anyone (a report, an answer, a webhook).
 */
function quietCheckIns(messages: readonly Message[]): boolean {
  let checkIns = 0;
  for (const message of messages) {
    if (message.role === "summary" || (message.toolCalls ?? []).some((call) => !LOOKS_INWARD.has(call.toolName)))
      return false;
    if (message.role === "tool") continue;
    if (message.role !== "user" || parseOpenTasks(message.content)) continue;
    const input = parseLogInput(message.content);
    if (input?.kind !== "task" || input.from !== taskSourceWords("schedule")) return false;
    checkIns += 1;
  }
  return checkIns > 0;
}

/**
 * Runs the model with tools until it stops calling them. Before every model call:
 * input queued for the task in focus moves into the log (that is the injection: a
 * report that arrives mid-turn is in the next call), the context is compacted when
 * over budget and read. Each answer is stored right after the context its call was
 * given, or the session fails loudly. Throws StepLimitReached when the session's
 * step limit cut the turn short.
 */
async function runTurn(deps: EngineDeps, state: SessionState, turn: Turn): Promise<TurnEnd> {
  // The turn's span names the task it serves; its model and tool calls nest under it.
  return inSpan("work_turn", { "cadre.task.id": state.focus, "cadre.turn.purpose": turn.purpose }, () =>
    runTurnSteps(deps, state, turn),
  );
}

/** `only`: the tools that may run in this turn (the others are offered all the same, and answer that they cannot run now). */
type Turn = { purpose: UsagePurpose; only?: readonly string[]; maxSteps?: number; takesInput: boolean };

/** How a turn went: `calledTools`, whether any of its answers called a tool that could be run (work was done). */
type TurnEnd = { calledTools: boolean };

async function runTurnSteps(deps: EngineDeps, state: SessionState, turn: Turn): Promise<TurnEnd> {
  const { db, config } = deps;
  // Each turn may take the limit's rounds: the limit stops a runaway turn, not a session with many tasks.
  const turnStartSteps = state.steps;
  const remaining = Math.min(turn.maxSteps ?? Infinity, config.maxStepsPerSession);

  // The recorder tells the context what it wrote, so a round reads the log only when someone else wrote to it.
  const history = new ContextReader(db, state.conversation.id);
  const facts = new NextCallFacts(db, state);
  const recorder: StepRecorder = new StepRecorder(db, state.conversation.id, {
    follower: history,
    task: () => state.storyTask,
    resultsInBackground: true,
    heldBy: state.session.id,
    onResultAhead: () => facts.readAhead(state.focus ?? null, recorder.effectsRun),
  });
  state.recorder = recorder;
  const parts = await openTurn(deps, ownerOf(state, recorder), workTools, { only: turn.only, signal: state.signal });
  const calls = callPreparer(deps, state, turn, { history, facts, recorder, parts });
  const first = await calls.prepare();

  const call: ModelCall = {
    db,
    model: state.model,
    purpose: turn.purpose,
    agentId: state.agent.id,
    teamId: state.agent.teamId,
    conversationId: state.conversation.id,
    workSessionId: state.session.id,
    taskId: state.storyTask,
    timeoutMs: config.modelTimeoutMs,
    abortSignal: state.signal,
    log: deps.log,
    onUsageRecorded: (row) => recordTeamSpending(state.team.id, state.model.modelId, row),
    // Written with the step's answer, by the same statement (see onLanguageModelCallEnd below).
    usageStoredByCaller: true,
  };
  const { tools, toolApproval } = parts;
  let result: Awaited<ReturnType<typeof generateModelText<ToolSet>>>;
  try {
    result = await generateModelText(call, {
      instructions: first.instructions,
      messages: first.messages,
      tools,
      toolApproval,
      // OpenAI's Responses API can limit the callable tools without changing the ones offered.
      providerOptions:
        turn.only && state.model.kind === "openai" && turn.only.every((name) => name in tools)
          ? { openai: { allowedTools: { toolNames: [...turn.only] } } }
          : undefined,
      toolCallConcurrency: 1,
      stopWhen: [
        stepCountIs(remaining),
        () => state.shuttingDown(),
        ({ steps }) => unusableAnswersInARow(steps) >= MAX_UNUSABLE_ANSWERS,
      ],
      prepareStep: async ({ stepNumber }) => {
        recorder.throwIfFailed();
        return stepNumber === 0 ? undefined : calls.prepare();
      },
      // Stores the answer, right after the context it was given, and the call's usage row with it.
      onLanguageModelCallEnd: async (event) => {
        state.steps += 1;
        // The row's count: the provider's, or Cadre's estimate when the server sent none.
        const usage = usageRowOf(call, event);
        recordSpending(state, usage);
        await recorder.recordModelResponse(event.content, calls.contextTail(), usage);
        call.onUsageRecorded?.(usage);
      },
      onStepEnd: parts.endStep,
    });
  } finally {
    // However the turn ended (a stop, a failure), the results on their way land before anything
    // closes the step's calls or reads the log.
    await recorder.drained();
  }
  // The SDK swallows a callback's error: an answer or a result that could not be stored ends the session here.
  recorder.throwIfFailed();
  if (recorder.executedTools.includes("createInboxItem")) state.briefed = true;
  const last = result.steps.at(-1);
  state.lastFinish = last?.finishReason;
  if (unusableAnswersInARow(result.steps) >= MAX_UNUSABLE_ANSWERS && !state.shuttingDown())
    throw new UnusableAnswers(state.model.modelId, MAX_UNUSABLE_ANSWERS);
  const waitsForPerson = recorder.heldForDecision > 0;
  if (
    last?.finishReason === "tool-calls" &&
    !waitsForPerson &&
    state.steps - turnStartSteps >= config.maxStepsPerSession &&
    !state.shuttingDown()
  ) {
    throw new StepLimitReached(config.maxStepsPerSession);
  }
  return { calledTools: result.steps.some((step) => step.toolCalls.some((each) => !unusableCall(each))) };
}

/**
 * The facts the next call's prompt needs (readNextCallFacts: the team's members, whether input
 * waits, where the log's tail is), read the moment a tool's result is on its way: the SDK's own
 * work after a tool then overlaps the round trip. Read ahead facts are used only if nothing
 * changed since (no later call wrote to the database, the focus is the same); a later result
 * reads them again.
 */
class NextCallFacts {
  private ahead: { facts: Promise<NextCallFactsRead>; focus: string | null; effectsRun: number } | null = null;

  constructor(
    private readonly db: Db,
    private readonly state: SessionState,
  ) {}

  readAhead(focus: string | null, effectsRun: number): void {
    const facts = this.read(focus);
    // One replaced by a later result is never awaited: its failure must not go unhandled.
    facts.catch(() => {});
    this.ahead = { facts, focus, effectsRun };
  }

  /** The facts for a call about `focus`: those read ahead when still good, else read now. */
  take(focus: string | null, effectsRun: number): Promise<NextCallFactsRead> {
    const { ahead } = this;
    this.ahead = null;
    return ahead?.focus === focus && ahead.effectsRun === effectsRun ? ahead.facts : this.read(focus);
  }

  private read(focusTaskId: string | null): Promise<NextCallFactsRead> {
    const { state } = this;
    return readNextCallFacts(this.db, {
      teamId: state.team.id,
      agentId: state.agent.id,
      conversationId: state.conversation.id,
      focusTaskId,
    });
  }
}

/**
 * What goes before each model call of a turn: the instructions (the same every call) and the
 * context. Independent reads go out together, each round trip sitting between two model calls.
 * `contextTail`: the log's last message the latest context held (the answer is stored after it).
 */
function callPreparer(
  deps: EngineDeps,
  state: SessionState,
  turn: Turn,
  parts: {
    history: ContextReader;
    facts: NextCallFacts;
    recorder: StepRecorder;
    parts: Awaited<ReturnType<typeof openTurn>>;
  },
) {
  const { db, config } = deps;
  const { history, facts, recorder } = parts;
  const { tools, awaitingDecision, heldForPerson } = parts.parts;
  let contextTail: string | null = null;
  const prepare = async () => {
    // The prompt's facts, whether input waits and where the log's tail is are read while the
    // last tool result's write is on its way: the context already holds the result, and the
    // next answer is stored only after it (see StepRecorder.recordResultAhead). Only when input
    // waits, the transaction that moves it into the log runs, after the result, and the log
    // is read again.
    const focus = state.focus ?? null;
    const firstRead = history.hasRead ? null : history.read();
    // Awaited below; when the reads beside it fail first, its own failure must not go unhandled.
    firstRead?.catch(() => {});
    const [next] = await Promise.all([
      facts.take(focus, recorder.effectsRun),
      checkBudgets(deps, state),
      recorder.announced(),
    ]);
    const read = firstRead ? await firstRead : await history.readUnlessAt(next.tail);
    const system = workInstructions({ agent: state.agent, team: state.team, members: next.members });
    let context = read;
    if (turn.takesInput && next.inputWaits) {
      await recorder.settled();
      const moved = await moveQueuedInput(
        db,
        state.agent.id,
        state.conversation.id,
        { taskId: focus },
        { heldBy: state.session.id },
      );
      if (moved.length > 0) context = await history.read();
    }
    const messages = await loadContextForCall(
      {
        db,
        model: state.model,
        agentId: state.agent.id,
        teamId: state.agent.teamId,
        workSessionId: state.session.id,
        taskId: state.storyTask,
        budget: config.contextTokenBudget,
        instructions: system,
        abortSignal: state.signal,
        timeoutMs: config.modelTimeoutMs,
        awaitingDecision,
        heldForPerson,
        tools,
        // The open tasks and the one in focus, said again right after the summary: a summary
        // made mid-turn is all the model has of the work, and it may have left the focus out.
        restate: async () => {
          const open = await listOpenTasks(db, state.agent.id);
          if (open.length === 0) return null;
          return { role: "user", content: formatOpenTasks([...open].reverse(), focus), taskId: focus };
        },
        // The note after the summary is the latest one now: read it anew when it is next needed.
        onCompacted: () => (state.tasksNote = undefined),
      },
      history,
      context,
    );
    contextTail = history.lastMessageId;
    return { instructions: system, messages };
  };
  return { prepare, contextTail: () => contextTail };
}
