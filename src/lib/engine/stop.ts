import "server-only";
import { lockAgent } from "@/lib/db/queries/agents";
import type { Db } from "@/lib/db/client";
import { retryingTransaction } from "@/lib/db/transactions";
import { getBackgroundConversation } from "@/lib/db/queries/conversations";
import { listTasksByAgent } from "@/lib/db/queries/tasks";
import { openTaskStatuses } from "@/lib/db/task-statuses";
import { requestSessionStop } from "@/lib/db/queries/work-sessions";
import type { Task, WorkSession } from "@/lib/db/schema";
import { notFound } from "@/lib/errors";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { markStopped } from "./session-end";
import { STOPPED_BY_PERSON } from "@/lib/core/formats";
import { cancelTrees } from "@/lib/domain/task-lifecycle";

/**
 * The person's Stop: the agent drops every task it was given so far. In one
 * transaction under the agent's lock (the lock a session is claimed under, so a
 * session is either running and told, or not yet claimed and finds nothing to start):
 * its open tasks — pending ones too — are cancelled with what was delegated from them;
 * a running session is told to stop at once and ends with the "(stopped by the person)"
 * marker. Input queued for the agent that is not a task (a webhook, a report) is new
 * work and is handled after the Stop, like work given after it.
 */
export async function stopAgent(
  db: Db,
  jobs: JobQueue,
  agentId: string,
): Promise<{ session: WorkSession | null; cancelled: Task[] }> {
  return retryingTransaction(db, async (tx) => {
    const agent = await lockAgent(tx, agentId);
    if (!agent) throw notFound("agent", agentId);
    const open = await listTasksByAgent(tx, agentId, openTaskStatuses);
    const cancelled = await cancelTrees(
      tx,
      jobs,
      open.map((task) => task.id),
      STOPPED_BY_PERSON,
      { quietFor: agentId },
    );
    const session = await requestSessionStop(tx, agentId);
    if (!session) await markStopped(tx, (await getBackgroundConversation(tx, agentId)).id);
    return { session, cancelled };
  });
}
