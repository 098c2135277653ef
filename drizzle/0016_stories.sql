ALTER TABLE "messages" ADD COLUMN "task_id" uuid;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "root_task_id" uuid;--> statement-breakpoint
ALTER TABLE "usage" ADD COLUMN "task_id" uuid;--> statement-breakpoint
ALTER TABLE "work_sessions" ADD COLUMN "task_id" uuid;--> statement-breakpoint
CREATE INDEX "inbox_items_task_idx" ON "inbox_items" USING btree ("task_id") WHERE task_id is not null;--> statement-breakpoint
CREATE INDEX "messages_task_created_idx" ON "messages" USING btree ("task_id","created_at","id") WHERE task_id is not null;--> statement-breakpoint
CREATE INDEX "tasks_agent_root_created_idx" ON "tasks" USING btree ("agent_id","created_at","id") WHERE parent_task_id is null;--> statement-breakpoint
CREATE INDEX "tasks_root_task_idx" ON "tasks" USING btree ("root_task_id");--> statement-breakpoint
CREATE INDEX "usage_task_idx" ON "usage" USING btree ("task_id") WHERE task_id is not null;--> statement-breakpoint
-- A task's story is the task at the top of its delegation tree: set at insert, from its parent.
CREATE FUNCTION cadre_task_root() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.root_task_id := coalesce((SELECT p.root_task_id FROM tasks p WHERE p.id = NEW.parent_task_id), NEW.id);
  RETURN NEW;
END $$;--> statement-breakpoint
CREATE TRIGGER tasks_root BEFORE INSERT ON "tasks" FOR EACH ROW EXECUTE FUNCTION cadre_task_root();--> statement-breakpoint
WITH RECURSIVE tree(id, root) AS (
  SELECT id, id FROM "tasks" WHERE parent_task_id IS NULL
  UNION ALL
  SELECT t.id, tree.root FROM "tasks" t JOIN tree ON t.parent_task_id = tree.id
)
UPDATE "tasks" t SET root_task_id = tree.root FROM tree WHERE t.id = tree.id;--> statement-breakpoint
-- Work logged before stories existed: each background message belongs to the task its agent
-- was working on when it was written (the one started last and not yet ended then).
UPDATE "messages" m SET "task_id" = (
  SELECT t.id FROM "tasks" t JOIN "conversations" c ON c.agent_id = t.agent_id
   WHERE c.id = m.conversation_id AND t.started_at <= m.created_at
     AND (t.completed_at IS NULL OR t.completed_at >= m.created_at - interval '1 second')
   ORDER BY t.started_at DESC LIMIT 1)
 WHERE m.conversation_id IN (SELECT id FROM "conversations" WHERE mode = 'background');
