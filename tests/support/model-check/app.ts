// The person's side of the engine model-check: what the HTTP routes do, called as lib use
// cases from the test process. The ONE place that knows which use case implements which
// button, so it is the one file to repoint when the engine's use cases change.
import { sql } from "drizzle-orm";
import type { EngineDeps } from "@/lib/core/engine-config";
import { stopAgent } from "@/lib/engine/stop";
import { assignTask, cancelTask, removeSubordinate } from "@/lib/domain/tasks";
import { setTeamStatus } from "@/lib/domain/teams";
import { createSubordinate } from "@/lib/db/queries/agents";
import { createTeamWithLead } from "@/lib/db/queries/teams";
import { setWebhookSecret } from "@/lib/db/queries/webhooks";
import type { RemovedTask } from "./invariants";
import { generateWebhookSecret, signedWebhookHeaders } from "@/lib/http/webhook-signature";
import { receiveWebhook } from "@/lib/domain/webhooks";

export type App = Pick<EngineDeps, "db" | "jobs" | "config" | "chooseModel" | "log">;

export type CreatedTeam = { teamId: string; leadId: string; subIds: string[]; secret: string | null };

/** POST /api/teams (with the lead's instructions given) + POST /api/teams/:id/agents per subordinate. */
export async function createTeam(
  app: App,
  input: { name: string; leadName: string; subNames: string[]; webhooks: boolean },
): Promise<CreatedTeam> {
  const { team, lead } = await createTeamWithLead(app.db, {
    name: input.name,
    mission: "Track solar prices and brief the person.",
    leadName: input.leadName,
    leadInstructions: "Delegate research, answer questions, brief on news.",
  });
  const subIds: string[] = [];
  for (const name of input.subNames)
    subIds.push((await createSubordinate(app.db, team.id, { name, instructions: `${name} researches.` })).id);
  let secret: string | null = null;
  if (input.webhooks) {
    secret = generateWebhookSecret();
    await setWebhookSecret(app.db, team.id, secret);
  }
  return { teamId: team.id, leadId: lead.id, subIds, secret };
}

/** POST /api/agents/:id/tasks */
export async function assignUserTask(app: App, agentId: string, title: string): Promise<string> {
  const task = await assignTask(app.db, app.jobs, { agentId, source: "user", title, description: "" });
  return task.id;
}

/** POST /api/tasks/:id/cancel */
export async function cancel(app: App, taskId: string): Promise<void> {
  await cancelTask(app.db, app.jobs, taskId);
}

/** POST /api/agents/:id/stop */
export async function stop(app: App, agentId: string): Promise<void> {
  await stopAgent(app.db, app.jobs, agentId);
}

/** PATCH /api/teams/:id { status } */
export async function setPaused(app: App, teamId: string, paused: boolean): Promise<void> {
  await setTeamStatus(app as EngineDeps, teamId, paused ? "paused" : "active");
}

/**
 * DELETE /api/agents/:id. Returns the ids of the tasks the subordinate had, read under
 * the agent's row lock in the same transaction (no delegation can slip in between), so
 * the checker can still expect an outcome for each after the rows are gone.
 */
export async function removeAgent(app: App, agentId: string): Promise<RemovedTask[]> {
  return app.db.transaction(async (tx) => {
    const locked = await tx.execute(sql`select id from agents where id = ${agentId} for update`);
    if (locked.length === 0) return [];
    const rows = await tx.execute<{ id: string; parent_task_id: string | null; status: string; source: string }>(
      sql`select id, parent_task_id, status, source from tasks where agent_id = ${agentId}`,
    );
    await removeSubordinate(tx, app.jobs, agentId);
    return rows.map((row) => ({
      id: row.id,
      parentTaskId: row.parent_task_id,
      status: row.status,
      source: row.source,
    }));
  });
}

/** POST /api/hooks/:teamId, signed with the team's secret. */
export async function deliverWebhook(app: App, teamId: string, secret: string, body: object): Promise<void> {
  const raw = new TextEncoder().encode(JSON.stringify(body));
  await receiveWebhook(app, teamId, { headers: new Headers(signedWebhookHeaders(secret, raw)), body: raw });
}
