CREATE TABLE "approvals" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"agent_id" uuid NOT NULL,
	"conversation_id" uuid NOT NULL,
	"task_id" uuid,
	"tool_call_id" text NOT NULL,
	"tool_name" text NOT NULL,
	"input" jsonb NOT NULL,
	"reason" text DEFAULT '' NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"approved_input" jsonb,
	"decision_note" text,
	"decided_at" timestamp with time zone,
	"execution_started_at" timestamp with time zone,
	"resolved_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
	CONSTRAINT "approvals_status_check" CHECK (status in ('pending', 'approved', 'denied', 'withdrawn'))
);
--> statement-breakpoint
CREATE TABLE "notification_channels" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"type" text NOT NULL,
	"name" text NOT NULL,
	"url" text,
	"secret" text,
	"recipient" text,
	"kinds" jsonb NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "notification_channels_type_check" CHECK (type in ('webhook', 'email')),
	CONSTRAINT "notification_channels_target_check" CHECK ((type = 'webhook' and url is not null) or (type = 'email' and recipient is not null))
);
--> statement-breakpoint
CREATE TABLE "notifications" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"channel_id" uuid NOT NULL,
	"team_id" uuid NOT NULL,
	"inbox_item_id" uuid,
	"kind" text NOT NULL,
	"payload" jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_attempt_at" timestamp with time zone,
	"sent_at" timestamp with time zone,
	CONSTRAINT "notifications_status_check" CHECK (status in ('pending', 'sent', 'failed'))
);
--> statement-breakpoint
CREATE TABLE "tool_policies" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"agent_id" uuid,
	"tool_name" text NOT NULL,
	"policy" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tool_policies_policy_check" CHECK (policy in ('auto', 'ask', 'deny'))
);
--> statement-breakpoint
ALTER TABLE "inbox_items" DROP CONSTRAINT "inbox_items_type_check";--> statement-breakpoint
ALTER TABLE "inbox_items" ADD COLUMN "question_id" uuid;--> statement-breakpoint
ALTER TABLE "inbox_items" ADD COLUMN "approval_id" uuid;--> statement-breakpoint
ALTER TABLE "approvals" ADD CONSTRAINT "approvals_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "approvals" ADD CONSTRAINT "approvals_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "approvals" ADD CONSTRAINT "approvals_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "approvals" ADD CONSTRAINT "approvals_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_channels" ADD CONSTRAINT "notification_channels_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_channel_id_notification_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."notification_channels"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_inbox_item_id_inbox_items_id_fk" FOREIGN KEY ("inbox_item_id") REFERENCES "public"."inbox_items"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_policies" ADD CONSTRAINT "tool_policies_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_policies" ADD CONSTRAINT "tool_policies_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "approvals_conversation_tool_call_idx" ON "approvals" USING btree ("conversation_id","tool_call_id");--> statement-breakpoint
CREATE INDEX "approvals_agent_unresolved_idx" ON "approvals" USING btree ("agent_id","created_at") WHERE resolved_at is null;--> statement-breakpoint
CREATE INDEX "approvals_task_id_idx" ON "approvals" USING btree ("task_id");--> statement-breakpoint
CREATE INDEX "notification_channels_team_idx" ON "notification_channels" USING btree ("team_id");--> statement-breakpoint
CREATE INDEX "notifications_team_created_idx" ON "notifications" USING btree ("team_id","created_at");--> statement-breakpoint
CREATE INDEX "notifications_channel_created_idx" ON "notifications" USING btree ("channel_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "tool_policies_team_tool_idx" ON "tool_policies" USING btree ("team_id","tool_name") WHERE agent_id is null;--> statement-breakpoint
CREATE UNIQUE INDEX "tool_policies_agent_tool_idx" ON "tool_policies" USING btree ("agent_id","tool_name") WHERE agent_id is not null;--> statement-breakpoint
ALTER TABLE "inbox_items" ADD CONSTRAINT "inbox_items_question_id_questions_id_fk" FOREIGN KEY ("question_id") REFERENCES "public"."questions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "inbox_items" ADD CONSTRAINT "inbox_items_approval_id_approvals_id_fk" FOREIGN KEY ("approval_id") REFERENCES "public"."approvals"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "inbox_items_team_type_created_idx" ON "inbox_items" USING btree ("team_id","type","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "inbox_items_question_id_idx" ON "inbox_items" USING btree ("question_id") WHERE question_id is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "inbox_items_approval_id_idx" ON "inbox_items" USING btree ("approval_id") WHERE approval_id is not null;--> statement-breakpoint
ALTER TABLE "inbox_items" ADD CONSTRAINT "inbox_items_type_check" CHECK (type in ('briefing', 'question', 'approval', 'alert'));--> statement-breakpoint
-- Live updates for what this migration adds: an approval's state shows in the inbox, the
-- chat and the work log; a notification's delivery shows in the team's delivery log.
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
  ELSIF TG_TABLE_NAME = 'approvals' THEN
    payload := payload || jsonb_build_object('agentId', NEW.agent_id, 'teamId', NEW.team_id, 'status', NEW.status);
  ELSIF TG_TABLE_NAME = 'notifications' THEN
    payload := payload || jsonb_build_object('teamId', NEW.team_id, 'status', NEW.status);
  ELSIF TG_TABLE_NAME = 'teams' THEN
    payload := payload || jsonb_build_object('teamId', NEW.id);
  END IF;
  PERFORM pg_notify('cadre_events', payload::text);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER approvals_notify AFTER INSERT OR UPDATE OF status, resolved_at ON approvals
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
--> statement-breakpoint
CREATE TRIGGER notifications_notify AFTER INSERT OR UPDATE OF status, attempts ON notifications
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
