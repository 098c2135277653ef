import "server-only";
import { sql } from "drizzle-orm";
import { markWakeRequested } from "@/lib/db/queries/agents";
import { type Db, fromDrizzle, PgBoss, type Job, type JobWithMetadata, type Queue } from "pg-boss";
import { connectionTarget, sessionUrlFor, tlsForPg } from "@/lib/db/connection-target";
import type { Db as Database } from "@/lib/db/client";
import {
  AGENT_WAKE_QUEUE,
  CHAT_RESUME_QUEUE,
  KNOWLEDGE_EMBEDDING_QUEUE,
  LEAD_SCHEDULE_QUEUE,
  NOTIFICATION_GIVE_UP_QUEUE,
  NOTIFICATION_QUEUE,
  notificationPayload,
  type AgentWakePayload,
  type ChatResumePayload,
  type LeadSchedulePayload,
  type NotificationPayload,
} from "./queues";

export type JobQueueRole = "web" | "worker";

/** How often a fetcher polls a queue whose jobs normally arrive by NOTIFY (pg-boss's own default). */
const IDLE_POLL_SECONDS = 30;

/** NOTIFICATION_RETRY_DELAY_SECONDS's default: the first retry's delay, doubled on each after. */
const DEFAULT_NOTIFICATION_RETRY_DELAY_SECONDS = 2;

/** One attempt at delivering a notification, as its handler sees it (pg-boss's retry count kept here). */
export type NotificationAttempt = {
  notificationId: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** No retry follows this one if it fails. */
  lastAttempt: boolean;
  /** Aborted when this worker loses the job (stopping, or its claim lapsed). */
  signal: AbortSignal;
};

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

  private constructor(
    boss: PgBoss,
    private readonly notificationRetryDelaySeconds: number,
    private readonly listening: ListeningDb | null,
  ) {
    this.boss = boss;
  }

  static async start(
    connectionString: string,
    role: JobQueueRole,
    options: {
      quiet?: boolean;
      notificationRetryDelaySeconds?: number /** pg-boss's pool (connectionBudget().jobs); its LISTEN connection comes on top. */;
      poolSize?: number;
      /**
       * Where pg-boss LISTENs for its nudges: a URL that keeps its session (DATABASE_DIRECT_URL),
       * null for none (behind a transaction pooler without one: fetchers poll every 2 s).
       * Unset: `connectionString` itself, unless it goes through a transaction pooler.
       */
      listenUrl?: string | null;
    } = {},
  ): Promise<JobQueue> {
    const target = connectionTarget(connectionString);
    const listenUrl = options.listenUrl === undefined ? sessionUrlFor(connectionString) : options.listenUrl;
    const boss = new PgBoss({
      // pg sends unnamed statements only, so the pool itself is fine behind a transaction pooler.
      connectionString: target.url,
      ssl: tlsForPg(target.ssl),
      schema: "pgboss",
      useListenNotify: listenUrl !== null,
      max: options.poolSize ?? (role === "worker" ? 5 : 3),
      // Cron and maintenance belong to workers; the web process only sends.
      schedule: role === "worker",
      supervise: role === "worker",
      superviseIntervalSeconds: 5,
      monitorIntervalSeconds: 5,
      cronMonitorIntervalSeconds: 5,
    });
    const holder: { queue?: JobQueue } = {};
    const reportError = (error: Error) => {
      // While stopping, a closing database (Ctrl-C reaches Postgres too) is expected, not news.
      if (!options.quiet && !holder.queue?.stopping) console.error(`[jobs] pg-boss (${role}):`, error.message);
    };
    boss.on("error", reportError);
    const listening = listenUrl !== null && listenUrl !== connectionString ? listenElsewhere(boss, listenUrl) : null;
    listening?.on("error", reportError);
    try {
      await boss.start();
    } catch (error) {
      // A start refused half-way (the server full or restarting) must not leave its pool behind: the caller may try again.
      await boss.stop({ graceful: false, timeout: 1_000 }).catch(() => {});
      await listening?.close().catch(() => {});
      throw error;
    }
    // The caller reads the setting (env() is read once per process, and tests start queues before they set DATABASE_URL).
    const notificationRetryDelaySeconds =
      options.notificationRetryDelaySeconds ?? DEFAULT_NOTIFICATION_RETRY_DELAY_SECONDS;
    await ensureQueues(boss, { notificationRetryDelaySeconds });
    holder.queue = new JobQueue(boss, notificationRetryDelaySeconds, listening);
    return holder.queue;
  }

  /** Gives the agent a reason to run, in the caller's transaction (or on its own). */
  async wakeAgent(db: Database, agentId: string): Promise<void> {
    await markWakeRequested(db, agentId);
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
  async resumeChat(db: Database, agentId: string): Promise<void> {
    await this.boss.send(CHAT_RESUME_QUEUE, { agentId } satisfies ChatResumePayload, {
      db: fromDrizzle(db, sql),
      // One queued resume per chat: it carries out every decision there is when it runs.
      singletonKey: agentId,
    });
  }

  async workChatResumes(handler: (job: Job<ChatResumePayload>) => Promise<void>): Promise<void> {
    await this.boss.work<ChatResumePayload>(
      CHAT_RESUME_QUEUE,
      { batchSize: 1, localConcurrency: 2, pollingIntervalSeconds: 2 },
      async ([job]) => {
        if (job) await handler(job);
      },
    );
  }

  /**
   * Knowledge waits for its vector: a worker embeds what waits (knowledge-embedding.ts). In the
   * caller's transaction (the outbox: the item and its job commit together), or on its own (a
   * worker starting: the backfill). At most one queued: it embeds everything that waits when it runs.
   */
  async embedKnowledge(db?: Database): Promise<void> {
    await this.boss.send(KNOWLEDGE_EMBEDDING_QUEUE, {}, db ? { db: fromDrizzle(db, sql) } : {});
  }

  /** Embeds waiting knowledge, one job at a time across all workers; `signal` aborts when this worker loses the job. */
  async workKnowledgeEmbeddings(handler: (signal: AbortSignal) => Promise<void>): Promise<void> {
    await this.boss.work(KNOWLEDGE_EMBEDDING_QUEUE, { batchSize: 1, pollingIntervalSeconds: 2 }, async ([job]) => {
      if (job) await handler(job.signal);
    });
  }

  /** `timeZone`: the IANA zone the cron is read in (null: UTC), so "0 8 * * *" stays 08:00 across a DST change. */
  async scheduleLead(agentId: string, cron: string, timeZone: string | null = null): Promise<void> {
    // LEAD_SCHEDULE=off (or an agent's schedule "off") turns proactive runs off.
    if (cron.trim().toLowerCase() === "off") return this.unscheduleLead(agentId);
    await this.boss.schedule(LEAD_SCHEDULE_QUEUE, cron, { agentId } satisfies LeadSchedulePayload, {
      key: agentId,
      tz: timeZone ?? "UTC",
    });
  }

  async unscheduleLead(agentId: string): Promise<void> {
    await this.boss.unschedule(LEAD_SCHEDULE_QUEUE, agentId);
  }

  /**
   * `concurrency` sessions at once. While LISTEN/NOTIFY is up a nudge arrives at once, so
   * polling is only the backstop for jobs that appear without a NOTIFY (a retry after its
   * delay): every 30 s, not 2, which was most of an idle worker's load (8 fetchers × one
   * statement every 2 s). The backlog drain (runner.ts) covers the rest. A backlog (more
   * agents woken than this worker runs at once) drains at once: see `fetchers`.
   */
  async workAgentWakes(concurrency: number, handler: (job: Job<AgentWakePayload>) => Promise<void>): Promise<void> {
    await this.fetchers<AgentWakePayload>(
      AGENT_WAKE_QUEUE,
      concurrency,
      { pollingIntervalSeconds: 2, notifyPollingIntervalSeconds: IDLE_POLL_SECONDS },
      handler,
    );
  }

  /**
   * `count` pg-boss fetchers of one job each, each registered on its own so it knows its id:
   * after a job it asks for another at once (`notifyWorker`), and waits for a NOTIFY or its
   * poll only once a fetch came back empty. pg-boss alone re-fetches after a job only when a
   * NOTIFY came meanwhile (its burst modes need batches of more than one job, which would
   * make a long session hold up a short one), so a backlog queued in one go would drain at
   * `count` jobs per poll interval: 8 per 30 s, or with the old 2 s polling 4 sessions/s per worker.
   */
  private async fetchers<T extends object>(
    queue: string,
    count: number,
    polling: { pollingIntervalSeconds: number; notifyPollingIntervalSeconds: number },
    handler: (job: JobWithMetadata<T>) => Promise<void>,
  ): Promise<void> {
    const options = { batchSize: 1, localConcurrency: 1, includeMetadata: true, ...polling } as const;
    for (let i = 0; i < count; i++) {
      let fetcherId: string | undefined;
      fetcherId = await this.boss.work<T, unknown, typeof options>(queue, options, async ([job]) => {
        if (!job) return;
        try {
          await handler(job);
        } catch (error) {
          // The job is retried after its backoff, and nothing announces it when it falls due: a
          // fetcher polls a quiet queue only every IDLE_POLL_SECONDS. This one looks again once
          // the retry's latest start has passed, so a failed session resumes within its backoff.
          const due = retryDueSeconds(job);
          if (due !== null && fetcherId) {
            const id = fetcherId;
            setTimeout(() => !this.stopping && this.boss.notifyWorker(id), (due + 1) * 1000).unref();
          }
          throw error;
        } finally {
          if (fetcherId && !this.stopping) this.boss.notifyWorker(fetcherId);
        }
      });
    }
  }

  async workLeadSchedules(handler: (job: Job<LeadSchedulePayload>) => Promise<void>): Promise<void> {
    await this.boss.work<LeadSchedulePayload>(LEAD_SCHEDULE_QUEUE, { batchSize: 1 }, async ([job]) => {
      if (job) await handler(job);
    });
  }

  /**
   * Queues the delivery of a notification in the caller's transaction: the row and its job
   * commit together or not at all. The job's id is the notification's, so sending it twice
   * queues it once.
   */
  async sendNotification(db: Database, notificationId: string): Promise<void> {
    await this.boss.send(NOTIFICATION_QUEUE, { notificationId } satisfies NotificationPayload, {
      db: fromDrizzle(db, sql),
      id: notificationId,
    });
  }

  /**
   * Delivers notifications: `deliver` throws to have the attempt retried (with backoff, see
   * ensureQueues); `giveUp` hears of each delivery pg-boss stopped retrying, also when its
   * last attempt ended with a dead worker rather than an error.
   */
  async workNotifications(
    deliver: (attempt: NotificationAttempt) => Promise<void>,
    giveUp: (notificationId: string) => Promise<void>,
  ): Promise<void> {
    await this.fetchers<NotificationPayload>(
      NOTIFICATION_QUEUE,
      4,
      {
        pollingIntervalSeconds: 2,
        // A retry has no NOTIFY: polling is what finds it. Every 10 s (a retry lands at most
        // that much after its delay), or every 2 s when the delay is shortened (tests).
        notifyPollingIntervalSeconds:
          this.notificationRetryDelaySeconds < DEFAULT_NOTIFICATION_RETRY_DELAY_SECONDS ? 2 : 10,
      },
      async (job) => {
        const { notificationId } = notificationPayload.parse(job.data);
        await deliver({
          notificationId,
          attempt: job.retryCount + 1,
          lastAttempt: job.retryCount >= job.retryLimit,
          signal: job.signal,
        });
      },
    );
    const giveUpPolling =
      this.notificationRetryDelaySeconds < DEFAULT_NOTIFICATION_RETRY_DELAY_SECONDS ? 5 : IDLE_POLL_SECONDS;
    await this.boss.work<NotificationPayload>(
      NOTIFICATION_GIVE_UP_QUEUE,
      { batchSize: 1, pollingIntervalSeconds: giveUpPolling },
      async ([job]) => {
        if (job) await giveUp(notificationPayload.parse(job.data).notificationId);
      },
    );
  }

  private stopping = false;

  async stop(options: { graceful?: boolean; timeoutMs?: number } = {}): Promise<void> {
    this.stopping = true;
    await this.boss.stop({ graceful: options.graceful ?? true, timeout: options.timeoutMs ?? 30_000 });
    await this.listening?.close().catch(() => {});
  }
}

type ListeningDb = {
  open(): Promise<void>;
  close(): Promise<void>;
  listen: NonNullable<Db["listen"]>;
  on(event: "error", listener: (error: Error) => void): unknown;
};

/**
 * pg-boss LISTENs on its own pool's settings, and the pool goes through DATABASE_URL; behind a
 * transaction pooler that LISTEN would be lost between transactions. Here its database handle
 * listens through a second handle of the same class on `listenUrl` (pg-boss's own reconnect
 * and heartbeat kept): only `listen` is replaced, every statement still goes through the pool.
 * tests/integration/pooler.test.ts fails if a pg-boss release stops honouring this.
 */
function listenElsewhere(boss: PgBoss, listenUrl: string): ListeningDb {
  const db = boss.getDb() as unknown as ListeningDb & { constructor: new (config: object) => ListeningDb };
  const target = connectionTarget(listenUrl);
  const listening = new db.constructor({
    connectionString: target.url,
    ssl: tlsForPg(target.ssl),
    application_name: "pgboss",
  });
  let opened: Promise<void> | undefined;
  db.listen = async (channel, onNotification, onReconnect) => {
    // open() makes a pool object and no connection: only the LISTEN client below connects.
    opened ??= listening.open();
    await opened;
    return listening.listen(channel, onNotification, onReconnect);
  };
  return listening;
}

/**
 * How a notification is retried: 9 attempts over 8 to 14 minutes (2-4, 4-8, 8-16 … s apart, at
 * most 5 min), so a receiver that is down for a few minutes still gets it. A worker killed
 * mid-delivery stops sending heartbeats; after 10 s the supervisor fails the attempt and it is
 * retried like any other failure (never lost). The give-up queue hears of a delivery whose
 * last attempt failed either way.
 */
function notificationQueuePolicy(retryDelaySeconds: number) {
  return {
    retryLimit: 8,
    retryDelay: retryDelaySeconds,
    retryBackoff: true,
    retryDelayMax: Math.max(retryDelaySeconds, 300),
    // A webhook attempt takes at most 10 s and an email one about 30; the heartbeat notices a dead worker much sooner.
    expireInSeconds: 120,
    heartbeatSeconds: 10,
    deadLetter: NOTIFICATION_GIVE_UP_QUEUE,
  } satisfies Omit<Queue, "name">;
}

async function ensureQueues(boss: PgBoss, settings: { notificationRetryDelaySeconds: number }): Promise<void> {
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

  await boss.createQueue(KNOWLEDGE_EMBEDDING_QUEUE, {
    // "stately": one job working (two would embed the same items twice), one queued for items
    // saved meanwhile. A worker that dies mid-way stops its heartbeat; the supervisor fails the
    // job after 10 s and it is retried, taking up the items the dead worker had not stored.
    policy: "stately",
    notify: true,
    retryLimit: 10,
    retryDelay: 5,
    retryBackoff: true,
    retryDelayMax: 300,
    expireInSeconds: 60 * 60,
    heartbeatSeconds: 10,
  });

  // The give-up queue first: a queue's dead letter must exist when the queue names it.
  // No NOTIFY: pg-boss files dead letters without one, so its worker polls (every 30 s: marking a given-up delivery failed is not urgent).
  await boss.createQueue(NOTIFICATION_GIVE_UP_QUEUE, { policy: "standard", retryLimit: 5, retryDelay: 10 });
  const policy = notificationQueuePolicy(settings.notificationRetryDelaySeconds);
  await boss.createQueue(NOTIFICATION_QUEUE, { policy: "standard", notify: true, ...policy });
  // createQueue keeps an existing queue as it was: bring its retry policy up to date, so a
  // changed policy reaches installations whose queue was made by an older version.
  await boss.updateQueue(NOTIFICATION_QUEUE, policy);
}

/**
 * The latest a failed job's retry falls due, in seconds from its failure (pg-boss's backoff:
 * retryDelay × 2^n, up to twice that with its jitter, at most retryDelayMax); null when no
 * retry is left.
 */
function retryDueSeconds(job: JobWithMetadata<object>): number | null {
  if (job.retryCount >= job.retryLimit) return null;
  if (!job.retryBackoff) return job.retryDelay;
  const latest = Math.max(job.retryDelay, 1) * 2 ** Math.min(16, job.retryCount + 1);
  return job.retryDelayMax ? Math.min(job.retryDelayMax, latest) : latest;
}
