import { z } from "zod";

/**
 * The queues and their payloads. Only src/lib/jobs knows pg-boss; everything else
 * calls the helpers in job-queue.ts.
 */
export const AGENT_WAKE_QUEUE = "agent-wake";
export const LEAD_SCHEDULE_QUEUE = "lead-schedule";
/** A decision on a call made in the chat: the worker carries it out and the reply goes on. */
export const CHAT_RESUME_QUEUE = "chat-resume";

export const agentWakePayload = z.object({ agentId: z.uuid() });
export type AgentWakePayload = z.infer<typeof agentWakePayload>;

export const leadSchedulePayload = z.object({ agentId: z.uuid() });
export type LeadSchedulePayload = z.infer<typeof leadSchedulePayload>;

export const chatResumePayload = z.object({ agentId: z.uuid() });
export type ChatResumePayload = z.infer<typeof chatResumePayload>;

/** Postgres NOTIFY channel a worker listens on to abort a session the person stopped. */
export const SESSION_STOP_CHANNEL = "cadre_session_stop";
