CREATE TABLE "model_profiles" (
	"model" text NOT NULL,
	"base_url" text NOT NULL,
	"calls_named_tool" boolean,
	"calls_tool_when_required" boolean,
	"respects_no_tools" boolean,
	"parallel_tool_calls" boolean,
	"accepts_consecutive_roles" boolean,
	"reports_usage" boolean,
	"reports_cached_tokens" boolean,
	"context_tokens" integer,
	"problem" text,
	"checked_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "model_profiles_pkey" PRIMARY KEY("model","base_url"),
	CONSTRAINT "model_profiles_context_tokens_check" CHECK (context_tokens is null or context_tokens > 0)
);
--> statement-breakpoint
ALTER TABLE "usage" DROP CONSTRAINT "usage_purpose_check";--> statement-breakpoint
ALTER TABLE "usage" ADD CONSTRAINT "usage_purpose_check" CHECK (purpose in ('chat', 'work', 'compaction', 'extraction', 'briefing', 'title', 'draft', 'embedding', 'model_check'));