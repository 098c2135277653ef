import "server-only";
// Every alert the person can get, built here and nowhere else: what it says and the key that
// makes it one alert however often it is raised. Other modules call these by name.
import type { Db } from "@/lib/db/client";
import type { WaitingTeam } from "@/lib/db/queries/work-sessions";
import type { Agent, InboxItem, StoredToolCall, Task } from "@/lib/db/schema";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { plural } from "@/lib/util/plural";
import type { TeamBudgetFields, TeamBudgets } from "./budgets";
import { postToInbox } from "./inbox";
import { queueInput } from "./tasks";

/**
 * An `alert` in the person's inbox (and on the team's notification channels): something
 * failed or cannot go on without them. Each alert has a key naming what it is about
 * ("task-failed:<id>"); raising the same alert again adds nothing, so a failure seen by
 * several sessions, retries or workers is one alert. Runs in the caller's transaction,
 * with the change it reports. Null when it was raised already.
 */
function raiseAlert(
  db: Db,
  jobs: JobQueue,
  alert: {
    teamId: string;
    agentId: string;
    taskId?: string | null;
    key: string;
    title: string;
    summary: string;
    content: string;
  },
): Promise<InboxItem | null> {
  return postToInbox(db, jobs, {
    teamId: alert.teamId,
    agentId: alert.agentId,
    type: "alert",
    taskId: alert.taskId ?? null,
    dedupeKey: alert.key,
    title: alert.title.slice(0, 200),
    summary: alert.summary.slice(0, 1000),
    content: alert.content,
  });
}

/** A task failed (task-lifecycle.ts: fail): once per task. */
export async function alertTaskFailed(
  db: Db,
  jobs: JobQueue,
  agent: Agent,
  task: Pick<Task, "id" | "title">,
  reason: string,
): Promise<void> {
  await raiseAlert(db, jobs, {
    teamId: agent.teamId,
    agentId: agent.id,
    taskId: task.id,
    key: `task-failed:${task.id}`,
    title: `${agent.name} could not finish "${task.title}"`,
    summary: reason,
    content: `**${agent.name}** stopped working on the task **${task.title}**.\n\n${reason}\n\nThe agent's work log shows what happened up to that point.`,
  });
}

/**
 * The model an agent uses cannot call tools (its server refused them): none of the work of the
 * team's agents that use it can be done, and their tasks failed with `reason`. Once per team and model, however many tasks,
 * agents or sessions it stopped: the person hears it once, with what to choose instead.
 */
export async function alertModelWithoutTools(
  db: Db,
  jobs: JobQueue,
  agent: Agent,
  model: string,
  reason: string,
): Promise<void> {
  await raiseAlert(db, jobs, {
    teamId: agent.teamId,
    agentId: agent.id,
    key: `model-without-tools:${agent.teamId}:${model}`,
    // Worded for the team: the one alert stands for every agent of it that uses the model, not only the first one stopped.
    title: `The model ${model} cannot call tools: the team's work with it stopped`,
    summary: reason,
    content: `The model **${model}** cannot call tools: its server says so (first seen when **${agent.name}** worked with it). Cadre's agents work through tools, so nothing given to an agent of this team that uses this model could be done: their open tasks failed with this reason.\n\n${reason}\n\nOnce those agents have a model that calls tools, give the work again (Retry on each task).`,
  });
}

/**
 * A work session failed with no task of the person's to fail (a webhook's input, a report):
 * the team stopped working, and the person hears so once per session.
 */
export async function alertSessionFailed(
  db: Db,
  jobs: JobQueue,
  agent: Agent,
  sessionId: string,
  reason: string,
): Promise<void> {
  await raiseAlert(db, jobs, {
    teamId: agent.teamId,
    agentId: agent.id,
    key: `session-failed:${sessionId}`,
    title: `${agent.name} stopped working`,
    summary: reason,
    content: `**${agent.name}**'s work session stopped.\n\n${reason}\n\nThe agent's work log shows what happened up to that point.`,
  });
}

/**
 * The team's daily budget ran out and its work waits (session-end.ts, waitForBudget): once per
 * team, UTC day and budget. A new budget that runs out the same day is news again; more tasks
 * against the same one are not. `reason`: teamBudgetProblem's words.
 */
export async function alertTeamOverBudget(
  db: Db,
  jobs: JobQueue,
  agent: Agent,
  team: TeamBudgetFields,
  budgets: TeamBudgets,
  reason: string,
): Promise<void> {
  const sentence = `${reason[0]!.toUpperCase()}${reason.slice(1)}`;
  await raiseAlert(db, jobs, {
    teamId: agent.teamId,
    agentId: agent.id,
    key: `budget:${agent.teamId}:${new Date().toISOString().slice(0, 10)}:${budgets.tokens.limit}:${budgets.costUsd ?? "none"}`,
    title: `${team.name} is over its daily budget: its work waits`,
    summary: `${sentence}.`,
    content: `${sentence}.\n\nNothing failed: tasks stay where they are, work given meanwhile waits with them, and the team's agents take it all up again when the next UTC day starts or as soon as the budget is raised.`,
  });
}

/**
 * A call acting outside Cadre (an MCP tool) that a dead worker cut off: whether it did its
 * part is unknown, and it is not run again by itself. The person gets an alert and a
 * subordinate's lead is told, as of any failure. In the caller's transaction.
 */
export async function reportUnknownOutcome(
  db: Db,
  jobs: JobQueue,
  agent: Agent,
  conversationId: string,
  call: Pick<StoredToolCall, "toolCallId" | "toolName" | "args">,
): Promise<void> {
  await raiseAlert(db, jobs, {
    teamId: agent.teamId,
    agentId: agent.id,
    key: `outcome-unknown:${conversationId}:${call.toolCallId}`,
    title: `${agent.name}'s call to ${call.toolName} may or may not have happened`,
    summary: `A worker stopped during the call; whether ${call.toolName} did its part is unknown, and it was not run again.`,
    content: `**${agent.name}** called **${call.toolName}** with:\n\n\`\`\`json\n${JSON.stringify(call.args, null, 2)}\n\`\`\`\n\nThe worker running it stopped before the answer came back. Check on the service itself whether it happened; the agent was told the outcome is unknown.`,
  });
  if (agent.role === "subordinate" && agent.parentAgentId) {
    await queueInput(db, jobs, agent.parentAgentId, {
      kind: "outcome-unknown",
      agentName: agent.name,
      toolName: call.toolName,
    });
  }
}

/**
 * Work of a team has waited with no live worker (health.ts): one alert per team per episode.
 * An episode is a stretch with no live worker; it is named by the last heartbeat before it
 * ("never" when no worker ever ran here), which no check within the stretch can change and
 * the next worker's heartbeats end. So however many checks run, from however many web
 * processes, the same key comes back and the inbox keeps one item; after a worker has run
 * and gone again, the key is new.
 */
export async function alertNoWorker(db: Db, jobs: JobQueue, team: WaitingTeam, lastSeen: Date | null): Promise<void> {
  await raiseAlert(db, jobs, {
    teamId: team.teamId,
    agentId: team.leadId,
    key: `no-worker:${team.teamId}:${lastSeen?.toISOString() ?? "never"}`,
    title: "Background work is waiting: no worker is running",
    summary: `Work for ${plural(team.agents, "agent")} of this team has waited since ${readableTime(team.waitingSince)} and no worker is running to do it.`,
    content: [
      "Tasks or messages for this team are queued, but no worker process is running, so nothing happens until one starts. Nothing is lost: the work starts as soon as a worker runs.",
      "Start one with `npm run worker` in the project folder, or run `npm run dev` / `npm start`, which start a worker with the web server.",
      lastSeen ? `The last worker was seen at ${readableTime(lastSeen)}.` : "No worker has run on this database yet.",
    ].join("\n\n"),
  });
}

function readableTime(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** A worker's crash streak as the supervisor reports it (workerCrashReport, views/worker-crashes.ts). */
type CrashStreak = {
  host: string;
  exits: number;
  windowMinutes: number;
  since: string;
  lastError: string;
  retrySeconds: number;
};

/**
 * The worker keeps crashing (worker-crashes.ts): one alert per crash streak, keyed by machine
 * and the streak's first exit, to the lead of the team the caller chose. True when it was
 * raised now, false when this streak's alert was raised already.
 */
export async function alertWorkerCrashing(
  db: Db,
  jobs: JobQueue,
  lead: { teamId: string; leadId: string },
  report: CrashStreak,
): Promise<boolean> {
  // The log's "[worker] " prefix says whose line it is in a terminal; in the inbox the title does.
  const lastError = report.lastError
    .replace(/^\[[\w-]+\]\s*/, "")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, 300);
  const created = await raiseAlert(db, jobs, {
    teamId: lead.teamId,
    agentId: lead.leadId,
    key: `worker-crashing:${report.host}:${report.since}`,
    title: "The background worker keeps stopping",
    summary: `It stopped ${plural(report.exits, "time")} in ${report.windowMinutes} minutes and is started again every ${report.retrySeconds} s. Last: ${lastError}`,
    content: [
      `The worker that runs every team's background work on ${report.host} stopped ${plural(report.exits, "time")} in ${report.windowMinutes} minutes. It is started again every ${report.retrySeconds} s, and the web app keeps running meanwhile, but agents' work, check-ins and notifications wait while it is down.`,
      `The last time it said: "${lastError}"`,
      "The terminal or log where Cadre runs shows its full output. A database that refuses connections (check DATABASE_URL and the server's max_connections) and a setting the worker cannot use are the usual causes.",
    ].join("\n\n"),
  });
  return created !== null;
}
