CREATE TABLE "knowledge_sources" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"knowledge_item_id" uuid NOT NULL,
	"agent_id" uuid NOT NULL,
	"conversation_id" uuid,
	"message_id" uuid,
	"url" text,
	"created_at" timestamp with time zone DEFAULT clock_timestamp() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "knowledge_sources" ADD CONSTRAINT "knowledge_sources_knowledge_item_id_knowledge_items_id_fk" FOREIGN KEY ("knowledge_item_id") REFERENCES "public"."knowledge_items"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_sources" ADD CONSTRAINT "knowledge_sources_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_sources" ADD CONSTRAINT "knowledge_sources_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_sources" ADD CONSTRAINT "knowledge_sources_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "knowledge_sources_item_idx" ON "knowledge_sources" USING btree ("knowledge_item_id","created_at");--> statement-breakpoint
CREATE INDEX "knowledge_sources_agent_idx" ON "knowledge_sources" USING btree ("agent_id");--> statement-breakpoint
CREATE INDEX "knowledge_sources_conversation_idx" ON "knowledge_sources" USING btree ("conversation_id") WHERE conversation_id is not null;--> statement-breakpoint
CREATE INDEX "knowledge_sources_message_idx" ON "knowledge_sources" USING btree ("message_id") WHERE message_id is not null;--> statement-breakpoint
-- Backfill: an item stored without a source URL whose text names one (http(s)) gets it, as new items do.
UPDATE "knowledge_items" k SET "source_url" = named."url"
  FROM (SELECT "id",
               regexp_replace(regexp_replace(regexp_replace(substring("content" from '(?i)https?://[^[:space:]<>"''`]+'), '[.,;:!?]+$', ''), '^([^(]*)[)\]}]+$', '\1'), '[.,;:!?]+$', '') AS "url"
          FROM "knowledge_items"
         WHERE "source_url" IS NULL AND "content" ~* 'https?://') named
 WHERE k."id" = named."id" AND named."url" ~* '^https?://[^/?#[:space:]]+';
--> statement-breakpoint
-- Backfill: every item stored before sources existed has one, its own agent's, at the message
-- that saved it when one of its conversation's addKnowledgeItem calls holds its exact text.
-- Duplicates stored before are left as they are (see CLAUDE.md, Knowledge): they are merged
-- from now on, as agents report them again.
INSERT INTO "knowledge_sources" ("knowledge_item_id", "agent_id", "conversation_id", "message_id", "url", "created_at")
SELECT k."id", k."agent_id", k."source_conversation_id",
       (SELECT m."id" FROM "messages" m
         WHERE m."conversation_id" = k."source_conversation_id" AND m."role" = 'assistant'
           AND m."tool_calls" @> jsonb_build_array(jsonb_build_object('toolName', 'addKnowledgeItem', 'args', jsonb_build_object('content', k."content")))
         ORDER BY m."created_at" LIMIT 1),
       k."source_url", k."created_at"
  FROM "knowledge_items" k;
