-- A work session's claim, in one round trip instead of six (begin, lock, look, retire,
-- clear the wake flag, insert, commit): a wake-up's latency is mostly the session's start.
-- Each statement of a plpgsql function sees what committed before it, as the transaction
-- it replaces did, so the semantics are the same: under the agent row's lock (the lock
-- finishSessionIfIdle takes), no session is started while another runs, a stale one (its
-- worker dead) is marked interrupted and taken over, and the wake flag is cleared because
-- the new session is about to look at all the agent's work. Returns no row when the agent
-- is gone or busy.
CREATE FUNCTION cadre_claim_session(p_agent_id uuid, p_worker text, p_stale_after_seconds double precision)
RETURNS SETOF work_sessions LANGUAGE plpgsql AS $$
DECLARE
  running_id uuid;
  running_stale boolean;
BEGIN
  PERFORM 1 FROM agents WHERE id = p_agent_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT id, heartbeat_at < now() - make_interval(secs => p_stale_after_seconds)
    INTO running_id, running_stale
    FROM work_sessions WHERE agent_id = p_agent_id AND status = 'running';
  IF running_id IS NOT NULL AND NOT running_stale THEN
    RETURN;
  END IF;
  IF running_id IS NOT NULL THEN
    UPDATE work_sessions
       SET status = 'interrupted', error = 'The worker running this session stopped responding.', ended_at = now()
     WHERE id = running_id;
  END IF;
  UPDATE agents SET wake_requested_at = NULL WHERE id = p_agent_id;
  RETURN QUERY INSERT INTO work_sessions (agent_id, worker) VALUES (p_agent_id, p_worker) RETURNING *;
END;
$$;
