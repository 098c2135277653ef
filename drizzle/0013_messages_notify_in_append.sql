-- A message's live-update NOTIFY is sent by the statement that appends it (appendOne in
-- queries/messages.ts, the only writer of messages), from the conversation row it already
-- holds, instead of by a row trigger that looked the conversation up again: on every tool
-- round's two appends, the trigger was a fifth of the statement's time in the database.
-- The payload is the same (table, op, id, conversationId, agentId, mode, role).
DROP TRIGGER IF EXISTS messages_notify ON messages;
