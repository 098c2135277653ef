-- The chain is only ever appended to. Moving a message to another conversation or
-- re-pointing its predecessor could close a cycle the unique constraints cannot see.
CREATE FUNCTION messages_chain_is_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.previous_message_id IS DISTINCT FROM OLD.previous_message_id
     OR NEW.conversation_id IS DISTINCT FROM OLD.conversation_id THEN
    RAISE EXCEPTION 'messages are append-only: previous_message_id and conversation_id cannot change'
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER messages_chain_is_immutable BEFORE UPDATE ON messages
  FOR EACH ROW EXECUTE FUNCTION messages_chain_is_immutable();
