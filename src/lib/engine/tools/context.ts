import "server-only";
import type { Db } from "@/lib/db/client";
import type { Agent, Team } from "@/lib/db/schema";
import type { JobQueue } from "@/lib/jobs/job-queue";
import type { SearchConfig } from "@/lib/core/engine-config";
import type { EmbeddingChoice } from "@/lib/llm/embeddings";

/** Where the call being run was stored: the assistant message holding it (null when it cannot be found). */
export type EffectCall = { messageId: string | null };

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
  /** The work session the tool runs in (the usage rows of its embedding calls name it); null in the chat. */
  workSessionId: string | null;
  /** The model knowledge is embedded with: what searchKnowledge and addKnowledgeItem compare meaning by. */
  embedding: EmbeddingChoice;
  search: SearchConfig;
  /**
   * The task the agent's current turn serves (see work-loop.ts): what it delegates,
   * asks or reports belongs to it. Null in the chat and in a turn about no task.
   */
  focusTaskId: () => string | null;
  /** The task the turn's work belongs to when none is in focus (a lead's wrap-up briefing: the work it briefs on). */
  storyTaskId?: () => string | null;
  /**
   * Runs a tool's writes in the transaction that records its result: a crash keeps
   * both or neither. Every tool that changes the database goes through it.
   */
  effect: <T>(toolCallId: string, write: (tx: Db, call?: EffectCall) => Promise<T>) => Promise<T>;
};
