CREATE TABLE "agent_inputs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"agent_id" uuid NOT NULL,
	"content" text NOT NULL,
	"task_id" uuid,
	"created_at" timestamp with time zone DEFAULT clock_timestamp() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "questions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"agent_id" uuid NOT NULL,
	"task_id" uuid,
	"recipient_agent_id" uuid,
	"question" text NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"answer" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"answered_at" timestamp with time zone,
	CONSTRAINT "questions_status_check" CHECK (status in ('open', 'answered', 'withdrawn'))
);
--> statement-breakpoint
CREATE TABLE "workers" (
	"id" text PRIMARY KEY NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL,
	"stopped_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "usage" DROP CONSTRAINT "usage_purpose_check";--> statement-breakpoint
ALTER TABLE "usage" ALTER COLUMN "agent_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "inbox_items" ADD COLUMN "task_id" uuid;--> statement-breakpoint
ALTER TABLE "inbox_items" ADD COLUMN "dedupe_key" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "inbox_item_id" uuid;--> statement-breakpoint
ALTER TABLE "agent_inputs" ADD CONSTRAINT "agent_inputs_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_inputs" ADD CONSTRAINT "agent_inputs_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "questions" ADD CONSTRAINT "questions_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "questions" ADD CONSTRAINT "questions_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "questions" ADD CONSTRAINT "questions_recipient_agent_id_agents_id_fk" FOREIGN KEY ("recipient_agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_inputs_agent_created_idx" ON "agent_inputs" USING btree ("agent_id","created_at");--> statement-breakpoint
CREATE INDEX "questions_recipient_status_idx" ON "questions" USING btree ("recipient_agent_id","status");--> statement-breakpoint
CREATE INDEX "questions_task_id_idx" ON "questions" USING btree ("task_id");--> statement-breakpoint
CREATE INDEX "workers_heartbeat_idx" ON "workers" USING btree ("heartbeat_at");--> statement-breakpoint
ALTER TABLE "inbox_items" ADD CONSTRAINT "inbox_items_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "inbox_items_dedupe_key_idx" ON "inbox_items" USING btree ("dedupe_key") WHERE dedupe_key is not null;--> statement-breakpoint
ALTER TABLE "usage" ADD CONSTRAINT "usage_purpose_check" CHECK (purpose in ('chat', 'work', 'compaction', 'extraction', 'briefing', 'title', 'draft'));
--> statement-breakpoint
-- Live updates for what this migration adds: queued input and questions show in an
-- agent's pages; a worker starting or stopping changes the "no worker" banner (its
-- heartbeat does not notify).
CREATE OR REPLACE FUNCTION cadre_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  payload jsonb;
BEGIN
  payload := jsonb_build_object('table', TG_TABLE_NAME, 'op', lower(TG_OP), 'id', NEW.id);
  IF TG_TABLE_NAME = 'messages' THEN
    payload := payload || (
      SELECT jsonb_build_object('conversationId', c.id, 'agentId', c.agent_id, 'mode', c.mode, 'role', NEW.role)
      FROM conversations c WHERE c.id = NEW.conversation_id
    );
  ELSIF TG_TABLE_NAME = 'inbox_items' THEN
    payload := payload || jsonb_build_object('agentId', NEW.agent_id, 'teamId', NEW.team_id);
  ELSIF TG_TABLE_NAME = 'tasks' THEN
    payload := payload || jsonb_build_object('agentId', NEW.agent_id, 'status', NEW.status);
  ELSIF TG_TABLE_NAME = 'work_sessions' THEN
    payload := payload || jsonb_build_object('agentId', NEW.agent_id, 'status', NEW.status);
  ELSIF TG_TABLE_NAME = 'knowledge_items' THEN
    payload := payload || jsonb_build_object('agentId', NEW.agent_id);
  ELSIF TG_TABLE_NAME = 'agents' THEN
    payload := payload || jsonb_build_object('agentId', NEW.id, 'teamId', NEW.team_id);
  ELSIF TG_TABLE_NAME IN ('agent_inputs', 'questions') THEN
    payload := payload || jsonb_build_object('agentId', NEW.agent_id);
  ELSIF TG_TABLE_NAME = 'teams' THEN
    payload := payload || jsonb_build_object('teamId', NEW.id);
  END IF;
  PERFORM pg_notify('cadre_events', payload::text);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER agent_inputs_notify AFTER INSERT ON agent_inputs
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
--> statement-breakpoint
CREATE TRIGGER agent_inputs_notify_delete AFTER DELETE ON agent_inputs
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_delete();
--> statement-breakpoint
CREATE TRIGGER questions_notify AFTER INSERT OR UPDATE OF status ON questions
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
--> statement-breakpoint
CREATE TRIGGER workers_notify AFTER INSERT OR UPDATE OF stopped_at ON workers
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
