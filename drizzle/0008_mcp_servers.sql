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