import { sql } from "drizzle-orm";
import { fromDrizzle, PgBoss, type Job } from "pg-boss";
import type { Db } from "@/lib/db/client";
import {
  AGENT_WAKE_QUEUE,
  CHAT_RESUME_QUEUE,
  LEAD_SCHEDULE_QUEUE,
  type AgentWakePayload,
  type ChatResumePayload,
  type LeadSchedulePayload,
} from "./queues";

export type JobQueueRole = "web" | "worker";

/**
 * Cadre's one handle on pg-boss: wake an agent, schedule a lead, work the queues.
 *
 * A wake-up is two things written in the caller's transaction: the agent's
 * `wake_requested_at` (the truth a session checks before it ends) and a pg-boss job
 * (the nudge that gets a worker to look, at once, through LISTEN/NOTIFY). Extra jobs
 * are harmless: a worker that finds the agent busy leaves the flag for the session.
 */
export class JobQueue {
  readonly boss: PgBoss;

  private constructor(boss: PgBoss) {
    this.boss = boss;
  }

  static async start(connectionString: string, role: JobQueueRole, options: { quiet?: boolean } = {}): Promise<JobQueue> {
    const boss = new PgBoss({
      connectionString,
      schema: "pgboss",
      useListenNotify: true,
      max: role === "worker" ? 6 : 3,
      // Cron and maintenance belong to workers; the web process only sends.
      schedule: role === "worker",
      supervise: role === "worker",
      superviseIntervalSeconds: 5,
      monitorIntervalSeconds: 5,
      cronMonitorIntervalSeconds: 5,
    });
    const holder: { queue?: JobQueue } = {};
    boss.on("error", (error) => {
      // While stopping, a closing database (Ctrl-C reaches Postgres too) is expected, not news.
      if (!options.quiet && !holder.queue?.stopping) console.error(`[jobs] pg-boss (${role}):`, error.message);
    });
    await boss.start();
    await ensureQueues(boss);
    holder.queue = new JobQueue(boss);
    return holder.queue;
  }

  /** Gives the agent a reason to run, in the caller's transaction (or on its own). */
  async wakeAgent(db: Db, agentId: string): Promise<void> {
    await db.execute(sql`update agents set wake_requested_at = clock_timestamp() where id = ${agentId}`);
    await this.boss.send(AGENT_WAKE_QUEUE, { agentId } satisfies AgentWakePayload, {
      db: fromDrizzle(db, sql),
      // At most one queued nudge per agent: more would find nothing new to do.
      singletonKey: agentId,
    });
  }

  /** A nudge without the flag: used to retake the work of a dead or stopped worker. */
  async nudgeAgent(agentId: string, options: { startAfterSeconds?: number } = {}): Promise<void> {
    await this.boss.send(AGENT_WAKE_QUEUE, { agentId } satisfies AgentWakePayload, {
      singletonKey: agentId,
      startAfter: options.startAfterSeconds,
    });
  }

  /** The chat with this agent has a decision to carry out, in the caller's transaction: a worker resumes the reply. */
  async resumeChat(db: Db, agentId: string): Promise<void> {
    await this.boss.send(CHAT_RESUME_QUEUE, { agentId } satisfies ChatResumePayload, {
      db: fromDrizzle(db, sql),
      // One queued resume per chat: it carries out every decision there is when it runs.
      singletonKey: agentId,
    });
  }

  async workChatResumes(handler: (job: Job<ChatResumePayload>) => Promise<void>): Promise<void> {
    await this.boss.work<ChatResumePayload>(CHAT_RESUME_QUEUE, { batchSize: 1, localConcurrency: 2, pollingIntervalSeconds: 2 }, async ([job]) => {
      if (job) await handler(job);
    });
  }

  async scheduleLead(agentId: string, cron: string): Promise<void> {
    // LEAD_SCHEDULE=off (or an agent's schedule "off") turns proactive runs off.
    if (cron.trim().toLowerCase() === "off") return this.unscheduleLead(agentId);
    await this.boss.schedule(LEAD_SCHEDULE_QUEUE, cron, { agentId } satisfies LeadSchedulePayload, { key: agentId });
  }

  async unscheduleLead(agentId: string): Promise<void> {
    await this.boss.unschedule(LEAD_SCHEDULE_QUEUE, agentId);
  }

  async workAgentWakes(concurrency: number, handler: (job: Job<AgentWakePayload>) => Promise<void>): Promise<void> {
    await this.boss.work<AgentWakePayload>(
      AGENT_WAKE_QUEUE,
      { batchSize: 1, localConcurrency: concurrency, pollingIntervalSeconds: 2, notifyPollingIntervalSeconds: 2 },
      async ([job]) => {
        if (job) await handler(job);
      },
    );
  }

  async workLeadSchedules(handler: (job: Job<LeadSchedulePayload>) => Promise<void>): Promise<void> {
    await this.boss.work<LeadSchedulePayload>(LEAD_SCHEDULE_QUEUE, { batchSize: 1 }, async ([job]) => {
      if (job) await handler(job);
    });
  }

  private stopping = false;

  async stop(options: { graceful?: boolean; timeoutMs?: number } = {}): Promise<void> {
    this.stopping = true;
    await this.boss.stop({ graceful: options.graceful ?? true, timeout: options.timeoutMs ?? 30_000 });
  }
}

async function ensureQueues(boss: PgBoss): Promise<void> {
  await boss.createQueue(AGENT_WAKE_QUEUE, {
    // "short": one queued job per agent key, any number active; the session lease in
    // work_sessions, not pg-boss, guarantees one session per agent.
    policy: "short",
    notify: true,
    retryLimit: 5,
    retryDelay: 2,
    retryBackoff: true,
    retryDelayMax: 60,
    // A wake handler runs a whole session; the worker heartbeats the session itself.
    expireInSeconds: 60 * 60 * 4,
    heartbeatSeconds: 15,
  });
  await boss.createQueue(LEAD_SCHEDULE_QUEUE, { policy: "short", notify: true, retryLimit: 2, retryDelay: 5 });
  await boss.createQueue(CHAT_RESUME_QUEUE, {
    // "stately" by agent: one resume of a chat at a time, and one queued behind it for a decision made meanwhile.
    policy: "stately",
    notify: true,
    retryLimit: 5,
    retryDelay: 2,
    retryBackoff: true,
    retryDelayMax: 60,
    expireInSeconds: 60 * 30,
    heartbeatSeconds: 15,
  });
}
