import type { Db } from "@/lib/db/client";
import type { Agent, Team } from "@/lib/db/schema";
import type { JobQueue } from "@/lib/jobs/job-queue";

export type SearchConfig = { tavilyApiKey?: string; tavilyBaseUrl?: string };

/**
 * What a tool knows about who is calling it. Tools authorize against this, never
 * against what the model claims: an agent acts only within its own team and role.
 */
export type ToolContext = {
  db: Db;
  jobs: JobQueue;
  agent: Agent;
  team: Team;
  /** The conversation the tool runs in: the agent's background one, or the foreground chat. */
  conversationId: string;
  search: SearchConfig;
  /** The tasks the agent is working on right now (in_progress), oldest first. */
  currentTaskIds: () => Promise<string[]>;
  /**
   * Runs a tool's writes in the transaction that records its result: a crash keeps
   * both or neither. Every tool that changes the database goes through it.
   */
  effect: <T>(toolCallId: string, write: (tx: Db) => Promise<T>) => Promise<T>;
};
