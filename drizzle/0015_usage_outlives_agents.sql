-- A usage row is what a call cost: it outlives the agent that made it and the agent's team.
-- Before, removing an agent deleted its rows (ON DELETE CASCADE), so a team's spend today
-- dropped and its budget let more through, and the usage page's totals shrank. The row now
-- names its team itself, so a team's spend is read without the agents that are gone.
ALTER TABLE "usage" DROP CONSTRAINT "usage_agent_id_agents_id_fk";
--> statement-breakpoint
ALTER TABLE "usage" ADD COLUMN "team_id" uuid;--> statement-breakpoint
UPDATE "usage" u SET "team_id" = a."team_id" FROM "agents" a WHERE a."id" = u."agent_id";--> statement-breakpoint
CREATE INDEX "usage_team_created_idx" ON "usage" USING btree ("team_id","created_at");
