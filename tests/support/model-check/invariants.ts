// The invariants of the engine model-check, checked on a scenario's team once it is quiet.
// Each is a function from the stored state to violation messages (none = it holds).
import { eq, inArray, or } from "drizzle-orm";
import { parseLogInput, type SubordinateOutcome } from "@/lib/core/formats";
import type { Db } from "@/lib/db/client";
import {
  agentInputs,
  agents,
  conversations,
  inboxItems,
  messages,
  questions,
  tasks,
  teams,
  type Message,
  type Task,
} from "@/lib/db/schema";
import { compareContext, storedIdentity } from "./identity";

/** A task of a removed subordinate, as it was just before the removal. */
export type RemovedTask = { id: string; parentTaskId: string | null; status: string; source: string };

export type ScenarioState = {
  teamStatus: string;
  leadId: string;
  agents: (typeof agents.$inferSelect)[];
  tasks: Task[];
  /** Removed subordinates' tasks (gone from the table). */
  removedTasks: RemovedTask[];
  questions: (typeof questions.$inferSelect)[];
  inbox: (typeof inboxItems.$inferSelect)[];
  inputs: (typeof agentInputs.$inferSelect)[];
  conversations: (typeof conversations.$inferSelect)[];
  /** Messages per conversation, in chain order when the chain is whole (else as stored). */
  messages: Map<string, Message[]>;
};

/** The team's rows, read in one snapshot (a stalled team may still be writing). */
export async function loadScenarioState(
  db: Db,
  teamId: string,
  leadId: string,
  removedTasks: RemovedTask[],
): Promise<ScenarioState> {
  return db.transaction((tx) => readScenarioState(tx, teamId, leadId, removedTasks), {
    isolationLevel: "repeatable read",
    accessMode: "read only",
  });
}

async function readScenarioState(
  db: Db,
  teamId: string,
  leadId: string,
  removedTasks: RemovedTask[],
): Promise<ScenarioState> {
  const [team] = await db.select().from(teams).where(eq(teams.id, teamId));
  const agentRows = await db.select().from(agents).where(eq(agents.teamId, teamId));
  const agentIds = agentRows.map((agent) => agent.id);
  const none = ["00000000-0000-0000-0000-000000000000"];
  const ids = agentIds.length > 0 ? agentIds : none;
  const [taskRows, questionRows, inboxRows, inputRows, conversationRows] = await Promise.all([
    db.select().from(tasks).where(inArray(tasks.agentId, ids)),
    db
      .select()
      .from(questions)
      .where(or(inArray(questions.agentId, ids), inArray(questions.recipientAgentId, ids))),
    db.select().from(inboxItems).where(eq(inboxItems.teamId, teamId)),
    db.select().from(agentInputs).where(inArray(agentInputs.agentId, ids)),
    db.select().from(conversations).where(inArray(conversations.agentId, ids)),
  ]);
  const conversationIds = conversationRows.map((conversation) => conversation.id);
  const messageRows =
    conversationIds.length > 0
      ? await db.select().from(messages).where(inArray(messages.conversationId, conversationIds))
      : [];
  const byConversation = new Map<string, Message[]>(conversationIds.map((id) => [id, []]));
  for (const message of messageRows) byConversation.get(message.conversationId)!.push(message);
  return {
    teamStatus: team?.status ?? "deleted",
    leadId,
    agents: agentRows,
    tasks: taskRows,
    removedTasks,
    questions: questionRows,
    inbox: inboxRows,
    inputs: inputRows,
    conversations: conversationRows,
    messages: byConversation,
  };
}

const FINAL = new Set(["completed", "failed", "cancelled"]);
const snippet = (text: string, length = 70) =>
  JSON.stringify(text.length > length ? `${text.slice(0, length)}…` : text);

function agentName(state: ScenarioState, agentId: string): string {
  return state.agents.find((agent) => agent.id === agentId)?.name ?? agentId.slice(0, 8);
}
function taskLabel(state: ScenarioState, task: Pick<Task, "id" | "title" | "agentId">): string {
  return `task "${task.title}" (${task.id.slice(0, 8)}) of ${agentName(state, task.agentId)}`;
}
function background(state: ScenarioState, agentId: string): Message[] {
  const conversation = state.conversations.find((c) => c.agentId === agentId && c.mode === "background");
  return conversation ? (state.messages.get(conversation.id) ?? []) : [];
}

/**
 * 1. Every task is final or waits on a question the person or its lead can see: a task
 * waiting for input has an open question, and that question is in its recipient's log (or,
 * asked of the person, in the inbox). Pending tasks, and in-progress ones with nothing
 * open under them, are work nobody does: invariant 3.
 */
function tasksFinalOrWaitingVisibly(state: ScenarioState): string[] {
  const out: string[] = [];
  for (const task of state.tasks) {
    if (task.status !== "waiting_input") continue;
    const open = state.questions.filter((q) => q.taskId === task.id && q.status === "open");
    if (open.length === 0) {
      out.push(`${taskLabel(state, task)} is waiting_input with no open question`);
      continue;
    }
    for (const question of open) {
      const visible = question.recipientAgentId
        ? background(state, question.recipientAgentId).some((m) => {
            const input = m.role === "user" ? parseLogInput(m.content) : null;
            return input?.kind === "question" && input.questionId === question.id;
          })
        : state.inbox.some((item) => item.type === "question" && item.taskId === task.id);
      if (!visible)
        out.push(
          `${taskLabel(state, task)} waits on question ${question.id.slice(0, 8)}, which is not in ${question.recipientAgentId ? `${agentName(state, question.recipientAgentId)}'s log` : "the inbox"}`,
        );
    }
  }
  return out;
}

/** 2. Every ended task a lead delegated reached the lead exactly once, as the outcome it had. */
function outcomesReachedLeadOnce(state: ScenarioState): string[] {
  const out: string[] = [];
  const outcomes = new Map<string, SubordinateOutcome[]>();
  for (const message of background(state, state.leadId)) {
    if (message.role !== "user") continue;
    const input = parseLogInput(message.content);
    if (
      input &&
      (input.kind === "report" || input.kind === "failed" || input.kind === "cancelled" || input.kind === "removed") &&
      input.taskId
    ) {
      outcomes.set(input.taskId, [...(outcomes.get(input.taskId) ?? []), input]);
    }
  }
  const byId = new Map(state.tasks.map((task) => [task.id, task]));
  const expected = new Map<string, { status: string; parentTaskId: string | null; removed: boolean; label: string }>();
  for (const task of state.tasks) {
    if (task.source === "lead")
      expected.set(task.id, {
        status: task.status,
        parentTaskId: task.parentTaskId,
        removed: false,
        label: taskLabel(state, task),
      });
  }
  for (const task of state.removedTasks) {
    if (task.source === "lead" && !byId.has(task.id)) {
      expected.set(task.id, {
        status: task.status,
        parentTaskId: task.parentTaskId,
        removed: true,
        label: `task ${task.id.slice(0, 8)} of a removed subordinate`,
      });
    }
  }
  for (const [taskId, task] of expected) {
    const heard = outcomes.get(taskId) ?? [];
    if (!task.removed && !FINAL.has(task.status)) {
      if (heard.length > 0) out.push(`${task.label} is ${task.status} but the lead heard "${heard[0]!.kind}"`);
      continue;
    }
    const parent = task.parentTaskId ? byId.get(task.parentTaskId) : undefined;
    const parentGone = parent !== undefined && (parent.status === "cancelled" || parent.status === "failed");
    const endedWithParent = parentGone && (task.removed || task.status === "cancelled");
    if (heard.length > 1)
      out.push(`${task.label} reached the lead ${heard.length} times (${heard.map((h) => h.kind).join(", ")})`);
    else if (heard.length === 0 && !endedWithParent)
      out.push(`${task.label} ended ${task.removed ? "by removal" : task.status} but the lead never heard`);
    else if (heard.length === 1 && !task.removed) {
      const kind = heard[0]!.kind;
      const fits = { completed: ["report"], failed: ["failed"], cancelled: ["cancelled", "removed"] }[
        task.status as "completed" | "failed" | "cancelled"
      ];
      if (!fits.includes(kind)) out.push(`${task.label} ended ${task.status} but the lead heard "${kind}"`);
    }
  }
  return out;
}

/** 3. With the team quiet, no agent has work: no pending task, no queued input, no wake-up flag, no log awaiting a reply. */
function noAgentWithIdleWork(state: ScenarioState): string[] {
  if (state.teamStatus !== "active") return [];
  const out: string[] = [];
  const openQuestionTasks = new Set(state.questions.filter((q) => q.status === "open").map((q) => q.taskId));
  for (const agent of state.agents) {
    const own = state.tasks.filter((task) => task.agentId === agent.id);
    for (const task of own) {
      if (task.status === "pending") out.push(`${taskLabel(state, task)} is pending and nothing runs it`);
      if (task.status === "in_progress") {
        const openChildren = state.tasks.filter((child) => child.parentTaskId === task.id && !FINAL.has(child.status));
        if (openChildren.length === 0 && !openQuestionTasks.has(task.id))
          out.push(`${taskLabel(state, task)} is in_progress with nothing open under it and no session`);
      }
    }
    for (const input of state.inputs.filter((i) => i.agentId === agent.id)) {
      out.push(`${agent.name} has queued input no session took: ${snippet(input.content)}`);
    }
    if (agent.wakeRequestedAt) out.push(`${agent.name} has its wake-up flag set and no session`);
    const tail = background(state, agent.id).at(-1);
    if (
      tail &&
      (tail.role === "user" ||
        tail.role === "tool" ||
        tail.role === "summary" ||
        (tail.role === "assistant" && (tail.toolCalls?.length ?? 0) > 0))
    ) {
      out.push(
        `${agent.name}'s log ends with ${tail.role} ${snippet(tail.content || JSON.stringify(tail.toolCalls))} and nothing answers it`,
      );
    }
  }
  return out;
}

/** 4. Every failed task has exactly one alert. */
function everyFailureHasOneAlert(state: ScenarioState): string[] {
  const out: string[] = [];
  for (const task of state.tasks) {
    if (task.status !== "failed") continue;
    const alerts = state.inbox.filter((item) => item.type === "alert" && item.taskId === task.id).length;
    if (alerts !== 1)
      out.push(`${taskLabel(state, task)} failed (${snippet(task.result ?? "", 50)}) with ${alerts} alerts`);
  }
  return out;
}

/** 5. Each conversation is one chain from its root to its tail, covering all its messages. Puts the messages in chain order. */
function chainsWhole(state: ScenarioState): string[] {
  const out: string[] = [];
  for (const conversation of state.conversations) {
    const rows = state.messages.get(conversation.id) ?? [];
    const label = `${agentName(state, conversation.agentId)}'s ${conversation.mode} conversation`;
    if (rows.length === 0) {
      if (conversation.lastMessageId) out.push(`${label} points at a tail but has no messages`);
      continue;
    }
    const roots = rows.filter((m) => m.previousMessageId === null);
    const next = new Map<string, Message[]>();
    for (const row of rows)
      if (row.previousMessageId) next.set(row.previousMessageId, [...(next.get(row.previousMessageId) ?? []), row]);
    if (roots.length !== 1) out.push(`${label} has ${roots.length} roots`);
    for (const [id, successors] of next)
      if (successors.length > 1) out.push(`${label} forks after message ${id.slice(0, 8)}`);
    const chain: Message[] = [];
    const seen = new Set<string>();
    for (let current = roots[0]; current && !seen.has(current.id); current = next.get(current.id)?.[0]) {
      seen.add(current.id);
      chain.push(current);
    }
    if (chain.length !== rows.length) out.push(`${label}: the chain covers ${chain.length} of ${rows.length} messages`);
    if (chain.at(-1)?.id !== conversation.lastMessageId)
      out.push(
        `${label}: the chain ends at ${chain.at(-1)?.id.slice(0, 8)}, the tail is ${conversation.lastMessageId?.slice(0, 8)}`,
      );
    if (chain.length === rows.length) state.messages.set(conversation.id, chain);
  }
  return out;
}

/** 6. Every tool call has exactly one result, after it, in the same conversation (and every result has its call). */
function oneResultPerToolCall(state: ScenarioState): string[] {
  const out: string[] = [];
  for (const conversation of state.conversations) {
    const rows = state.messages.get(conversation.id) ?? [];
    const callAt = new Map<string, number>();
    const results = new Map<string, number[]>();
    rows.forEach((row, index) => {
      for (const call of row.toolCalls ?? []) callAt.set(call.toolCallId, index);
      if (row.role === "tool" && row.toolCallId)
        results.set(row.toolCallId, [...(results.get(row.toolCallId) ?? []), index]);
    });
    const who = agentName(state, conversation.agentId);
    for (const [id, at] of callAt) {
      const found = results.get(id) ?? [];
      if (found.length !== 1) out.push(`${who}: tool call ${id} has ${found.length} results`);
      else if (found[0]! < at) out.push(`${who}: the result of tool call ${id} comes before the call`);
    }
    for (const id of results.keys())
      if (!callAt.has(id)) out.push(`${who}: a result for tool call ${id}, which no message made`);
  }
  return out;
}

const TOKEN = /\[(mc-[^-\]]+-\d+-[a-z0-9]+)\]/;

/**
 * 7. Every stored answer follows exactly the context its call was given: the messages
 * stored before it (since the last summary) are the ones the call saw, no more, no less.
 */
function answersFollowTheirContext(state: ScenarioState, answers: ReadonlyMap<string, number[]>): string[] {
  const out: string[] = [];
  const stored = new Map<string, number>();
  for (const conversation of state.conversations) {
    if (conversation.mode !== "background") continue;
    const who = agentName(state, conversation.agentId);
    let context: Message[] = [];
    for (const row of state.messages.get(conversation.id) ?? []) {
      if (row.role === "summary") context = [];
      if (row.role === "assistant") {
        const keys = [...(row.toolCalls ?? []).map((call) => call.toolCallId), TOKEN.exec(row.content)?.[1]].filter(
          (key): key is string => !!key,
        );
        for (const key of keys) {
          stored.set(key, (stored.get(key) ?? 0) + 1);
          const seen = answers.get(key);
          if (!seen) continue;
          const { unseen, missing } = compareContext(context.map(storedIdentity), seen);
          for (const index of unseen) {
            const message = context[index]!;
            out.push(
              `${who}: answer ${key} is stored after ${message.role} ${snippet(message.content || (message.toolCallId ?? ""))}, which its call never saw`,
            );
          }
          if (missing > 0) out.push(`${who}: answer ${key}'s call saw ${missing} message(s) not stored before it`);
          break;
        }
      }
      context.push(row);
    }
  }
  for (const [key, count] of stored)
    if (count > 1 && answers.has(key)) out.push(`answer ${key} is stored ${count} times`);
  return out;
}

const invariants = {
  "1 final or waiting visibly": tasksFinalOrWaitingVisibly,
  "2 outcome reached lead once": outcomesReachedLeadOnce,
  "3 no idle work": noAgentWithIdleWork,
  "4 failure has one alert": everyFailureHasOneAlert,
  "5 chains whole": chainsWhole,
  "6 one result per call": oneResultPerToolCall,
} as const;

export type InvariantName =
  | keyof typeof invariants
  | "7 answer follows its context"
  | "0 stalled"
  | "0 worker crashed"
  | "0 model called after quiet";

/** All invariants; the chain check runs first (it puts messages in chain order for the others). */
export function checkInvariants(
  state: ScenarioState,
  answers: ReadonlyMap<string, number[]>,
): { invariant: InvariantName; message: string }[] {
  const out: { invariant: InvariantName; message: string }[] = [];
  const push = (invariant: InvariantName, messages: string[]) =>
    out.push(...messages.map((message) => ({ invariant, message })));
  push("5 chains whole", chainsWhole(state));
  for (const [name, check] of Object.entries(invariants) as [
    keyof typeof invariants,
    (s: ScenarioState) => string[],
  ][]) {
    if (name !== "5 chains whole") push(name, check(state));
  }
  push("7 answer follows its context", answersFollowTheirContext(state, answers));
  return out;
}
