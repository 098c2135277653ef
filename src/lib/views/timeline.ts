import "server-only";
// The team timeline: every agent's work log, tasks and inbox items in one stream, newest
// first, paged backwards by an opaque keyset cursor, with delegations linked across agents.
import { isFailedToolResult, parseLogInput, splitMarker, type LogInput } from "@/lib/core/formats";
import { parseToolOutput } from "@/lib/views/chat-messages";
import type { Db } from "@/lib/db/client";
import {
  findSessionsAt,
  listTaskLinks,
  listTimelineAgents,
  listTimelineRows,
  listToolResults,
  type AgentName,
  type TaskLinkRow,
  type TimelineKind,
  type TimelinePosition,
  type TimelineRow,
} from "@/lib/db/queries/timeline";
import { requireTeam } from "@/lib/db/queries/teams";
import type { AgentRole, InboxItemType, TaskSource, TaskStatus } from "@/lib/db/schema";
import { CadreError } from "@/lib/errors";
import { isUuid } from "@/lib/util/ids";

export { timelineKinds, type TimelineKind } from "@/lib/db/queries/timeline";

export const TIMELINE_PAGE_SIZE = 50;

/** A task as the timeline links it: whose it is and the session that took it up. */
export type TaskLink = {
  id: string;
  title: string;
  status: TaskStatus;
  agentId: string;
  agentName: string;
  sessionId: string | null;
};

export type TimelineToolCall = {
  toolCallId: string;
  toolName: string;
  args: unknown;
  /** Null while it has no result (running, or waiting for the person). */
  result: { content: string; at: string; failed: boolean } | null;
  /** A delegation: the task it created. */
  task: TaskLink | null;
};

export type TimelineItem =
  | {
      type: "message";
      id: string;
      role: "user" | "assistant" | "summary";
      content: string;
      thinking: string | null;
      /** Input from someone else, read back (a task, a report, a question…); null for the agent's own words. */
      input: LogInput | null;
      /** How a session ended, when this message carries its marker. */
      marker: string | null;
      toolCalls: TimelineToolCall[];
      /** The task a task, report or cancel notice is about. */
      task: TaskLink | null;
    }
  | {
      type: "task-given" | "task-ended";
      task: TaskLink & { source: TaskSource; description: string; result: string | null };
      /** The lead's task it was delegated from. */
      parent: TaskLink | null;
    }
  | {
      type: "inbox";
      id: string;
      inboxType: InboxItemType;
      title: string;
      summary: string;
      read: boolean;
      task: TaskLink | null;
    };

export type TimelineEntry = {
  /** Unique on the timeline (a message, task or inbox item id; an ended task has one of its own). */
  key: string;
  /** Sorts like the timeline (as text, descending): time to the microsecond, then key. */
  position: string;
  at: string;
  kind: TimelineKind;
  agent: { id: string; name: string; role: AgentRole };
  /** The work session it happened in, when it happened in one. */
  sessionId: string | null;
  /** A task of the story it belongs to (any task finds its story); null for what belongs to none. */
  storyTaskId: string | null;
  item: TimelineItem;
};

export type TimelinePage = {
  entries: TimelineEntry[];
  /** Pass as `before` for the next page back; null at the beginning of the team's history. */
  nextCursor: string | null;
};

export type TimelineFilter = { agentId?: string; kind?: TimelineKind; before?: string; limit?: number };

export function encodeCursor(position: TimelinePosition): string {
  return Buffer.from(`${position.atMicros}.${position.id}`).toString("base64url");
}

/** The position a cursor names; a cursor this server did not make is a 400. `of`: what gave it out (the timeline, a search). */
export function decodeCursor(cursor: string, of = "this timeline"): TimelinePosition {
  const text = /^[A-Za-z0-9_-]{1,100}$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : "";
  const match = /^(\d{1,18})\.([0-9a-f-]{36})$/.exec(text);
  if (!match || !isUuid(match[2]!)) {
    throw new CadreError(
      "bad_request:cursor",
      `The \`before\` cursor is not one ${of} gave out: pass the \`nextCursor\` of a page as it came.`,
    );
  }
  return { atMicros: BigInt(match[1]!), id: match[2]! };
}

/**
 * One page of the team's timeline. Unknown team → 404; an agent of another team shows
 * nothing (as a filter matching nothing would).
 */
export async function getTeamTimeline(db: Db, teamId: string, filter: TimelineFilter = {}): Promise<TimelinePage> {
  await requireTeam(db, teamId);
  const limit = filter.limit ?? TIMELINE_PAGE_SIZE;
  const [rows, agents] = await Promise.all([
    listTimelineRows(db, {
      teamId,
      agentId: filter.agentId,
      kind: filter.kind,
      before: filter.before ? decodeCursor(filter.before) : undefined,
      limit: limit + 1,
    }),
    listTimelineAgents(db, teamId),
  ]);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const nextCursor =
    rows.length > limit && last ? encodeCursor({ atMicros: BigInt(last.atMicros), id: last.key }) : null;
  return { entries: await linkEntries(db, teamId, page, agents), nextCursor };
}

/** The task a delegation created, from its stored result. */
function delegatedTaskId(toolName: string, result: string | undefined): string | null {
  if (toolName !== "delegateToAgent" || !result) return null;
  const output = parseToolOutput(result);
  const taskId = typeof output === "object" && output !== null && "taskId" in output ? output.taskId : null;
  return typeof taskId === "string" && isUuid(taskId) ? taskId : null;
}

function inputTaskId(input: LogInput | null): string | null {
  return input && "taskId" in input && input.taskId && isUuid(input.taskId) ? input.taskId : null;
}

/** Fills in what each entry points at: tool results, the tasks it names, the sessions it happened in. */
export async function linkEntries(
  db: Db,
  teamId: string,
  rows: TimelineRow[],
  agents: AgentName[],
): Promise<TimelineEntry[]> {
  const messages = rows.flatMap((row) => (row.source === "message" ? [row.row] : []));
  const results = await listToolResults(
    db,
    messages.flatMap((message) =>
      (message.tool_calls ?? []).map((call) => ({
        conversationId: message.conversation_id,
        toolCallId: call.toolCallId,
      })),
    ),
  );
  const resultOf = (conversationId: string, toolCallId: string) => results.get(`${conversationId}:${toolCallId}`);

  const taskIds = new Set<string>();
  for (const row of rows) {
    if (row.source === "message") {
      const id = row.row.role === "user" ? inputTaskId(parseLogInput(row.row.content)) : null;
      if (id) taskIds.add(id);
      for (const call of row.row.tool_calls ?? []) {
        const delegated = delegatedTaskId(call.toolName, resultOf(row.row.conversation_id, call.toolCallId)?.content);
        if (delegated) taskIds.add(delegated);
      }
    } else if (row.source === "inbox") {
      if (row.row.task_id) taskIds.add(row.row.task_id);
    } else {
      taskIds.add(row.row.id);
      if (row.row.parent_task_id) taskIds.add(row.row.parent_task_id);
    }
  }
  const tasks = await listTaskLinks(db, teamId, [...taskIds]);

  // A task's session is the one that took it up; an entry's is the one its agent was in then.
  const taskMoment = (task: TaskLinkRow) => (task.startedAt ? { agentId: task.agentId, at: task.startedAt } : null);
  const entryMoment = (row: TimelineRow) => ({
    agentId: row.agentId,
    at: row.source === "task-ended" ? row.row.completed_at! : row.row.created_at,
  });
  const moments = [
    ...[...tasks.values()].flatMap((task) => taskMoment(task) ?? []),
    ...rows.filter((row) => row.source !== "task-given").map(entryMoment),
  ];
  const sessions = await findSessionsAt(db, moments);
  const sessionAt = (moment: { agentId: string; at: string } | null) =>
    moment ? (sessions.get(`${moment.agentId}@${moment.at}`) ?? null) : null;
  const taskLink = (id: string | null): TaskLink | null => {
    const task = id ? tasks.get(id) : undefined;
    if (!task) return null;
    return {
      id: task.id,
      title: task.title,
      status: task.status,
      agentId: task.agentId,
      agentName: task.agentName,
      sessionId: sessionAt(taskMoment(task)),
    };
  };

  const agentsById = new Map(agents.map((agent) => [agent.id, agent]));
  // biome-ignore lint/suspicious/useIterableCallbackReturn: the switch covers every row.source (TypeScript checks it against the return type)
  return rows.map((row): TimelineEntry => {
    const agent = agentsById.get(row.agentId) ?? { id: row.agentId, name: "(removed agent)", role: "subordinate" };
    const storyTaskId =
      row.source === "message" ? row.row.task_id : row.source === "inbox" ? row.row.task_id : row.row.id;
    const base = {
      key: row.key,
      position: `${row.atMicros.padStart(20, "0")}.${row.key}`,
      kind: row.kind,
      agent,
      storyTaskId: storyTaskId ?? null,
    };
    switch (row.source) {
      case "message": {
        const message = row.row;
        const input = message.role === "user" ? parseLogInput(message.content) : null;
        return {
          ...base,
          at: message.created_at,
          sessionId: sessionAt(entryMoment(row)),
          item: {
            type: "message",
            id: message.id,
            role: message.role,
            content: message.content,
            thinking: message.thinking,
            input,
            marker: message.role === "assistant" ? (splitMarker(message.content.trim())?.marker ?? null) : null,
            task: taskLink(inputTaskId(input)),
            toolCalls: (message.tool_calls ?? []).map((call) => {
              const result = resultOf(message.conversation_id, call.toolCallId);
              return {
                toolCallId: call.toolCallId,
                toolName: call.toolName,
                args: call.args,
                result: result
                  ? { content: result.content, at: result.createdAt, failed: isFailedToolResult(result.content) }
                  : null,
                task: taskLink(delegatedTaskId(call.toolName, result?.content)),
              };
            }),
          },
        };
      }
      case "task-given":
      case "task-ended": {
        const task = row.row;
        const link = taskLink(task.id)!;
        return {
          ...base,
          at: row.source === "task-given" ? task.created_at : task.completed_at!,
          // Given: before any session took it up (its link names that one); ended: in the session that ended it.
          sessionId: row.source === "task-given" ? null : sessionAt(entryMoment(row)),
          item: {
            type: row.source,
            task: { ...link, source: task.source, description: task.description, result: task.result },
            parent: taskLink(task.parent_task_id),
          },
        };
      }
      case "inbox": {
        const item = row.row;
        return {
          ...base,
          at: item.created_at,
          sessionId: sessionAt(entryMoment(row)),
          item: {
            type: "inbox",
            id: item.id,
            inboxType: item.type,
            title: item.title,
            summary: item.summary,
            read: item.read_at !== null,
            task: taskLink(item.task_id),
          },
        };
      }
    }
  });
}
