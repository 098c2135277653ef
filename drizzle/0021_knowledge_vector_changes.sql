CREATE TABLE "knowledge_vector_changes" (
	"agent_id" uuid NOT NULL,
	"embedding_model" text NOT NULL,
	"embedding_dimensions" integer NOT NULL,
	"added" bigint DEFAULT 0 NOT NULL,
	"removed" bigint DEFAULT 0 NOT NULL,
	"written_by" bigint DEFAULT pg_current_xact_id()::text::bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "knowledge_vector_changes" ADD CONSTRAINT "knowledge_vector_changes_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "knowledge_vector_changes_agent_idx" ON "knowledge_vector_changes" USING btree ("agent_id","embedding_model","embedding_dimensions");--> statement-breakpoint
CREATE INDEX "knowledge_items_agent_embedded_idx" ON "knowledge_items" USING btree ("agent_id","embedded_at") WHERE embedding is not null;--> statement-breakpoint
-- Counting what changes the vectors a process may keep in memory (domain/knowledge-vectors.ts):
-- per statement, per agent and vector space, how many vectors came (an insert with one, an
-- update that sets one) and went (a delete, an edit that drops one, a vector replaced or moved
-- to another model or length, another type or owning agent: a kept copy is wrong then). One row
-- inserted per statement and key, never updated: a save waits on no other save for it. An agent
-- being deleted (its items go by cascade) is not counted: its rows go with it. Writes with
-- triggers off (session_replication_role = replica) must not touch vectors: nobody would know.
CREATE FUNCTION cadre_count_vector_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO knowledge_vector_changes (agent_id, embedding_model, embedding_dimensions, added)
    SELECT n.agent_id, n.embedding_model, n.embedding_dimensions, count(*)
      FROM new_rows n
     WHERE n.embedding IS NOT NULL
     GROUP BY 1, 2, 3;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO knowledge_vector_changes (agent_id, embedding_model, embedding_dimensions, removed)
    SELECT o.agent_id, o.embedding_model, o.embedding_dimensions, count(*)
      FROM old_rows o
     WHERE o.embedding IS NOT NULL AND EXISTS (SELECT 1 FROM agents a WHERE a.id = o.agent_id)
     GROUP BY 1, 2, 3;
  ELSE
    WITH changed AS (
      SELECT o.agent_id AS old_agent, o.embedding_model AS old_model, o.embedding_dimensions AS old_dimensions,
             o.embedding IS NOT NULL AS had,
             n.agent_id AS new_agent, n.embedding_model AS new_model, n.embedding_dimensions AS new_dimensions,
             n.embedding IS NOT NULL AS has
        FROM old_rows o JOIN new_rows n ON n.id = o.id
       WHERE (o.embedding IS NOT NULL OR n.embedding IS NOT NULL)
         AND (o.agent_id <> n.agent_id OR o.type <> n.type
              OR o.embedding IS DISTINCT FROM n.embedding
              OR o.embedding_model IS DISTINCT FROM n.embedding_model
              OR o.embedding_dimensions IS DISTINCT FROM n.embedding_dimensions)
    ), counted AS (
      SELECT old_agent AS agent_id, old_model AS model, old_dimensions AS dimensions, 0 AS added, 1 AS removed
        FROM changed WHERE had
      UNION ALL
      SELECT new_agent, new_model, new_dimensions, 1, 0 FROM changed WHERE has
    )
    INSERT INTO knowledge_vector_changes (agent_id, embedding_model, embedding_dimensions, added, removed)
    SELECT c.agent_id, c.model, c.dimensions, sum(c.added), sum(c.removed)
      FROM counted c
     WHERE EXISTS (SELECT 1 FROM agents a WHERE a.id = c.agent_id)
     GROUP BY 1, 2, 3;
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER knowledge_items_count_vectors_insert AFTER INSERT ON knowledge_items
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cadre_count_vector_changes();
--> statement-breakpoint
CREATE TRIGGER knowledge_items_count_vectors_update AFTER UPDATE ON knowledge_items
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cadre_count_vector_changes();
--> statement-breakpoint
CREATE TRIGGER knowledge_items_count_vectors_delete AFTER DELETE ON knowledge_items
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION cadre_count_vector_changes();
--> statement-breakpoint
-- The vectors stored before the triggers, counted once (the triggers' lock holds writers off meanwhile).
INSERT INTO knowledge_vector_changes (agent_id, embedding_model, embedding_dimensions, added)
SELECT agent_id, embedding_model, embedding_dimensions, count(*)
  FROM knowledge_items
 WHERE embedding IS NOT NULL
 GROUP BY 1, 2, 3;
