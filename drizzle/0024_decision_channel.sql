CREATE TABLE "server_keys" (
	"name" text PRIMARY KEY NOT NULL,
	"key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "decided_via" text;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "decided_by" text;--> statement-breakpoint
ALTER TABLE "questions" ADD COLUMN "answered_via" text;--> statement-breakpoint
ALTER TABLE "approvals" ADD CONSTRAINT "approvals_decided_via_check" CHECK (decided_via in ('app', 'email', 'webhook', 'slack'));--> statement-breakpoint
ALTER TABLE "questions" ADD CONSTRAINT "questions_answered_via_check" CHECK (answered_via in ('app', 'email', 'webhook', 'slack'));