ALTER TABLE "agents" ADD COLUMN "schedule_time_zone" text;--> statement-breakpoint
ALTER TABLE "inbox_items" ADD COLUMN "archived_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "knowledge_items" ADD COLUMN "source_url" text;--> statement-breakpoint
ALTER TABLE "knowledge_items" ADD COLUMN "updated_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "inbox_items_active_created_idx" ON "inbox_items" USING btree ("created_at","id") WHERE archived_at is null;