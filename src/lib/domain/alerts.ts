import "server-only";
import type { Db } from "@/lib/db/client";
import type { Agent, InboxItem, StoredToolCall } from "@/lib/db/schema";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { postToInbox } from "./inbox";
import { queueInput } from "./tasks";

/**
 * An `alert` in the person's inbox (and on the team's notification channels): something
 * failed or cannot go on without them. Each alert has a key naming what it is about
 * ("task-failed:<id>"); raising the same alert again adds nothing, so a failure seen by
 * several sessions, retries or workers is one alert. Runs in the caller's transaction,
 * with the change it reports.
 */
export async function raiseAlert(
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
