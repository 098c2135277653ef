CREATE TABLE "model_prices" (
	"model" text PRIMARY KEY NOT NULL,
	"input_usd_per_mtok" numeric(12, 4) NOT NULL,
	"cached_input_usd_per_mtok" numeric(12, 4),
	"output_usd_per_mtok" numeric(12, 4) NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "model_prices_nonnegative_check" CHECK (input_usd_per_mtok >= 0 and output_usd_per_mtok >= 0 and (cached_input_usd_per_mtok is null or cached_input_usd_per_mtok >= 0))
);
--> statement-breakpoint
ALTER TABLE "teams" ADD COLUMN "daily_token_budget" integer;--> statement-breakpoint
ALTER TABLE "teams" ADD COLUMN "daily_cost_budget_usd" numeric(12, 4);--> statement-breakpoint
ALTER TABLE "usage" ADD COLUMN "work_session_id" uuid;--> statement-breakpoint
ALTER TABLE "usage" ADD COLUMN "finish_reason" text;--> statement-breakpoint
ALTER TABLE "usage" ADD CONSTRAINT "usage_work_session_id_work_sessions_id_fk" FOREIGN KEY ("work_session_id") REFERENCES "public"."work_sessions"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "inbox_items_team_created_idx" ON "inbox_items" USING btree ("team_id","created_at","id");--> statement-breakpoint
CREATE INDEX "messages_conversation_created_idx" ON "messages" USING btree ("conversation_id","created_at","id");--> statement-breakpoint
CREATE INDEX "tasks_agent_created_idx" ON "tasks" USING btree ("agent_id","created_at","id");--> statement-breakpoint
CREATE INDEX "usage_work_session_idx" ON "usage" USING btree ("work_session_id") WHERE work_session_id is not null;--> statement-breakpoint
CREATE INDEX "usage_created_idx" ON "usage" USING btree ("created_at");--> statement-breakpoint
ALTER TABLE "teams" ADD CONSTRAINT "teams_daily_token_budget_check" CHECK (daily_token_budget is null or daily_token_budget > 0);--> statement-breakpoint
ALTER TABLE "teams" ADD CONSTRAINT "teams_daily_cost_budget_check" CHECK (daily_cost_budget_usd is null or daily_cost_budget_usd > 0);