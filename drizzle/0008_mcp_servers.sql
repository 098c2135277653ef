CREATE TABLE "mcp_servers" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"team_id" uuid NOT NULL,
	"name" text NOT NULL,
	"transport" text NOT NULL,
	"url" text,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"command" text,
	"args" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"env" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"call_timeout_ms" integer DEFAULT 30000 NOT NULL,
	"tools" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"last_connected_at" timestamp with time zone,
	"last_error" text,
	"last_error_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "mcp_servers_transport_check" CHECK (transport in ('http', 'stdio')),
	CONSTRAINT "mcp_servers_target_check" CHECK ((transport = 'http' and url is not null) or (transport = 'stdio' and command is not null)),
	CONSTRAINT "mcp_servers_name_check" CHECK (name ~ '^[A-Za-z0-9_-]{1,40}$')
);
--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "tool_scope" jsonb;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD CONSTRAINT "mcp_servers_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_servers_team_name_idx" ON "mcp_servers" USING btree ("team_id","name");
--> statement-breakpoint
-- Live updates: a server's state (connected, its tools, its last error) as a worker or the
-- web process finds it shows on the team page without a reload.
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
  ELSIF TG_TABLE_NAME = 'mcp_servers' THEN
    payload := payload || jsonb_build_object('teamId', NEW.team_id);
  ELSIF TG_TABLE_NAME = 'teams' THEN
    payload := payload || jsonb_build_object('teamId', NEW.id);
  END IF;
  PERFORM pg_notify('cadre_events', payload::text);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER mcp_servers_notify AFTER INSERT OR UPDATE OF tools, last_error, last_connected_at, enabled, name ON mcp_servers
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
