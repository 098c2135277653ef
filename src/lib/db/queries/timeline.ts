import "server-only";
// The reads behind the team timeline and the session trace: several sources paged together
// by (time, id), newest first, each through its own keyset index.
import { sql, type SQL } from "drizzle-orm";
import { logInputLikePatterns, type LogInput } from "@/lib/core/formats";
import type { Db } from "../client";
import type { AgentRole, InboxItemType, StoredToolCall, TaskSource, TaskStatus } from "../schema";
import { atMicros, olderThan } from "./keyset";

/** What the timeline can be filtered by: the product's words for what happened. */
export const timelineKinds = ["work", "task", "report", "question", "approval", "briefing", "alert"] as const;
export type TimelineKind = (typeof timelineKinds)[number];

/** Where a kind of log input belongs on the timeline. */
function timelineKindOfInput(kind: LogInput["kind"]): TimelineKind {
  switch (kind) {
    case "task":
    case "task-cancelled":
      return "task";
    case "report":
    case "failed":
    case "cancelled":
    case "removed":
    case "outcome-unknown":
      return "report";
    case "question":
    case "answer":
    case "person-answer":
      return "question";
    case "webhook":
      return "work";
  }
}

/** A position on the timeline: microseconds since the epoch (Postgres keeps them; a JS Date would drop them) and an id for ties. */
export type TimelinePosition = { atMicros: bigint; id: string };

export type TimelineQuery = {
  teamId: string;
  agentId?: string;
  kind?: TimelineKind;
  before?: TimelinePosition;
  limit: number;
};

type RowBase = { key: string; atMicros: string; kind: TimelineKind; agentId: string };
type MessageRowData = {
  id: string;
  conversation_id: string;
  role: "user" | "assistant" | "summary";
  content: string;
  thinking: string | null;
  tool_calls: StoredToolCall[] | null;
  /** The task it was logged for (messages.task_id). */
  task_id: string | null;
  created_at: string;
};
type TaskRowData = {
  id: string;
  agent_id: string;
  source: TaskSource;
  title: string;
  description: string;
  status: TaskStatus;
  result: string | null;
  parent_task_id: string | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
};
type InboxRowData = {
  id: string;
  agent_id: string;
  type: InboxItemType;
  title: string;
  summary: string;
  content: string;
  task_id: string | null;
  question_id: string | null;
  approval_id: string | null;
  read_at: string | null;
  created_at: string;
};
export type TimelineRow =
  | (RowBase & { source: "message"; row: MessageRowData })
  | (RowBase & { source: "task-given" | "task-ended"; row: TaskRowData })
  | (RowBase & { source: "inbox"; row: InboxRowData });

const micros = (column: string) => atMicros(sql.raw(column));
const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** The kind of a work-log message `m`, in SQL: input by its wording (formats.ts), everything else is the agent's work. */
export const messageKind = sql.raw(
  `case when m.role <> 'user' then 'work' ${logInputLikePatterns
    .map(({ kind, pattern }) => `when m.content like ${quote(pattern)} then ${quote(timelineKindOfInput(kind))}`)
    .join(" ")} else 'work' end`,
);

function before(time: SQL, id: SQL, position: TimelinePosition | undefined): SQL {
  if (!position) return sql`true`;
  return olderThan(time, id, position);
}

const messageKinds: readonly (TimelineKind | undefined)[] = [undefined, "work", "task", "report", "question"];
const inboxKinds: readonly (TimelineKind | undefined)[] = [undefined, "question", "approval", "briefing", "alert"];

/**
 * One page of a team's timeline, newest first: messages of every agent's work log (tool
 * results ride with their calls, so they are left out), tasks given and ended, inbox items.
 * Each source is read `limit` deep from its own index — a LATERAL per work log and per agent,
 * so a team of many agents reads each index once — and the merge is cut at `limit`.
 */
export async function listTimelineRows(db: Db, query: TimelineQuery): Promise<TimelineRow[]> {
  const statement = timelineRowsStatement(query);
  return statement ? [...(await db.execute<TimelineRow>(statement))] : [];
}

/** The statement behind listTimelineRows (null when the filter leaves no source), for EXPLAIN. */
export function timelineRowsStatement(query: TimelineQuery): SQL | null {
  const { teamId, agentId, kind, limit } = query;
  const sources: SQL[] = [];
  if (messageKinds.includes(kind)) {
    sources.push(sql`
      select 'message' as source, m.id as key, ${micros("m.created_at")} as "atMicros", m.kind, l.agent_id as "agentId",
             jsonb_build_object('id', m.id, 'conversation_id', m.conversation_id, 'role', m.role, 'content', m.content,
                                'thinking', m.thinking, 'tool_calls', m.tool_calls, 'task_id', m.task_id, 'created_at', m.created_at) as row
        from logs l cross join lateral (
          select m.*, ${messageKind} as kind from messages m
           where m.conversation_id = l.id and ${kind && kind !== "work" ? sql`m.role = 'user'` : sql`m.role <> 'tool'`}
             and ${before(sql`m.created_at`, sql`m.id`, query.before)}
             ${kind ? sql`and ${messageKind} = ${kind}` : sql``}
           order by m.created_at desc, m.id desc
           limit ${limit}) m`);
  }
  if (kind === undefined || kind === "task") {
    sources.push(sql`
      select 'task-given' as source, t.id as key, ${micros("t.created_at")} as "atMicros", 'task' as kind, t.agent_id as "agentId", to_jsonb(t) as row
        from team_agents a cross join lateral (
          select * from tasks t where t.agent_id = a.id and ${before(sql`t.created_at`, sql`t.id`, query.before)}
           order by t.created_at desc, t.id desc limit ${limit}) t`);
    // An ended task's entry needs an id of its own: its task's id already marks when it was given.
    const endedKey = sql`md5(t.id::text || ':ended')::uuid`;
    sources.push(sql`
      select 'task-ended' as source, t.key, ${micros("t.completed_at")} as "atMicros", 'task' as kind, t.agent_id as "agentId", to_jsonb(t) - 'key' as row
        from team_agents a cross join lateral (
          select t.*, ${endedKey} as key from tasks t
           where t.agent_id = a.id and t.completed_at is not null and ${before(sql`t.completed_at`, endedKey, query.before)}
           order by t.completed_at desc, ${endedKey} desc limit ${limit}) t`);
  }
  if (inboxKinds.includes(kind)) {
    sources.push(sql`
      select 'inbox' as source, i.id as key, ${micros("i.created_at")} as "atMicros", i.type as kind, i.agent_id as "agentId",
             jsonb_build_object('id', i.id, 'agent_id', i.agent_id, 'type', i.type, 'title', i.title, 'summary', i.summary, 'content', i.content,
                                'task_id', i.task_id, 'question_id', i.question_id, 'approval_id', i.approval_id, 'read_at', i.read_at, 'created_at', i.created_at) as row
        from (select * from inbox_items i
               where i.team_id = ${teamId} ${agentId ? sql`and i.agent_id = ${agentId}` : sql``} ${kind ? sql`and i.type = ${kind}` : sql``}
                 and ${before(sql`i.created_at`, sql`i.id`, query.before)}
               order by i.created_at desc, i.id desc limit ${limit}) i`);
  }
  if (sources.length === 0) return null;
  return sql`
    with team_agents as (
      select a.id from agents a where a.team_id = ${teamId} ${agentId ? sql`and a.id = ${agentId}` : sql``}
    ), logs as (
      select c.id, c.agent_id from conversations c join team_agents a on a.id = c.agent_id where c.mode = 'background'
    )
    select * from (${sql.join(
      sources.map((source) => sql`(${source})`),
      sql` union all `,
    )}) entries
    order by "atMicros"::bigint desc, key desc
    limit ${limit}`;
}

export type AgentName = { id: string; name: string; role: AgentRole };

/** The team's agents, lead first: names for the entries and the filter. */
export async function listTimelineAgents(db: Db, teamId: string): Promise<AgentName[]> {
  const rows = await db.execute<AgentName>(sql`
    select id, name, role from agents where team_id = ${teamId} order by role = 'lead' desc, created_at, id`);
  return [...rows];
}

/** The stored result of each of these calls (a tool row per call), by call id. */
export async function listToolResults(
  db: Db,
  calls: readonly { conversationId: string; toolCallId: string }[],
): Promise<Map<string, { content: string; createdAt: string }>> {
  if (calls.length === 0) return new Map();
  const rows = await db.execute<{
    conversation_id: string;
    tool_call_id: string;
    content: string;
    created_at: string;
  }>(sql`
    select m.conversation_id, m.tool_call_id, m.content, to_jsonb(m.created_at) #>> '{}' as created_at
      from jsonb_to_recordset(${JSON.stringify(calls)}::jsonb) as q("conversationId" uuid, "toolCallId" text)
      join messages m on m.conversation_id = q."conversationId" and m.tool_call_id = q."toolCallId"`);
  return new Map(
    rows.map((row) => [
      `${row.conversation_id}:${row.tool_call_id}`,
      { content: row.content, createdAt: row.created_at },
    ]),
  );
}

export type TaskLinkRow = {
  id: string;
  title: string;
  status: TaskStatus;
  agentId: string;
  agentName: string;
  parentTaskId: string | null;
  startedAt: string | null;
  createdAt: string;
};

/** Tasks by id with the name of the agent each was given to (tasks of other teams are not returned). */
export async function listTaskLinks(
  db: Db,
  teamId: string,
  taskIds: readonly string[],
): Promise<Map<string, TaskLinkRow>> {
  if (taskIds.length === 0) return new Map();
  const rows = await db.execute<TaskLinkRow>(sql`
    select t.id, t.title, t.status, t.agent_id as "agentId", a.name as "agentName", t.parent_task_id as "parentTaskId",
           to_jsonb(t.started_at) #>> '{}' as "startedAt", to_jsonb(t.created_at) #>> '{}' as "createdAt"
      from tasks t join agents a on a.id = t.agent_id
     where t.id = any(${`{${[...new Set(taskIds)].join(",")}}`}::uuid[]) and a.team_id = ${teamId}`);
  return new Map(rows.map((row) => [row.id, row]));
}

/**
 * The work session each agent was in at each time: its latest session started by then, unless
 * that one had ended (a second of grace: a session's closing marker is written in the
 * transaction that ends it, a moment after `ended_at`'s now()). Keyed `agentId@time`.
 */
export async function findSessionsAt(
  db: Db,
  moments: readonly { agentId: string; at: string }[],
): Promise<Map<string, string>> {
  if (moments.length === 0) return new Map();
  const rows = await db.execute<{ agent_id: string; at: string; session_id: string }>(sql`
    select q."agentId" as agent_id, q.at, s.id as session_id
      from jsonb_to_recordset(${JSON.stringify(moments)}::jsonb) as q("agentId" uuid, at text)
      cross join lateral (
        select s.id, s.ended_at from work_sessions s
         where s.agent_id = q."agentId" and s.started_at <= q.at::timestamptz
         order by s.started_at desc limit 1) s
     where s.ended_at is null or s.ended_at >= q.at::timestamptz - interval '1 second'`);
  return new Map(rows.map((row) => [`${row.agent_id}@${row.at}`, row.session_id]));
}
