import "server-only";
// What every agent is doing now: its running work session, the task it is on (the session's own), and the step
// under way (a model call, or the tool it is running), read in one statement for any number
// of teams so the teams list stays one query however many teams there are.
import { inArray, sql } from "drizzle-orm";
import type { Db } from "@/lib/db/client";
import type { AgentActivity, CurrentStep } from "@/lib/views/activity";
import { taskStatusIn } from "@/lib/db/queries/tasks";
import { agents, type AgentRole, type StoredToolCall } from "@/lib/db/schema";
import { openTaskStatuses, type OpenTaskStatus } from "@/lib/db/task-statuses";
import { describeToolCall } from "@/lib/views/tool-labels";

type Row = {
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

const iso = (value: string | Date) => new Date(value).toISOString();

/**
 * Every agent of the given teams with what it is doing now, in team order then lead first.
 *
 * The step is read from the running session's work log: the last assistant row written in
 * the session whose tool calls have no result row yet means those tools are running (since
 * that row); otherwise the session is waiting on the model (since the last thing written, or
 * the session's start). Steps are the session's model calls (its `work` and `briefing` usage
 * rows), since `work_sessions.steps` is only written with a heartbeat after a step ends.
 */
export async function getTeamActivity(db: Db, teamIds: readonly string[]): Promise<Map<string, AgentActivity[]>> {
  const byTeam = new Map<string, AgentActivity[]>(teamIds.map((id) => [id, []]));
  if (teamIds.length === 0) return byTeam;
  const rows = await db.execute<Row>(sql`
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

  const names = new Map(rows.map((row) => [row.agent_id, row.name]));
  const activities = rows.map((row): AgentActivity => {
    const running = row.session_id !== null && row.session_started_at !== null;
    const pending = running ? (row.pending_calls ?? []) : [];
    const calls = row.model_calls ?? 0;
    let step: CurrentStep | null = null;
    if (running && pending.length > 0 && row.call_at) {
      const [first] = pending;
      const label =
        describeToolCall(first!.toolName, first!.args, "running", undefined, names) +
        (pending.length > 1 ? ` (and ${pending.length - 1} more)` : "");
      step = { kind: "tool", label, toolName: first!.toolName, since: iso(row.call_at) };
    } else if (running) {
      const started = new Date(row.session_started_at!);
      const last = row.tail_at ? new Date(row.tail_at) : null;
      step = {
        kind: "model",
        label: "Thinking (calling the model)",
        since: (last && last > started ? last : started).toISOString(),
      };
    }
    return {
      agentId: row.agent_id,
      teamId: row.team_id,
      name: row.name,
      role: row.role,
      parentAgentId: row.parent_agent_id,
      session: running
        ? {
            id: row.session_id!,
            since: iso(row.session_started_at!),
            // The step being taken counts: a search running in the first step is step 1, not "0 steps".
            steps: Math.max(row.session_steps ?? 0, calls + (step?.kind === "model" ? 1 : 0)),
            stopping: row.stop_requested === true,
          }
        : null,
      task: row.task_id ? { id: row.task_id, title: row.task_title!, status: row.task_status! } : null,
      lastSessionInterrupted: !running && row.last_session_status === "interrupted",
      step,
      subordinatesWorking: 0,
    };
  });
  for (const activity of activities) {
    if (activity.session && activity.parentAgentId) {
      const lead = activities.find((candidate) => candidate.agentId === activity.parentAgentId);
      if (lead) lead.subordinatesWorking += 1;
    }
  }
  for (const activity of activities) byTeam.get(activity.teamId)?.push(activity);
  return byTeam;
}
