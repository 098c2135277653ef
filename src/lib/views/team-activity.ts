import "server-only";
import { listAgentActivityRows } from "@/lib/db/queries/team-activity";
import type { Db } from "@/lib/db/client";
import type { AgentActivity, CurrentStep } from "@/lib/views/activity";
import { describeToolCall } from "@/lib/views/tool-labels";

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
  const rows = await listAgentActivityRows(db, teamIds);

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
