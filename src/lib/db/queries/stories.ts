import "server-only";
// The reads behind the timeline's stories: a story is a task nobody delegated (a person's task,
// a scheduled run, a webhook) with every task delegated under it (tasks.root_task_id), the work
// logged for those tasks (messages.task_id), what it cost (usage.task_id) and what it sent the
// person (inbox_items.task_id).
import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../client";
import type { AgentRole, DecisionChannel, InboxItemType, TaskSource, TaskStatus } from "../schema";
import { atMicros, olderThan, type KeysetPosition } from "./keyset";
import { messageKind, type TimelineKind, type TimelineRow } from "./timeline";
import { KEPT_PRICE_COLUMNS, keptPrice, type ModelTokens } from "./usage";

export type StoryTaskRow = {
  id: string;
  rootTaskId: string;
  parentTaskId: string | null;
  agentId: string;
  agentName: string;
  agentRole: AgentRole;
  source: TaskSource;
  title: string;
  description: string;
  status: TaskStatus;
  result: string | null;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  /** created_at in microseconds, for the cursor. */
  atMicros: string;
};

export type StoryRootQuery = {
  teamId: string;
  agentId?: string;
  kind?: TimelineKind;
  before?: KeysetPosition;
  limit: number;
};

const taskColumns = sql`t.id, t.root_task_id as "rootTaskId", t.parent_task_id as "parentTaskId", t.agent_id as "agentId", a.name as "agentName",
  a.role as "agentRole", t.source, t.title, t.description, t.status, t.result,
  to_jsonb(t.created_at) #>> '{}' as "createdAt", to_jsonb(t.started_at) #>> '{}' as "startedAt",
  to_jsonb(t.completed_at) #>> '{}' as "completedAt", ${atMicros(sql`t.created_at`)} as "atMicros"`;

/** What a story must hold to pass the kind filter (every story is work and has tasks). */
function kindCondition(kind: TimelineKind | undefined): SQL {
  switch (kind) {
    case undefined:
    case "work":
    case "task":
      return sql`true`;
    case "report":
      return sql`exists (select 1 from tasks s where s.root_task_id = t.id and s.parent_task_id is not null)`;
    case "question":
    case "approval":
    case "briefing":
    case "alert":
      return sql`exists (select 1 from tasks s join inbox_items i on i.task_id = s.id where s.root_task_id = t.id and i.type = ${kind})`;
  }
}

/**
 * A page of a team's stories, newest first by when their request came: the tasks nobody
 * delegated, read per agent through their own index and merged. `agentId`: stories the agent
 * worked in; `kind`: stories holding such an entry.
 */
export async function listStoryRoots(db: Db, query: StoryRootQuery): Promise<StoryTaskRow[]> {
  const { teamId, agentId, kind, limit } = query;
  const rows = await db.execute<StoryTaskRow>(sql`
    select ${taskColumns}
      from agents a cross join lateral (
        select t.* from tasks t
         where t.agent_id = a.id and t.parent_task_id is null
           and ${query.before ? olderThan(sql`t.created_at`, sql`t.id`, query.before) : sql`true`}
           and ${agentId ? sql`exists (select 1 from tasks s where s.root_task_id = t.id and s.agent_id = ${agentId})` : sql`true`}
           and ${kindCondition(kind)}
         order by t.created_at desc, t.id desc
         limit ${limit}) t
     where a.team_id = ${teamId}
     order by t.created_at desc, t.id desc
     limit ${limit}`);
  return [...rows];
}

/** Every task of these stories (the roots too), oldest first, with their agents' names. */
export async function listStoryTasks(db: Db, teamId: string, rootIds: readonly string[]): Promise<StoryTaskRow[]> {
  if (rootIds.length === 0) return [];
  const rows = await db.execute<StoryTaskRow>(sql`
    select ${taskColumns}
      from tasks t join agents a on a.id = t.agent_id
     where t.root_task_id = any(${uuidArray(rootIds)}) and a.team_id = ${teamId}
     order by t.created_at, t.id`);
  return [...rows];
}

/** The story a task belongs to (its root), when the task is the team's. */
export async function findStoryOfTask(db: Db, teamId: string, taskId: string): Promise<string | null> {
  const [row] = await db.execute<{ root: string }>(sql`
    select t.root_task_id as root from tasks t join agents a on a.id = t.agent_id where t.id = ${taskId} and a.team_id = ${teamId}`);
  return row?.root ?? null;
}

export type ToolUseRow = { taskId: string; toolName: string; calls: number };

/** How often each tool was called in each task's work. */
export async function listToolUse(db: Db, taskIds: readonly string[]): Promise<ToolUseRow[]> {
  if (taskIds.length === 0) return [];
  const rows = await db.execute<ToolUseRow>(sql`
    select m.task_id as "taskId", call->>'toolName' as "toolName", count(*)::int as calls
      from messages m cross join jsonb_array_elements(m.tool_calls) as call
     where m.task_id = any(${uuidArray(taskIds)}) and m.role = 'assistant' and m.tool_calls is not null
     group by 1, 2`);
  return [...rows];
}

export type TaskModelUsageRow = ModelTokens & { taskId: string };

/** The model calls made for each task, per model and kept price (to be priced by the caller). */
export async function listTaskUsage(db: Db, taskIds: readonly string[]): Promise<TaskModelUsageRow[]> {
  if (taskIds.length === 0) return [];
  const rows = await db.execute<{
    taskId: string;
    model: string;
    input_usd_per_mtok: string | null;
    cached_input_usd_per_mtok: string | null;
    output_usd_per_mtok: string | null;
    inputTokens: number;
    cachedTokens: number;
    outputTokens: number;
    calls: number;
    estimatedCalls: number;
  }>(sql`
    select u.task_id as "taskId", u.model, ${KEPT_PRICE_COLUMNS}, sum(u.input_tokens)::int as "inputTokens", sum(u.cached_tokens)::int as "cachedTokens",
           sum(u.output_tokens)::int as "outputTokens", count(*)::int as calls, (count(*) filter (where u.estimated))::int as "estimatedCalls"
      from usage u where u.task_id = any(${uuidArray(taskIds)})
     group by 1, 2, 3, 4, 5`);
  return rows.map(({ input_usd_per_mtok, cached_input_usd_per_mtok, output_usd_per_mtok, ...row }) => ({
    ...row,
    price: keptPrice(input_usd_per_mtok, cached_input_usd_per_mtok, output_usd_per_mtok),
  }));
}

export type StoryInboxRow = {
  id: string;
  taskId: string;
  agentId: string;
  type: InboxItemType;
  title: string;
  summary: string;
  /** A question's or approval's state (open, answered, approved, …); null for briefings and alerts. */
  state: string | null;
  /** Where the person decided or answered it (app, email, webhook, slack); null until then. */
  via: DecisionChannel | null;
  createdAt: string;
};

/** What these tasks sent the person: briefings, questions, approvals, alerts; oldest first. */
export async function listStoryInboxItems(db: Db, taskIds: readonly string[]): Promise<StoryInboxRow[]> {
  if (taskIds.length === 0) return [];
  const rows = await db.execute<StoryInboxRow>(sql`
    select i.id, i.task_id as "taskId", i.agent_id as "agentId", i.type, i.title, i.summary,
           coalesce(q.status, p.status) as state, coalesce(q.answered_via, p.decided_via) as via,
           to_jsonb(i.created_at) #>> '{}' as "createdAt"
      from inbox_items i
      left join questions q on q.id = i.question_id
      left join approvals p on p.id = i.approval_id
     where i.task_id = any(${uuidArray(taskIds)})
     order by i.created_at, i.id`);
  return [...rows];
}

/**
 * A story's steps in the timeline's own shape, oldest first: its tasks given and ended, the
 * messages logged for them (tool results ride with their calls) and its inbox items.
 */
export async function listStoryStepRows(db: Db, teamId: string, rootId: string): Promise<TimelineRow[]> {
  const endedKey = sql`md5(t.id::text || ':ended')::uuid`;
  const rows = await db.execute<TimelineRow>(sql`
    with story as (
      select t.* from tasks t join agents a on a.id = t.agent_id where t.root_task_id = ${rootId} and a.team_id = ${teamId}
    )
    select * from (
      select 'message' as source, m.id as key, ${atMicros(sql`m.created_at`)} as "atMicros", ${messageKind} as kind, c.agent_id as "agentId",
             jsonb_build_object('id', m.id, 'conversation_id', m.conversation_id, 'role', m.role, 'content', m.content,
                                'thinking', m.thinking, 'tool_calls', m.tool_calls, 'task_id', m.task_id, 'created_at', m.created_at) as row
        from story t join messages m on m.task_id = t.id join conversations c on c.id = m.conversation_id
       where m.role <> 'tool'
      union all
      select 'task-given', t.id, ${atMicros(sql`t.created_at`)}, 'task', t.agent_id, to_jsonb(t) from story t
      union all
      select 'task-ended', ${endedKey}, ${atMicros(sql`t.completed_at`)}, 'task', t.agent_id, to_jsonb(t) from story t where t.completed_at is not null
      union all
      select 'inbox', i.id, ${atMicros(sql`i.created_at`)}, i.type, i.agent_id,
             jsonb_build_object('id', i.id, 'agent_id', i.agent_id, 'type', i.type, 'title', i.title, 'summary', i.summary, 'content', i.content,
                                'task_id', i.task_id, 'question_id', i.question_id, 'approval_id', i.approval_id, 'read_at', i.read_at, 'created_at', i.created_at)
        from story t join inbox_items i on i.task_id = t.id
    ) steps
    order by "atMicros"::bigint, key`);
  return [...rows];
}

function uuidArray(ids: readonly string[]): SQL {
  return sql`${`{${[...new Set(ids)].join(",")}}`}::uuid[]`;
}
