import "server-only";
import type { ToolSet } from "ai";
import { heldCallIds } from "@/lib/db/queries/approvals";
import type { Agent, Team } from "@/lib/db/schema";
import { approvalRequestsOf, requestApprovals } from "./approvals";
import type { EngineDeps } from "@/lib/core/engine-config";
import { type StepRecorder, stepToolErrors } from "./step-recorder";
import { toolsForTurn } from "./tool-policies";
import type { ToolContext } from "./tools";

/**
 * One turn's parts, the same for the chat and for a work session: who runs it, in which
 * conversation, recorded by which recorder, serving which task.
 */
export type TurnOwner = {
  agent: Agent;
  team: Team;
  conversationId: string;
  /** The work session the turn belongs to (what an embedding it makes is counted under); null in the chat. */
  workSessionId: string | null;
  recorder: StepRecorder;
  /** The task the turn serves (what it delegates, asks or reports belongs to it); the chat serves none. */
  focus: () => string | null;
  /** The task the turn's work belongs to when none is in focus (see ToolContext.storyTaskId). */
  story?: () => string | null;
};

/** The result a call gets when its step ended without running it (the model's call was invalid, say). */
const NOT_RUN = "(no result: the tool did not run)";

/**
 * A turn's tools: the role's tools (`offer`), each recording its result, under the agent's
 * tool policies (a denied tool is not offered; an `ask` tool's calls wait for the person).
 * `only`: the tools that may run in this turn; the others are offered all the same (the
 * request stays a prefix of the next), and answer that they cannot run now.
 */
export function turnTools(
  deps: EngineDeps,
  owner: TurnOwner,
  offer: (context: ToolContext) => ToolSet,
  only?: readonly string[],
) {
  const { recorder } = owner;
  const context: ToolContext = {
    db: deps.db,
    jobs: deps.jobs,
    agent: owner.agent,
    team: owner.team,
    conversationId: owner.conversationId,
    workSessionId: owner.workSessionId,
    embedding: deps.embedding,
    search: deps.config.search,
    focusTaskId: owner.focus,
    storyTaskId: owner.story,
    effect: (toolCallId, write) => recorder.runEffect(toolCallId, write),
  };
  return toolsForTurn(deps.db, owner.agent, offer(context), {
    wrap: (tools) => recorder.wrapTools(tools),
    log: deps.log,
    only,
  });
}

/** What a step's end looks at: its parts (calls, approval requests, errors) and its text. */
export type EndedStep = {
  content: readonly { type: string; toolCallId?: string; invalid?: boolean; error?: unknown }[];
  text: string;
};

/**
 * Opens a turn: its tools, the calls of the conversation held for the person (the context
 * shows those still waiting as waiting), and the end of each step. At a step's end, calls the
 * policies hold for approval are stored as approval requests and announced, and every other
 * call still without a result gets one: a stored call is never left open. A stopped turn
 * (`signal`) leaves that to the stop, which gives the step's open calls its own marker.
 */
export async function openTurn(
  deps: EngineDeps,
  owner: TurnOwner,
  offer: (context: ToolContext) => ToolSet,
  options: { only?: readonly string[]; signal?: AbortSignal } = {},
) {
  const [{ tools, toolApproval }, { awaiting: awaitingDecision, held: heldForPerson }] = await Promise.all([
    turnTools(deps, owner, offer, options.only),
    heldCallIds(deps.db, owner.conversationId),
  ]);
  const { recorder } = owner;
  const endStep = async (step: EndedStep): Promise<void> => {
    if (options.signal?.aborted) return;
    const asked = approvalRequestsOf(step.content);
    // Calls held for the person's approval: the SDK stops the turn after this step.
    if (asked.length > 0 && (await recorder.stored())) {
      // Under the ids the log stored them with (see StepRecorder.storedId).
      const requests = recorder.holdForDecision(asked);
      await requestApprovals(
        deps.db,
        deps.jobs,
        { agent: owner.agent, conversationId: owner.conversationId, taskId: owner.focus() },
        requests,
        step.text,
      );
      for (const request of requests) {
        awaitingDecision.add(request.toolCallId);
        heldForPerson.add(request.toolCallId);
      }
    }
    await recorder.recordMissingResults(NOT_RUN, stepToolErrors(step.content));
  };
  return { tools, toolApproval, awaitingDecision, heldForPerson, endStep };
}
