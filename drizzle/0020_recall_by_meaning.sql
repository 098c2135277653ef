ALTER TABLE "usage" DROP CONSTRAINT "usage_purpose_check";--> statement-breakpoint
ALTER TABLE "knowledge_items" ADD COLUMN "embedding" "bytea";--> statement-breakpoint
ALTER TABLE "knowledge_items" ADD COLUMN "embedding_model" text;--> statement-breakpoint
ALTER TABLE "knowledge_items" ADD COLUMN "embedding_dimensions" integer;--> statement-breakpoint
ALTER TABLE "knowledge_items" ADD COLUMN "embedded_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "knowledge_items_unembedded_idx" ON "knowledge_items" USING btree ("created_at","id") WHERE embedding is null;--> statement-breakpoint
CREATE INDEX "knowledge_items_created_idx" ON "knowledge_items" USING btree ("created_at");--> statement-breakpoint
ALTER TABLE "knowledge_items" ADD CONSTRAINT "knowledge_items_embedding_check" CHECK ((embedding is null and embedding_model is null and embedding_dimensions is null and embedded_at is null) or (embedding_model is not null and embedded_at is not null and embedding_dimensions > 0 and octet_length(embedding) = 4 * embedding_dimensions));--> statement-breakpoint
ALTER TABLE "usage" ADD CONSTRAINT "usage_purpose_check" CHECK (purpose in ('chat', 'work', 'compaction', 'extraction', 'briefing', 'title', 'draft', 'embedding'));