import "server-only";
import { z } from "zod";

/**
 * The queues and their payloads. Only src/lib/jobs knows pg-boss; everything else
 * calls the helpers in job-queue.ts.
 */
export const AGENT_WAKE_QUEUE = "agent-wake";
export const LEAD_SCHEDULE_QUEUE = "lead-schedule";
/** A decision on a call made in the chat: the worker carries it out and the reply goes on. */
export const CHAT_RESUME_QUEUE = "chat-resume";
/** One job per notification (the job's id is the notification's): deliver it to its channel. */
export const NOTIFICATION_QUEUE = "notification-delivery";
/** Where pg-boss puts a delivery it gave up on, however its last attempt ended (an error, or a worker that died). */
export const NOTIFICATION_GIVE_UP_QUEUE = "notification-give-up";

/**
 * Knowledge waits for its vector (saved without one, edited, or of another embedding model):
 * a worker embeds every item that waits, batch by batch. One job at a time, one queued behind it.
 */
export const KNOWLEDGE_EMBEDDING_QUEUE = "knowledge-embedding";

export const agentWakePayload = z.object({ agentId: z.uuid() });
export type AgentWakePayload = z.infer<typeof agentWakePayload>;

export const leadSchedulePayload = z.object({ agentId: z.uuid() });
export type LeadSchedulePayload = z.infer<typeof leadSchedulePayload>;

export const chatResumePayload = z.object({ agentId: z.uuid() });
export type ChatResumePayload = z.infer<typeof chatResumePayload>;

export const notificationPayload = z.object({ notificationId: z.uuid() });
export type NotificationPayload = z.infer<typeof notificationPayload>;

/** Postgres NOTIFY channel a worker listens on to abort a session the person stopped. */
export const SESSION_STOP_CHANNEL = "cadre_session_stop";
