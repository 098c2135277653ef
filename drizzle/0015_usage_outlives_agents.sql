-- A usage row is what a call cost, a ledger entry: it outlives the agent that made it and the
-- agent's team. Before, removing an agent deleted its rows (ON DELETE CASCADE), so a team's
-- spend today dropped and its budget let more through, and the usage page's totals shrank;
-- and a call that ended after its agent was removed was not recorded at all. The row now names
-- its team itself and has no foreign keys: it is written whatever happened meanwhile, and
-- writing it locks none of the rows it names.
ALTER TABLE "usage" DROP CONSTRAINT "usage_agent_id_agents_id_fk";
--> statement-breakpoint
ALTER TABLE "usage" DROP CONSTRAINT "usage_conversation_id_conversations_id_fk";
--> statement-breakpoint
ALTER TABLE "usage" DROP CONSTRAINT "usage_work_session_id_work_sessions_id_fk";
--> statement-breakpoint
ALTER TABLE "usage" ADD COLUMN "team_id" uuid;--> statement-breakpoint
UPDATE "usage" u SET "team_id" = a."team_id" FROM "agents" a WHERE a."id" = u."agent_id";--> statement-breakpoint
CREATE INDEX "usage_team_created_idx" ON "usage" USING btree ("team_id","created_at");
