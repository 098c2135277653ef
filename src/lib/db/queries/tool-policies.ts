import "server-only";
import { and, eq, isNull, or, sql } from "drizzle-orm";
import type { Db } from "../client";
import { toolPolicyRules, type ToolPolicy, type ToolPolicyRule } from "../schema";

/** The team's rules and every agent's overrides. */
export function listToolPolicyRules(db: Db, teamId: string): Promise<ToolPolicyRule[]> {
  return db.select().from(toolPolicyRules).where(eq(toolPolicyRules.teamId, teamId));
}

/** The rules that apply to one agent: the team's and the agent's own. */
export function listToolPolicyRulesFor(db: Db, teamId: string, agentId: string): Promise<ToolPolicyRule[]> {
  return db
    .select()
    .from(toolPolicyRules)
    .where(
      and(
        eq(toolPolicyRules.teamId, teamId),
        or(isNull(toolPolicyRules.agentId), eq(toolPolicyRules.agentId, agentId)),
      ),
    );
}

/** Sets a rule (the team's when agentId is null), or removes it with policy null so the default applies again. */
export async function setToolPolicyRule(
  db: Db,
  rule: { teamId: string; agentId: string | null; toolName: string; policy: ToolPolicy | null },
): Promise<void> {
  const owner = rule.agentId === null ? isNull(toolPolicyRules.agentId) : eq(toolPolicyRules.agentId, rule.agentId);
  const where = and(eq(toolPolicyRules.teamId, rule.teamId), owner, eq(toolPolicyRules.toolName, rule.toolName));
  if (rule.policy === null) {
    await db.delete(toolPolicyRules).where(where);
    return;
  }
  const updated = await db
    .update(toolPolicyRules)
    .set({ policy: rule.policy, updatedAt: sql`now()` })
    .where(where)
    .returning({ id: toolPolicyRules.id });
  if (updated.length === 0) {
    await db
      .insert(toolPolicyRules)
      .values({ teamId: rule.teamId, agentId: rule.agentId, toolName: rule.toolName, policy: rule.policy })
      .onConflictDoUpdate({
        target:
          rule.agentId === null
            ? [toolPolicyRules.teamId, toolPolicyRules.toolName]
            : [toolPolicyRules.agentId, toolPolicyRules.toolName],
        targetWhere: rule.agentId === null ? sql`agent_id is null` : sql`agent_id is not null`,
        set: { policy: rule.policy, updatedAt: sql`now()` },
      });
  }
}
