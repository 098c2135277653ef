CREATE TABLE "work_sessions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"agent_id" uuid NOT NULL,
	"status" text DEFAULT 'running' NOT NULL,
	"worker" text NOT NULL,
	"steps" integer DEFAULT 0 NOT NULL,
	"error" text,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL,
	"stop_requested_at" timestamp with time zone,
	"ended_at" timestamp with time zone,
	CONSTRAINT "work_sessions_status_check" CHECK (status in ('running', 'completed', 'failed', 'stopped', 'interrupted'))
);
--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "wake_requested_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "work_sessions" ADD CONSTRAINT "work_sessions_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "work_sessions_one_running_per_agent_idx" ON "work_sessions" USING btree ("agent_id") WHERE status = 'running';--> statement-breakpoint
CREATE INDEX "work_sessions_agent_started_idx" ON "work_sessions" USING btree ("agent_id","started_at");--> statement-breakpoint
CREATE INDEX "work_sessions_running_heartbeat_idx" ON "work_sessions" USING btree ("heartbeat_at") WHERE status = 'running';