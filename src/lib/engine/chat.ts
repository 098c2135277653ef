import "server-only";
import type { Span } from "@opentelemetry/api";
import {
  consumeStream,
  createUIMessageStream,
  createUIMessageStreamResponse,
  stepCountIs,
  toUIMessageStream,
} from "ai";
import { getAgent, requireAgent } from "@/lib/db/queries/agents";
import {
  hasDecidedUnresolvedApproval,
  hasPendingApproval,
  withdrawApprovalsOfConversation,
} from "@/lib/db/queries/approvals";
import { getForegroundConversation } from "@/lib/db/queries/conversations";
import { appendMessage, listMessages } from "@/lib/db/queries/messages";
import type { Db } from "@/lib/db/client";
import { listTeamAgents, requireTeam, writeUnderAgent } from "@/lib/db/queries/teams";
import { CadreError } from "@/lib/errors";
import type { Agent, Team } from "@/lib/db/schema";
import { cutReplyMessage, describeModelError, emptyReplyMessage, isModelFailure } from "@/lib/llm/errors";
import { agentAttributes, inSpan, markFailed, openSpan, type OpenSpan } from "@/lib/telemetry/tracing";
import { generateModelText, streamModelText, type ModelCall } from "@/lib/llm/model-call";
import { teamSpendToday } from "@/lib/usage/spend";
import { teamBudgetProblem, teamSpendingRecorder } from "@/lib/domain/budgets";
import { carryOutDecisions, noteDecisionsUnlessAtTail } from "./approvals";
import { logAwaitsReply } from "./work-log";
import { STOPPED_MARKER, errorMarker } from "@/lib/core/formats";
import { ContextReader, loadContextForCall } from "./compaction";
import type { EngineDeps } from "@/lib/core/engine-config";
import { chatInstructions } from "@/lib/core/prompts";
import { StepRecorder } from "./step-recorder";
import { foregroundTools } from "./tools";
import { openTurn, type TurnOwner } from "./turn";

const MAX_CHAT_STEPS = 6;

/**
 * The person's message to an agent and the streamed reply (flow 1). The message is
 * stored before anything else; every step of the reply is stored as it completes;
 * a Stop keeps what was said so far, marked as stopped; a model failure leaves a
 * message saying what went wrong. The client's copy of the history is ignored: the
 * foreground conversation in the database is the history.
 */
export async function streamChatReply(
  deps: EngineDeps,
  agentId: string,
  text: string,
  signal: AbortSignal,
  options: { regenerate?: boolean } = {},
): Promise<Response> {
  // The reply's span (when tracing is on) outlives this function: it ends with the stream.
  const reply = openSpan("chat_reply", { "gen_ai.agent.id": agentId });
  if (!reply) return replyInChat(deps, agentId, text, signal, options, undefined);
  try {
    return await reply.run(() => replyInChat(deps, agentId, text, signal, options, reply));
  } catch (error) {
    reply.end(error);
    throw error;
  }
}

async function replyInChat(
  deps: EngineDeps,
  agentId: string,
  text: string,
  signal: AbortSignal,
  options: { regenerate?: boolean },
  reply: OpenSpan | undefined,
): Promise<Response> {
  const { db, config } = deps;
  const agent = await requireAgent(db, agentId);
  const team = await requireTeam(db, agent.teamId);
  reply?.span.setAttributes(agentAttributes(agent, team));
  const overBudget = teamBudgetProblem(team, await teamSpendToday(db, team.id), config, "chat");
  if (overBudget)
    throw new CadreError("rate_limited:team_budget", `${overBudget[0]!.toUpperCase()}${overBudget.slice(1)}.`);
  // Under the team's lock (writeUnderAgent): an agent or team deleted meanwhile is a 404, not a foreign-key violation.
  const conversation = await writeUnderAgent(db, agent.id, async (tx) => {
    const conversation = await getForegroundConversation(tx, agent.id);
    // Calls still waiting for a decision: the person wrote instead of deciding, so they are withdrawn.
    if (!options.regenerate)
      await withdrawApprovalsOfConversation(tx, conversation.id, "the person wrote a new message instead of deciding");
    return conversation;
  });
  reply?.span.setAttribute("gen_ai.conversation.id", conversation.id);
  // Every decided call gets its result before the new message: a call and its result stay together.
  await carryOutChatDecisions(deps, agent, team, conversation.id, signal);
  // Regenerating (Retry) answers the stored history again; the person's message is already in
  // it — unless the request that failed never reached the server, and then it is stored now.
  await writeUnderAgent(db, agent.id, async (tx) => {
    if (options.regenerate && (await lastPersonMessage(tx, conversation.id)) === text) return;
    await appendMessage(tx, conversation.id, { role: "user", content: text });
  });

  const turn = await prepareChatTurn(deps, agent, team, conversation.id, signal);
  const { model, recorder } = turn;
  let partial = "";
  let finished = false;
  const call: ModelCall = {
    db,
    model,
    purpose: "chat",
    agentId: agent.id,
    teamId: agent.teamId,
    conversationId: conversation.id,
    timeoutMs: config.modelTimeoutMs,
    abortSignal: signal,
    log: deps.log,
    // The team's budget counts the chat as it counts the work (see checkBudgets).
    onUsageRecorded: teamSpendingRecorder(agent.teamId, model.modelId),
  };
  const result = streamModelText(call, {
    ...(await turn.options()),
    onChunk: ({ chunk }) => {
      if (chunk.type === "text-delta") partial += chunk.text;
    },
    onLanguageModelCallEnd: async (event) => {
      partial = "";
      await recorder.recordModelResponse(saidOrMarked(event, model.modelId));
    },
    onStepEnd: turn.endStep,
    onEnd: () => {
      finished = true;
      reply?.end();
    },
    onAbort: async () => {
      reply?.end();
      if (finished) return;
      finished = true;
      await recorder.recordMissingResults(STOPPED_MARKER);
      await recorder.recordPartialText(partial, STOPPED_MARKER);
    },
    onError: async ({ error }) => {
      reply?.end(error);
      if (finished || signal.aborted) return;
      finished = true;
      if (isAgentDeleted(error)) return; // nothing to log, and nowhere left to store a marker
      deps.log(`[chat ${agent.id}] model failure`, error);
      const message = describeModelError(error);
      await recorder.recordMissingResults(errorMarker(message));
      await recorder.recordPartialText(partial, errorMarker(message));
    },
  });

  const stream = createUIMessageStream({
    execute: ({ writer }) => {
      const told = result.stream.pipeThrough(sayWhenUnfinished(model.modelId));
      writer.merge(toUIMessageStream({ stream: told, onError: describeChatError }));
    },
    // The person sees what went wrong and what to do, never a bare "An error occurred".
    onError: describeChatError,
  });
  return createUIMessageStreamResponse({ stream, consumeSseStream: consumeStream });
}

type ChatTurn = Awaited<ReturnType<typeof prepareChatTurn>>;

/**
 * What a chat turn needs, streamed to the page or run by a worker after a decision: the
 * agent's chat tools under its policies, recorded step by step; the instructions; the
 * context (calls waiting for a decision say so); and the end of a step, where calls held
 * for approval are stored and announced.
 */
async function prepareChatTurn(
  deps: EngineDeps,
  agent: Agent,
  team: Team,
  conversationId: string,
  signal?: AbortSignal,
) {
  const { db, config } = deps;
  const model = deps.chooseModel(agent.model);
  const recorder = new StepRecorder(db, conversationId);
  // The chat serves no task: what it hands out stands on its own.
  const owner: TurnOwner = { agent, team, conversationId, workSessionId: null, recorder, focus: () => null };
  const [{ tools, toolApproval, awaitingDecision, heldForPerson, endStep }, members] = await Promise.all([
    openTurn(deps, owner, foregroundTools, { signal }),
    listTeamAgents(db, team.id),
  ]);
  const instructions = chatInstructions({ agent, team, members });
  const history = new ContextReader(db, conversationId);
  const loadMessages = async () => {
    const messages = await loadContextForCall(
      {
        db,
        model,
        agentId: agent.id,
        teamId: agent.teamId,
        budget: config.contextTokenBudget,
        instructions,
        abortSignal: signal,
        timeoutMs: config.modelTimeoutMs,
        awaitingDecision,
        heldForPerson,
        tools,
      },
      history,
    );
    // It holds at least the person's message: none means the agent (or its team) was deleted since, its conversation with it.
    if (messages.length === 0) throw agentDeleted(agent.id);
    return messages;
  };
  /** What both ways of running the turn pass the model call: streamed to the page, or generated by a worker. */
  const options = async () => ({
    instructions,
    messages: await loadMessages(),
    tools,
    toolApproval,
    toolCallConcurrency: 1,
    stopWhen: stepCountIs(MAX_CHAT_STEPS),
    prepareStep: async ({ stepNumber }: { stepNumber: number }) => {
      if (stepNumber === 0) return undefined;
      recorder.throwIfFailed(); // the last answer could not be stored (the agent was deleted meanwhile): stop here
      return { messages: await loadMessages() };
    },
  });
  return { model, recorder, tools, options, endStep };
}

/** Carries out the decisions made on this chat's calls (see carryOutDecisions); returns them. */
async function carryOutChatDecisions(
  deps: EngineDeps,
  agent: Agent,
  team: Team,
  conversationId: string,
  signal?: AbortSignal,
) {
  if (!(await hasDecidedUnresolvedApproval(deps.db, conversationId))) return [];
  const turn = await prepareChatTurn(deps, agent, team, conversationId, signal);
  return carryOutDecisions(
    { db: deps.db, jobs: deps.jobs, agent, tools: turn.tools, recorder: turn.recorder, abortSignal: signal },
    conversationId,
  );
}

/**
 * After the person decided on calls made in the chat (from the inbox or the chat), in a
 * worker: the decisions are carried out and, once no call of the reply waits any more,
 * the reply goes on from their results, stored step by step like a streamed one. The page
 * shows it through live updates. A model failure leaves its marker in the chat.
 */
export async function resumeChat(deps: EngineDeps, agentId: string): Promise<void> {
  await inSpan("chat_reply", { "gen_ai.agent.id": agentId, "cadre.chat.resumed": true }, (span) =>
    resumeChatReply(deps, agentId, span),
  );
}

async function resumeChatReply(deps: EngineDeps, agentId: string, span: Span | undefined): Promise<void> {
  const { db, config } = deps;
  const agent = await getAgent(db, agentId);
  if (!agent) return; // deleted since: nothing left to resume
  const team = await requireTeam(db, agent.teamId);
  const conversation = await getForegroundConversation(db, agent.id);
  span?.setAttributes({ ...agentAttributes(agent, team), "gen_ai.conversation.id": conversation.id });
  const carried = (await carryOutChatDecisions(deps, agent, team, conversation.id)).filter(
    (approval) => approval.status !== "withdrawn",
  );
  if (await hasPendingApproval(db, conversation.id)) return;
  // Nothing carried out now but the chat still waits for the reply: a resume whose worker died
  // after carrying the decisions out and before the reply was stored. It goes on all the same.
  if (carried.length === 0 && !(await logAwaitsReply(db, conversation.id))) return;
  await noteDecisionsUnlessAtTail(db, conversation.id, carried);
  const turn: ChatTurn = await prepareChatTurn(deps, agent, team, conversation.id);
  const call: ModelCall = {
    db,
    model: turn.model,
    purpose: "chat",
    agentId: agent.id,
    teamId: agent.teamId,
    conversationId: conversation.id,
    timeoutMs: config.modelTimeoutMs,
    log: deps.log,
    onUsageRecorded: teamSpendingRecorder(agent.teamId, turn.model.modelId),
  };
  try {
    await generateModelText(call, {
      ...(await turn.options()),
      onLanguageModelCallEnd: async (event) => {
        await turn.recorder.recordModelResponse(saidOrMarked(event, turn.model.modelId));
      },
      onStepEnd: turn.endStep,
    });
    turn.recorder.throwIfFailed();
  } catch (error) {
    if (isAgentDeleted(error)) return;
    if (!isModelFailure(error)) throw error; // the database went away, a bug: the job is retried
    markFailed(span, error);
    deps.log(`[chat ${agent.id}] model failure while resuming after a decision`, error);
    await turn.recorder.recordMissingResults(errorMarker(describeModelError(error)));
    await appendMessage(db, conversation.id, { role: "assistant", content: errorMarker(describeModelError(error)) });
  }
}

/** How far back a retry looks for the person's message: past one reply's steps (MAX_CHAT_STEPS, each a call and its results). */
const RETRY_LOOKBACK = 50;

/** The person's newest message in the chat, if one of the last few. */
async function lastPersonMessage(db: Db, conversationId: string): Promise<string | null> {
  const recent = await listMessages(db, conversationId, { limit: RETRY_LOOKBACK });
  return recent.findLast((message) => message.role === "user")?.content ?? null;
}

function agentDeleted(agentId: string): CadreError {
  return new CadreError("not_found:agent", `No agent with id ${agentId}: it was deleted.`);
}

/** The agent, and its conversation with it, was deleted mid-reply (its team deleted, say): the reply ends, and it is no model failure. */
function isAgentDeleted(error: unknown): boolean {
  return error instanceof CadreError && (error.code === "not_found:agent" || error.code === "not_found:conversation");
}

function describeChatError(error: unknown): string {
  if (error instanceof UnfinishedReply) return error.message;
  return isAgentDeleted(error)
    ? "This agent was deleted while it answered; the rest of the reply was not kept."
    : describeModelError(error);
}

/** A reply whose last answer said nothing and called nothing, or was cut off at the model's output limit: the person is told so, in words. */
class UnfinishedReply extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnfinishedReply";
  }
}

type AnswerPart = { type: string; text?: string };

/** Whether an answer says nothing and calls nothing (reasoning alone is nothing to the person). */
function saysNothing(content: readonly AnswerPart[]): boolean {
  return !content.some((part) => part.type === "tool-call" || (part.type === "text" && part.text?.trim()));
}

/**
 * An answer as it is stored: one that says nothing is stored as the error it is, and words cut
 * off at the output limit (with no call to go on with: the reply ends there) with that error
 * after them, so the chat shows it and a reload still does.
 */
function saidOrMarked<T extends AnswerPart>(
  answer: { content: readonly T[]; finishReason: string },
  modelId: string,
): readonly AnswerPart[] {
  const { content, finishReason } = answer;
  if (saysNothing(content)) return [{ type: "text", text: errorMarker(emptyReplyMessage(modelId)) }];
  if (finishReason === "length" && !content.some((part) => part.type === "tool-call"))
    return [...content, { type: "text", text: `\n\n${errorMarker(cutReplyMessage(modelId))}` }];
  return content;
}

/**
 * The reply's stream, with an error part before its end when its last step said nothing and
 * called nothing (the person reads why there is no answer instead of an empty bubble), or was
 * cut off at the model's output limit (the person reads that the words shown are not all).
 */
function sayWhenUnfinished<PART extends AnswerPart & { finishReason?: string }>(
  modelId: string,
): TransformStream<PART, PART> {
  let said = false;
  let called = false;
  let failed = false;
  const tell = (message: string) => ({ type: "error", error: new UnfinishedReply(message) }) as unknown as PART;
  return new TransformStream({
    transform(part, controller) {
      if (part.type === "start-step") said = called = false;
      else if (part.type === "tool-call") said = called = true;
      else if (part.type === "text-delta" && part.text?.trim()) said = true;
      else if (part.type === "error" || part.type === "abort") failed = true;
      else if (part.type === "finish" && !failed) {
        if (!said) controller.enqueue(tell(emptyReplyMessage(modelId)));
        else if (part.finishReason === "length" && !called) controller.enqueue(tell(cutReplyMessage(modelId)));
      }
      controller.enqueue(part);
    },
  });
}
