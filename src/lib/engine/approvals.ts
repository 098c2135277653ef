import "server-only";
import { getConversationMode } from "@/lib/db/queries/conversations";
import type { ToolSet } from "ai";
import type { Db } from "@/lib/db/client";
import { isUniqueViolation } from "@/lib/db/errors";
import {
  createApproval,
  getApproval,
  listApprovalsOfCalls,
  listUnresolvedApprovals,
  lockApproval,
  markExecutionStarted,
  markResolved,
  recordDecision,
  listTasksWithPendingApprovals,
} from "@/lib/db/queries/approvals";
import { markInboxItemOfRead } from "@/lib/db/queries/inbox-items";
import {
  appendMessage,
  getMessagesSince,
  type NewMessage,
  hasToolResult,
  getCallMessage,
} from "@/lib/db/queries/messages";
import { getTask } from "@/lib/db/queries/tasks";
import { writeUnderAgent } from "@/lib/db/queries/teams";
import { isActiveTask, isOpenTask } from "@/lib/db/task-statuses";
import type { Agent, Approval, DecisionChannel } from "@/lib/db/schema";
import { CadreError, notFound } from "@/lib/errors";
import type { JobQueue } from "@/lib/jobs/job-queue";
import {
  deniedResult,
  editedInputNote,
  formatDecisions,
  OUTCOME_UNKNOWN_RESULT,
  withdrawnResult,
} from "@/lib/core/formats";
import { reportUnknownOutcome } from "@/lib/domain/alerts";
import { postToInbox } from "@/lib/domain/inbox";
import type { StepRecorder } from "./step-recorder";
import { resumeTask, waitForInput } from "@/lib/domain/task-lifecycle";
import { toolEffects, validateToolInput } from "./tool-policies";

/** A call the SDK held back for approval: a `tool-approval-request` part of a step. */
export type ApprovalRequest = { toolCallId: string; toolName: string; input: unknown };

/** The step's calls that wait for the person (the SDK's manual approval requests, not its automatic ones). */
export function approvalRequestsOf(content: readonly { type: string }[]): ApprovalRequest[] {
  const requests: ApprovalRequest[] = [];
  for (const part of content) {
    if (part.type !== "tool-approval-request") continue;
    const request = part as unknown as {
      isAutomatic?: boolean;
      toolCall: { toolCallId: string; toolName: string; input: unknown };
    };
    if (request.isAutomatic) continue;
    requests.push({
      toolCallId: request.toolCall.toolCallId,
      toolName: request.toolCall.toolName,
      input: request.toolCall.input,
    });
  }
  return requests;
}

/**
 * Stores the calls of one step that wait for the person, in one transaction: an approval
 * row per call (its own id, so each decision reaches its own call), an `approval` item in
 * the inbox and on the team's channels for each, and the task they serve waits in
 * `waiting_input`. The session then ends its turn and holds no worker while it waits.
 */
export async function requestApprovals(
  db: Db,
  jobs: JobQueue,
  owner: { agent: Agent; conversationId: string; taskId: string | null },
  requests: readonly ApprovalRequest[],
  reason: string,
): Promise<Approval[]> {
  if (requests.length === 0) return [];
  return db.transaction(async (tx) => {
    const created: Approval[] = [];
    for (const request of requests) {
      const approval = await createApproval(tx, {
        teamId: owner.agent.teamId,
        agentId: owner.agent.id,
        conversationId: owner.conversationId,
        taskId: owner.taskId,
        toolCallId: request.toolCallId,
        toolName: request.toolName,
        input: request.input ?? {},
        reason: reason.trim().slice(0, 4000),
      });
      if (!approval) continue;
      created.push(approval);
      await postToInbox(tx, jobs, {
        teamId: owner.agent.teamId,
        agentId: owner.agent.id,
        type: "approval",
        taskId: owner.taskId,
        approvalId: approval.id,
        title: `${owner.agent.name} wants to use ${request.toolName}`,
        summary: describeInput(request.input),
        content: reason.trim() || `${owner.agent.name} called ${request.toolName} and waits for your decision.`,
      });
    }
    if (owner.taskId) await waitForInput(tx, owner.taskId);
    return created;
  });
}

export type Decision = { decision: "approve"; input?: unknown } | { decision: "deny"; reason: string };
/** Where the person decided (the app, a link in an email or webhook message, a Slack button), and who when Slack says. */
export type DecidedVia = { channel: DecisionChannel; by?: string | null };

/**
 * The person's decision on a waiting call: recorded on its approval (a second decision is
 * a 409, and so is one on a call that was withdrawn because its task ended), the inbox
 * item marked read, and whoever owns the conversation woken to carry it out: the agent's
 * session for its work log, the chat's resume job for a call made in the chat. Edited
 * input is checked against the tool's schema first (400 naming the field).
 */
export async function decideApproval(
  db: Db,
  jobs: JobQueue,
  approvalId: string,
  decision: Decision,
  via: DecidedVia = { channel: "app" },
): Promise<Approval> {
  const found = await getApproval(db, approvalId);
  if (!found) throw notFound("approval", approvalId);
  return writeUnderAgent(db, found.agentId, async (tx, agent) => {
    const approval = await lockApproval(tx, approvalId);
    if (approval.status === "withdrawn") {
      throw new CadreError(
        "conflict:approval_withdrawn",
        `There is nothing to decide any more: ${approval.decisionNote ?? "the call was withdrawn"}.`,
      );
    }
    if (approval.status !== "pending") {
      throw new CadreError(
        "conflict:approval_decided",
        `This call was ${approval.status} already; a decision cannot be changed.`,
      );
    }
    const mode = (await getConversationMode(tx, approval.conversationId)) ?? "background";
    const decided =
      decision.decision === "approve"
        ? await recordDecision(
            tx,
            approval.id,
            {
              status: "approved",
              approvedInput:
                decision.input === undefined
                  ? approval.input
                  : await validateToolInput(approval.toolName, agent.role, mode, decision.input),
            },
            via,
          )
        : await recordDecision(tx, approval.id, { status: "denied", note: decision.reason }, via);
    await markInboxItemOfRead(tx, { approvalId: approval.id });
    await resumeTask(tx, approval.taskId);
    if (mode === "foreground") await jobs.resumeChat(tx, approval.agentId);
    else await jobs.wakeAgent(tx, approval.agentId);
    return decided!;
  });
}

/** What carrying out decisions needs: the conversation's owner's tools (recorded by its StepRecorder). */
export type DecisionRun = {
  db: Db;
  jobs: JobQueue;
  /** The agent whose calls these are. */
  agent: Agent;
  tools: ToolSet;
  recorder: StepRecorder;
  abortSignal?: AbortSignal;
  focus?: (taskId: string | null) => void;
};

/**
 * Carries out every decision of a conversation that is not carried out yet, oldest first,
 * and returns them. A denied or withdrawn call gets its result ("Denied by the person: …");
 * an approved one runs once with the approved input and its result is stored as it would
 * have been (a Cadre tool's writes commit with it: see runEffect). A call whose result is
 * there already (the worker died after storing it) is only marked done. A tool with
 * effects outside Cadre that was started before and has no result is "outcome unknown",
 * never run again by itself.
 */
export async function carryOutDecisions(run: DecisionRun, conversationId: string): Promise<Approval[]> {
  const decided = (await listUnresolvedApprovals(run.db, conversationId)).filter(
    (approval) => approval.status !== "pending",
  );
  for (const approval of decided) {
    run.focus?.(approval.taskId);
    await carryOut(run, approval);
  }
  return decided;
}

async function carryOut(run: DecisionRun, approval: Approval): Promise<void> {
  const { db } = run;
  if (await hasResult(db, approval)) return markResolved(db, approval.id);
  if (approval.status === "denied") return storeOutcome(db, approval, deniedResult(approval.decisionNote ?? ""));
  if (approval.status === "withdrawn")
    return storeOutcome(db, approval, withdrawnResult(approval.decisionNote ?? "withdrawn before the person decided"));

  // Approved, but the task it was for ended since (a Stop, a cancel): nothing of it runs any more.
  const task = approval.taskId ? await getTask(db, approval.taskId) : null;
  if (task && !isOpenTask(task.status)) {
    return storeOutcome(db, approval, withdrawnResult(`its task "${task.title}" was ${task.status}`));
  }
  const tool = run.tools[approval.toolName];
  if (!tool?.execute) {
    const why =
      toolEffects(approval.toolName) === "outside"
        ? "its MCP server cannot be reached now, or the tool is no longer offered to this agent"
        : "it is no longer offered to this agent";
    return storeOutcome(db, approval, withdrawnResult(`${approval.toolName}: ${why}`));
  }
  if (approval.executionStartedAt && toolEffects(approval.toolName) === "outside") {
    await db.transaction(async (tx) => {
      await storeOutcome(tx, approval, OUTCOME_UNKNOWN_RESULT);
      await reportUnknownOutcome(tx, run.jobs, run.agent, approval.conversationId, {
        toolCallId: approval.toolCallId,
        toolName: approval.toolName,
        args: approval.approvedInput ?? approval.input,
      });
    });
    return;
  }

  await markExecutionStarted(db, approval.id);
  // The model asked for one input and another ran: its result says so, or the agent would report what it asked for.
  const edited =
    approval.approvedInput !== null && JSON.stringify(approval.approvedInput) !== JSON.stringify(approval.input);
  run.recorder.expectResult(
    approval.toolCallId,
    approval.toolName,
    edited ? editedInputNote(approval.approvedInput) : undefined,
  );
  const schema = tool.inputSchema as {
    validate?: (
      value: unknown,
    ) =>
      | PromiseLike<{ success: boolean; value?: unknown; error?: Error }>
      | { success: boolean; value?: unknown; error?: Error };
  };
  const checked = (await schema.validate?.(approval.approvedInput ?? approval.input)) ?? {
    success: true,
    value: approval.approvedInput,
  };
  if (!checked.success) {
    await storeOutcome(
      db,
      approval,
      `Not run: the approved input does not fit ${approval.toolName}: ${checked.error?.message ?? "invalid input"}`,
    );
    return;
  }
  try {
    // The recorder's wrapper stores the result (or the error) the moment the tool finishes.
    await tool.execute(checked.value, {
      toolCallId: approval.toolCallId,
      messages: [],
      abortSignal: run.abortSignal,
      context: undefined,
    } as never);
  } catch (error) {
    if (run.abortSignal?.aborted) throw error;
  }
  await markResolved(db, approval.id);
}

async function storeOutcome(db: Db, approval: Approval, content: string): Promise<void> {
  await db.transaction(async (tx) => {
    try {
      // A savepoint: a result stored meanwhile (the unique key) must not abort the marking below.
      await tx.transaction((inner) =>
        appendMessage(inner, approval.conversationId, {
          role: "tool",
          toolCallId: approval.toolCallId,
          content,
          taskId: approval.taskId,
        }),
      );
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
    }
    await markResolved(tx, approval.id);
  });
}

async function hasResult(db: Db, approval: Approval): Promise<boolean> {
  return hasToolResult(db, approval.conversationId, approval.toolCallId);
}

/** The task ids whose waiting calls were all carried out now, so a turn can go on with them. */
export async function tasksReadyToGoOn(db: Db, carried: readonly Approval[]): Promise<(string | null)[]> {
  const ready: (string | null)[] = [];
  const waiting = await listTasksWithPendingApprovals(db, carried[0]?.conversationId ?? null);
  for (const taskId of new Set(
    carried.filter((approval) => approval.status !== "withdrawn").map((approval) => approval.taskId),
  )) {
    if (waiting.has(taskId)) continue;
    if (taskId) {
      const task = await getTask(db, taskId);
      if (!isActiveTask(task?.status)) continue;
    }
    ready.push(taskId);
  }
  return ready;
}

/**
 * When the log moved on while calls waited (other tasks, a wrap-up), the model saw them as
 * waiting, and so they stay (toModelMessages): a short note at the tail says what the person
 * decided on the step's held calls, with each result. When nothing but the step's own results
 * follows the call, the results speak for themselves in place: null.
 */
export async function decisionsNote(
  db: Db,
  conversationId: string,
  carried: readonly Approval[],
): Promise<NewMessage | null> {
  if (carried.length === 0) return null;
  const call = await getCallMessage(db, conversationId, carried[0]!.toolCallId);
  if (!call) return null;
  const after = await getMessagesSince(db, conversationId, call.id);
  const movedOn = after.findIndex((message) => message.role !== "tool");
  if (movedOn < 0) return null;
  const late = new Map(
    after
      .slice(movedOn)
      .flatMap((message) =>
        message.role === "tool" && message.toolCallId ? [[message.toolCallId, message.content] as const] : [],
      ),
  );
  // Every held call of the step, decided now or before (a step may hold several, decided one by one).
  const stepCalls = (call.toolCalls ?? []).map((stepCall) => stepCall.toolCallId);
  const held = await listApprovalsOfCalls(db, conversationId, stepCalls);
  const decided = held.filter((approval) => approval.status !== "pending" && late.has(approval.toolCallId));
  if (decided.length === 0) return null;
  return {
    role: "user",
    content: formatDecisions(decided.map((approval) => ({ ...approval, result: late.get(approval.toolCallId) }))),
    taskId: carried[0]!.taskId,
  };
}

/** decisionsNote, appended when there is one (the chat, where no other note goes with it). */
export async function noteDecisionsUnlessAtTail(
  db: Db,
  conversationId: string,
  carried: readonly Approval[],
): Promise<void> {
  const note = await decisionsNote(db, conversationId, carried);
  if (note) await appendMessage(db, conversationId, note);
}

function describeInput(input: unknown): string {
  const text = JSON.stringify(input ?? {});
  return text.length > 1000 ? `${text.slice(0, 999)}…` : text;
}
