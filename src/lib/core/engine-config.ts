import "server-only";
import os from "node:os";
import { env } from "@/lib/env";
import { chooseModel, type ModelChoice } from "@/lib/llm/provider";
import { configuredEmbedding, type EmbeddingChoice } from "@/lib/llm/embeddings";
import type { Db } from "@/lib/db/client";
import type { JobQueue } from "@/lib/jobs/job-queue";
import type { OutboundPolicy } from "@/lib/http/outbound-url";
import { logError } from "@/lib/telemetry/log";

/** Tavily, for web search and reading pages; without a key both tools say they are not configured. */
export type SearchConfig = {
  tavilyApiKey?: string;
  tavilyBaseUrl?: string;
  /** How much of a page readWebPage returns (PAGE_READ_MAX_CHARS); 12 000 characters when unset. */
  pageReadMaxChars?: number;
  /** How long readWebPage waits for Tavily before it tells the agent the read failed; 30 s when unset (tests shorten it). */
  pageReadTimeoutMs?: number;
  /** Which pages may be read (outbound-url.ts); the environment's policy when unset (tests bring their own lookup). */
  outbound?: OutboundPolicy;
};

export type EngineConfig = {
  contextTokenBudget: number;
  maxStepsPerSession: number;
  /** Input + output tokens one work session may spend before it stops. */
  sessionTokenBudget: number;
  /** Input + output tokens a team's agents may spend per UTC day. */
  teamDailyTokenBudget: number;
  /** How long one model call may take before it counts as failed. */
  modelTimeoutMs: number;
  /** A session whose heartbeat is older than this belonged to a dead worker and is taken over. */
  staleSessionSeconds: number;
  search: SearchConfig;
  /** Names the worker in work_sessions, for people reading the table. */
  worker: string;
};

/** Everything the engine needs, passed in so tests can swap the model and the budget. */
export type EngineDeps = {
  db: Db;
  jobs: JobQueue;
  config: EngineConfig;
  chooseModel: (override?: string | null) => ModelChoice;
  /** The model knowledge is embedded with, for recall by meaning (one per installation: vectors of two models do not compare). */
  embedding: EmbeddingChoice;
  /** A line for the operator's log; an error keeps its cause and stack. */
  log: (message: string, error?: unknown) => void;
};

export function engineConfigFromEnv(): EngineConfig {
  const e = env();
  return {
    contextTokenBudget: e.CONTEXT_TOKEN_BUDGET,
    maxStepsPerSession: e.MAX_STEPS_PER_SESSION,
    sessionTokenBudget: e.SESSION_TOKEN_BUDGET,
    teamDailyTokenBudget: e.TEAM_DAILY_TOKEN_BUDGET,
    modelTimeoutMs: e.MODEL_TIMEOUT_MS,
    staleSessionSeconds: e.SESSION_STALE_SECONDS,
    search: {
      tavilyApiKey: e.TAVILY_API_KEY,
      tavilyBaseUrl: e.TAVILY_BASE_URL,
      pageReadMaxChars: e.PAGE_READ_MAX_CHARS,
    },
    worker: `${os.hostname()}:${process.pid}`,
  };
}

export function engineDeps(
  db: Db,
  jobs: JobQueue,
  overrides: Partial<Omit<EngineDeps, "db" | "jobs">> = {},
): EngineDeps {
  return {
    db,
    jobs,
    config: overrides.config ?? engineConfigFromEnv(),
    chooseModel: overrides.chooseModel ?? ((override) => chooseModel(override)),
    embedding: overrides.embedding ?? configuredEmbedding(),
    log: overrides.log ?? ((message, error) => (error === undefined ? console.log(message) : logError(message, error))),
  };
}
