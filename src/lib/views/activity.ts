// What an agent is doing now, as plain data the pages and client components share
// (client-safe: the query that fills it is lib/team-activity.ts).
import type { AgentRole } from "@/lib/db/schema";
import { isActiveTask, type OpenTaskStatus } from "@/lib/db/task-statuses";

/** The step under way: a model call, or the tool (or tools) the last model call asked for. */
export type CurrentStep =
  | { kind: "model"; label: string; since: string }
  | { kind: "tool"; label: string; toolName: string; since: string };

/** Times as ISO strings, so a server page hands it to a client component as is. */
export type AgentActivity = {
  agentId: string;
  teamId: string;
  name: string;
  role: AgentRole;
  parentAgentId: string | null;
  /** The running work session; null when the agent is not working. `steps` counts the step under way. */
  session: { id: string; since: string; steps: number; stopping: boolean } | null;
  /**
   * The task it is on: the running session's task (work_sessions.task_id), else the open task it
   * started last (waiting), else the oldest task given to it that no session has taken up yet.
   */
  task: { id: string; title: string; status: OpenTaskStatus } | null;
  /** Its latest session was interrupted (the database went away, a worker died): the job is retried. */
  lastSessionInterrupted: boolean;
  step: CurrentStep | null;
  /** For a lead: how many of its subordinates have a session running. */
  subordinatesWorking: number;
};

export type ActivityState = "working" | "waiting" | "queued" | "retrying" | "idle";

/**
 * working: a session runs. A task with no session never reads idle: retrying after an
 * interrupted session; waiting while its subordinates work or it waits for an answer (or for
 * reports on a task it started); queued while a task given to it waits for a worker.
 */
export function activityState(activity: AgentActivity): ActivityState {
  if (activity.session) return "working";
  if (activity.task && activity.lastSessionInterrupted) return "retrying";
  if (activity.subordinatesWorking > 0 || isActiveTask(activity.task?.status)) return "waiting";
  if (activity.task) return "queued";
  return "idle";
}

/** "8 s", "3 min 12 s", "2 h 5 min": how long something has run, coarser as it grows. */
export function formatElapsed(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  const hours = Math.floor(minutes / 60);
  return `${hours} h ${minutes % 60} min`;
}
