// Watching the database for the engine model-check: when a scenario's team is quiet, and
// task changes as they commit (for actions that wait for "J3 is pending").
import { sql } from "drizzle-orm";
import type { Database, Db } from "@/lib/db/client";

type Waiter = {
  agentIds: string[];
  /** Idle and unchanged since then; null while busy. */
  since: number | null;
  fingerprint: string;
  lastChange: number;
  stallMs: number;
  deadline: number;
  resolve: (quiet: boolean) => void;
};

/**
 * Tells each waiting scenario when its agents are quiet: no running session, no queued
 * or live wake-up job, and nothing changed in its team between two looks `stableMs`
 * apart. One look (two queries, by index) serves every scenario in flight.
 */
export class QuietMonitor {
  private readonly waiting = new Map<string, Waiter>();
  private timer: NodeJS.Timeout | null = null;
  private looking = false;
  /** Looks taken and the milliseconds they took, for the run's figures. */
  readonly stats = { looks: 0, ms: 0 };

  constructor(
    private readonly db: Db,
    private readonly stableMs: number,
    /** Active jobs of dead workers (see WorkerPool.deadJobs): ignored unless their agent has work waiting. */
    private readonly deadJobs: ReadonlySet<string> = new Set(),
  ) {}

  /**
   * Resolves true once the team is quiet; false when it is busy but nothing in it has
   * changed for `stallMs` (stuck), or it is still busy after `maxMs` (never ends). A
   * slow machine only makes a scenario take longer.
   */
  wait(teamId: string, agentIds: string[], limits: { stallMs: number; maxMs: number }): Promise<boolean> {
    return new Promise((resolve) => {
      const now = Date.now();
      this.waiting.set(teamId, {
        agentIds,
        since: null,
        fingerprint: "",
        lastChange: now,
        stallMs: limits.stallMs,
        deadline: now + limits.maxMs,
        resolve,
      });
      this.timer ??= setInterval(() => void this.look(), Math.max(50, Math.floor(this.stableMs / 2)));
    });
  }

  private async look(): Promise<void> {
    if (this.looking || this.waiting.size === 0) return;
    this.looking = true;
    const started = Date.now();
    try {
      const teamIds = [...this.waiting.keys()];
      const agentIds = [...this.waiting.values()].flatMap((w) => w.agentIds);
      const busyRows = await this.db.execute<{ agent_id: string; job_id: string | null; has_work: boolean }>(sql`
        select agent_id::text, null as job_id, true as has_work from work_sessions where status = 'running' and agent_id = any(${sqlArray(agentIds)}::uuid[])
        union all
        select j.singleton_key, case when j.state = 'active' then j.id::text end,
               exists (select 1 from agents a where a.id = j.singleton_key::uuid and a.wake_requested_at is not null)
               or exists (select 1 from tasks t where t.agent_id = j.singleton_key::uuid and t.status in ('pending', 'in_progress'))
               or exists (select 1 from agent_inputs i where i.agent_id = j.singleton_key::uuid)
               or exists (select 1 from conversations c join messages m on m.id = c.last_message_id
                           where c.agent_id = j.singleton_key::uuid and c.mode = 'background'
                             and (m.role in ('user', 'tool', 'summary') or m.tool_calls is not null))
          from pgboss.job j
         where j.name = 'agent-wake' and j.state in ('created', 'retry', 'active') and j.singleton_key = any(${sqlArray(agentIds)}::text[])`);
      // A dead worker's job counts only while its agent has work waiting (a task, input, a
      // wake-up, a log awaiting a reply): pg-boss will retry it, and that may be the only way
      // back (say a reaper's nudge whose worker died before it claimed the session).
      const busy = new Set(
        busyRows
          .filter((row) => !row.job_id || !this.deadJobs.has(row.job_id) || row.has_work)
          .map((row) => row.agent_id),
      );
      // What changed in a team: each agent's log tails, tasks, queued input and wake-up flag.
      const prints = await this.db.execute<{ team_id: string; print: string }>(sql`
        select a.team_id::text,
               string_agg(
                 coalesce(a.wake_requested_at::text, '-')
                 || '|' || coalesce((select string_agg(coalesce(c.last_message_id::text, '-'), ',') from conversations c where c.agent_id = a.id), '')
                 || '|' || (select count(*) || '@' || coalesce(max(t.updated_at)::text, '') from tasks t where t.agent_id = a.id)
                 || '|' || (select count(*) from agent_inputs i where i.agent_id = a.id),
                 ';' order by a.id) as print
          from agents a where a.team_id = any(${sqlArray(teamIds)}::uuid[])
         group by a.team_id`);
      const fingerprints = new Map(prints.map((row) => [row.team_id, row.print]));
      const now = Date.now();
      for (const [teamId, waiter] of this.waiting) {
        const busyHere = waiter.agentIds.filter((id) => busy.has(id)).join(",");
        const fingerprint = `${fingerprints.get(teamId) ?? "gone"}|${busyHere}`;
        if (fingerprint !== waiter.fingerprint) {
          waiter.lastChange = now;
          waiter.fingerprint = fingerprint;
          waiter.since = busyHere === "" ? now : null;
        } else if (busyHere === "" && waiter.since !== null && now - waiter.since >= this.stableMs) {
          this.waiting.delete(teamId);
          waiter.resolve(true);
          continue;
        }
        if (now > waiter.deadline || now - waiter.lastChange > waiter.stallMs) {
          this.waiting.delete(teamId);
          waiter.resolve(false);
        }
      }
    } catch (error) {
      console.error("[engine model-check] quiet monitor:", error);
    } finally {
      this.looking = false;
      this.stats.looks += 1;
      this.stats.ms += Date.now() - started;
      if (this.waiting.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = null;
      }
    }
  }

  /** Why a team is not quiet, for a "stalled" violation. */
  async describeBusy(agentIds: string[]): Promise<string> {
    const rows = await this.db.execute<{ what: string }>(sql`
      select 'session of ' || a.name || ' on ' || s.worker || ' running ' || round(extract(epoch from now() - s.started_at)) || ' s, '
             || s.steps || ' steps, heartbeat ' || round(extract(epoch from now() - s.heartbeat_at)) || ' s ago'
             || case when s.stop_requested_at is not null then ', stop requested' else '' end as what
        from work_sessions s join agents a on a.id = s.agent_id
       where s.status = 'running' and s.agent_id = any(${sqlArray(agentIds)}::uuid[])
      union all
      select 'job ' || j.state || ' for ' || coalesce(a.name, j.singleton_key) || ' started ' || coalesce(round(extract(epoch from now() - j.started_on)) || ' s ago', '-')
             || ', start_after in ' || round(extract(epoch from j.start_after - now())) || ' s' || case when j.retry_count > 0 then ', retry ' || j.retry_count else '' end
        from pgboss.job j left join agents a on a.id::text = j.singleton_key
       where j.name = 'agent-wake' and j.singleton_key = any(${sqlArray(agentIds)}::text[]) and j.state in ('created', 'retry', 'active')`);
    return rows.map((row) => row.what).join("; ") || "(changing)";
  }
}

type TaskEvent = { table: string; id: string; agentId?: string; status?: string };

/**
 * Task changes as they commit, from the app's own live-event channel (`cadre_events`,
 * drizzle/0003): an action waiting for "J3 is pending" fires the moment the delegation
 * commits — before the subordinate's session starts, most of the time — without polling.
 */
export class TaskEvents {
  private readonly waiters = new Map<string, Set<(event: TaskEvent) => void>>();

  static async start(sql: Database["sql"]): Promise<{ events: TaskEvents; stop: () => Promise<void> }> {
    const events = new TaskEvents();
    const listener = await sql.listen("cadre_events", (payload) => {
      // Most events are messages; only task changes are read.
      if (!payload.includes('"tasks"')) return;
      const event = JSON.parse(payload) as TaskEvent;
      if (event.table !== "tasks" || !event.agentId) return;
      for (const waiter of events.waiters.get(event.agentId) ?? []) waiter(event);
    });
    return { events, stop: () => listener.unlisten() };
  }

  /** Calls `onEvent` for task changes of these agents until the returned function is called. */
  watch(agentIds: string[], onEvent: (event: TaskEvent) => void): () => void {
    for (const id of agentIds) {
      const set = this.waiters.get(id) ?? new Set();
      set.add(onEvent);
      this.waiters.set(id, set);
    }
    return () => {
      for (const id of agentIds) {
        this.waiters.get(id)?.delete(onEvent);
        if (this.waiters.get(id)?.size === 0) this.waiters.delete(id);
      }
    };
  }
}

/** A JS array as one Postgres array parameter (postgres-js would otherwise spread it). */
function sqlArray(values: string[]): string {
  return `{${values.map((value) => `"${value}"`).join(",")}}`;
}
