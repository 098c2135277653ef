import "server-only";
// What every agent is doing now, in one statement for any number of teams (views/team-activity.ts shapes it).
import { inArray, sql } from "drizzle-orm";
import type { Db } from "@/lib/db/client";
import { taskStatusIn } from "@/lib/db/queries/tasks";
import { agents, type AgentRole, type StoredToolCall } from "@/lib/db/schema";
import { openTaskStatuses, type OpenTaskStatus } from "@/lib/db/task-statuses";

export type AgentActivityRow = {
  agent_id: string;
  team_id: string;
  name: string;
  role: AgentRole;
  parent_agent_id: string | null;
  session_id: string | null;
  session_started_at: string | Date | null;
  session_steps: number | null;
  stop_requested: boolean | null;
  model_calls: number | null;
  task_id: string | null;
  task_title: string | null;
  task_status: OpenTaskStatus | null;
  last_session_status: string | null;
  pending_calls: StoredToolCall[] | null;
  call_at: string | Date | null;
  tail_at: string | Date | null;
};

export function listAgentActivityRows(db: Db, teamIds: readonly string[]) {
  return db.execute<AgentActivityRow>(sql`
    select agents.id as agent_id, agents.team_id, agents.name, agents.role, agents.parent_agent_id,
           s.id as session_id, s.started_at as session_started_at, s.steps as session_steps,
           s.stop_requested_at is not null as stop_requested,
           (select count(*)::int from usage u where u.work_session_id = s.id and u.purpose in ('work', 'briefing')) as model_calls,
           t.id as task_id, t.title as task_title, t.status as task_status, last_session.status as last_session_status,
           step.pending_calls, step.call_at, tail.created_at as tail_at
      from agents
      left join work_sessions s on s.agent_id = agents.id and s.status = 'running'
      left join lateral (
        -- The task the running session is on (work_sessions.task_id), else the open task it started
        -- last, else the oldest one still waiting to be taken up.
        select id, title, status from tasks
         where tasks.agent_id = agents.id and ${taskStatusIn(sql`tasks.status`, openTaskStatuses)}
         order by tasks.id = s.task_id desc nulls last, started_at desc nulls last, case when started_at is null then created_at end asc, created_at desc
         limit 1
      ) t on true
      left join lateral (
        select status from work_sessions last
         where last.agent_id = agents.id
         order by last.started_at desc
         limit 1
      ) last_session on true
      left join conversations c on s.id is not null and c.agent_id = agents.id and c.mode = 'background'
      left join messages tail on tail.id = c.last_message_id
      left join lateral (
        select m.created_at as call_at,
               (select jsonb_agg(call) from jsonb_array_elements(m.tool_calls) call
                 where not exists (select 1 from messages r where r.conversation_id = c.id and r.tool_call_id = call->>'toolCallId')) as pending_calls
          from messages m
         where m.conversation_id = c.id and m.role = 'assistant' and m.created_at >= s.started_at
         order by m.created_at desc, m.id desc
         limit 1
      ) step on true
     where ${inArray(agents.teamId, [...teamIds])}
     order by agents.team_id, agents.role, agents.created_at, agents.id`);
}
