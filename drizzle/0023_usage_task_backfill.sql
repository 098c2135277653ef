-- Usage rows written before stories (0016) name no task, so an old request's story showed no
-- tokens and no cost. A call made in a work session worked on what its log was about then: the
-- task of the log's latest message at the call (0016 filled the old messages' tasks by the
-- task their agent was on). A row of a turn about no task keeps none, as its messages do.
-- Data only; rows that name a task already, and calls outside a work session (chat, drafting),
-- are left as they are.
UPDATE "usage" u SET "task_id" = (
  SELECT m.task_id FROM "messages" m
   WHERE m.conversation_id = u.conversation_id AND m.created_at <= u.created_at
   ORDER BY m.created_at DESC, m.id DESC LIMIT 1)
 WHERE u.task_id IS NULL AND u.work_session_id IS NOT NULL AND u.conversation_id IS NOT NULL
   AND EXISTS (SELECT 1 FROM "work_sessions" s WHERE s.id = u.work_session_id);
