import { consumeStream, createUIMessageStream, createUIMessageStreamResponse, stepCountIs, toUIMessageStream } from "ai";
import { requireAgent } from "@/lib/db/queries/agents";
import { getForegroundConversation } from "@/lib/db/queries/conversations";
import { appendMessage } from "@/lib/db/queries/messages";
import { listTeamAgents, requireTeam, writeUnderAgent } from "@/lib/db/queries/teams";
import { getTeamTokensToday } from "@/lib/db/queries/usage";
import { CadreError } from "@/lib/errors";
import { describeModelError } from "@/lib/llm/errors";
import { streamModelText, type ModelCall } from "@/lib/llm/model-call";
import { STOPPED_MARKER, errorMarker } from "./formats";
import { ContextReader, loadContextForCall } from "./compaction";
import type { EngineDeps } from "./engine-config";
import { chatInstructions } from "./prompts";
import { StepRecorder, stepToolErrors } from "./step-recorder";
import { foregroundTools, type ToolContext } from "./tools";

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
  const { db, config } = deps;
  const agent = await requireAgent(db, agentId);
  const team = await requireTeam(db, agent.teamId);
  const spentToday = await getTeamTokensToday(db, team.id);
  if (spentToday >= config.teamDailyTokenBudget) {
    throw new CadreError(
      "rate_limited:team_budget",
      `The team "${team.name}" used ${spentToday} tokens today, over its daily budget of ${config.teamDailyTokenBudget} (TEAM_DAILY_TOKEN_BUDGET). It can chat again tomorrow, or raise the budget.`,
    );
  }
  // Under the team's lock (writeUnderAgent): an agent or team deleted meanwhile is a 404, not a foreign-key violation.
  const conversation = await writeUnderAgent(db, agent.id, async (tx) => {
    const conversation = await getForegroundConversation(tx, agent.id);
    // Regenerating answers the stored history again; the person's message is already in it.
    if (!options.regenerate) await appendMessage(tx, conversation.id, { role: "user", content: text });
    return conversation;
  });

  const model = deps.chooseModel(agent.model);
  const recorder = new StepRecorder(db, conversation.id);
  const context: ToolContext = {
    db,
    jobs: deps.jobs,
    agent,
    team,
    conversationId: conversation.id,
    search: config.search,
    // The chat serves no task: what it hands out stands on its own.
    focusTaskId: () => null,
    effect: (toolCallId, write) => recorder.runEffect(toolCallId, write),
  };
  const tools = recorder.wrapTools(foregroundTools(context));
  const instructions = chatInstructions({ agent, team, members: await listTeamAgents(db, team.id) });
  const history = new ContextReader(db, conversation.id);
  const loadMessages = async () => {
    const messages = await loadContextForCall(
      { db, model, agentId: agent.id, budget: config.contextTokenBudget, instructions, abortSignal: signal, timeoutMs: config.modelTimeoutMs },
      history,
    );
    // It holds at least the person's message: none means the agent (or its team) was deleted since, its conversation with it.
    if (messages.length === 0) throw agentDeleted(agent.id);
    return messages;
  };

  let partial = "";
  let finished = false;
  const call: ModelCall = { db, model, purpose: "chat", agentId: agent.id, conversationId: conversation.id, timeoutMs: config.modelTimeoutMs, abortSignal: signal, log: deps.log };
  const result = streamModelText(call, {
    instructions,
    messages: await loadMessages(),
    tools,
    toolCallConcurrency: 1,
    stopWhen: stepCountIs(MAX_CHAT_STEPS),
    prepareStep: async ({ stepNumber }) => {
      if (stepNumber === 0) return undefined;
      recorder.throwIfFailed(); // the last answer could not be stored (the agent was deleted meanwhile): stop here
      return { messages: await loadMessages() };
    },
    onChunk: ({ chunk }) => {
      if (chunk.type === "text-delta") partial += chunk.text;
    },
    onLanguageModelCallEnd: async (event) => {
      partial = "";
      await recorder.recordModelResponse(event.content);
    },
    onStepEnd: async (step) => {
      // A stop gives the step's open calls their marker itself.
      if (signal.aborted) return;
      await recorder.recordMissingResults("(no result: the tool did not run)", stepToolErrors(step.content));
    },
    onEnd: () => {
      finished = true;
    },
    onAbort: async () => {
      if (finished) return;
      finished = true;
      await recorder.recordMissingResults(STOPPED_MARKER);
      await recorder.recordPartialText(partial, STOPPED_MARKER);
    },
    onError: async ({ error }) => {
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
      writer.merge(toUIMessageStream({ stream: result.stream, onError: describeChatError }));
    },
    // The person sees what went wrong and what to do, never a bare "An error occurred".
    onError: describeChatError,
  });
  return createUIMessageStreamResponse({ stream, consumeSseStream: consumeStream });
}

function agentDeleted(agentId: string): CadreError {
  return new CadreError("not_found:agent", `No agent with id ${agentId}: it was deleted.`);
}

/** The agent, and its conversation with it, was deleted mid-reply (its team deleted, say): the reply ends, and it is no model failure. */
function isAgentDeleted(error: unknown): boolean {
  return error instanceof CadreError && (error.code === "not_found:agent" || error.code === "not_found:conversation");
}

function describeChatError(error: unknown): string {
  return isAgentDeleted(error) ? "This agent was deleted while it answered; the rest of the reply was not kept." : describeModelError(error);
}
