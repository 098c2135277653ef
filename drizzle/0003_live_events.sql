-- Live updates for open pages: every change a page shows is announced on the channel
-- `cadre_events` (delivered at commit). The web process LISTENs once and fans the events
-- out to browsers over server-sent events, so the engine needs no code for it.
-- Payloads stay small (ids only); pages refetch what changed.
CREATE FUNCTION cadre_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  payload jsonb;
BEGIN
  payload := jsonb_build_object('table', TG_TABLE_NAME, 'op', lower(TG_OP), 'id', NEW.id);
  IF TG_TABLE_NAME = 'messages' THEN
    payload := payload || (
      SELECT jsonb_build_object('conversationId', c.id, 'agentId', c.agent_id, 'mode', c.mode, 'role', NEW.role)
      FROM conversations c WHERE c.id = NEW.conversation_id
    );
  ELSIF TG_TABLE_NAME = 'inbox_items' THEN
    payload := payload || jsonb_build_object('agentId', NEW.agent_id, 'teamId', NEW.team_id);
  ELSIF TG_TABLE_NAME = 'tasks' THEN
    payload := payload || jsonb_build_object('agentId', NEW.agent_id, 'status', NEW.status);
  ELSIF TG_TABLE_NAME = 'work_sessions' THEN
    payload := payload || jsonb_build_object('agentId', NEW.agent_id, 'status', NEW.status);
  ELSIF TG_TABLE_NAME = 'knowledge_items' THEN
    payload := payload || jsonb_build_object('agentId', NEW.agent_id);
  ELSIF TG_TABLE_NAME = 'agents' THEN
    payload := payload || jsonb_build_object('agentId', NEW.id, 'teamId', NEW.team_id);
  ELSIF TG_TABLE_NAME = 'teams' THEN
    payload := payload || jsonb_build_object('teamId', NEW.id);
  END IF;
  PERFORM pg_notify('cadre_events', payload::text);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE FUNCTION cadre_notify_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('cadre_events', jsonb_build_object('table', TG_TABLE_NAME, 'op', 'delete', 'id', OLD.id)::text);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER messages_notify AFTER INSERT ON messages
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
--> statement-breakpoint
CREATE TRIGGER inbox_items_notify AFTER INSERT OR UPDATE ON inbox_items
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
--> statement-breakpoint
CREATE TRIGGER tasks_notify AFTER INSERT OR UPDATE OF status, result ON tasks
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
--> statement-breakpoint
-- Not on every heartbeat: only when a session starts, advances a step or ends.
CREATE TRIGGER work_sessions_notify AFTER INSERT OR UPDATE OF status, steps, stop_requested_at ON work_sessions
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
--> statement-breakpoint
CREATE TRIGGER knowledge_items_notify AFTER INSERT ON knowledge_items
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
--> statement-breakpoint
CREATE TRIGGER knowledge_items_notify_delete AFTER DELETE ON knowledge_items
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_delete();
--> statement-breakpoint
CREATE TRIGGER agents_notify AFTER INSERT OR UPDATE OF name, instructions, model, schedule ON agents
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
--> statement-breakpoint
CREATE TRIGGER agents_notify_delete AFTER DELETE ON agents
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_delete();
--> statement-breakpoint
CREATE TRIGGER teams_notify AFTER INSERT OR UPDATE OF name, mission, status ON teams
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_change();
--> statement-breakpoint
CREATE TRIGGER teams_notify_delete AFTER DELETE ON teams
  FOR EACH ROW EXECUTE FUNCTION cadre_notify_delete();
