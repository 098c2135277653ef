import type { LanguageModel } from "ai";
import type { EngineConfig, EngineDeps } from "@/lib/core/engine-config";
import { runWorkSession, type SessionOutcome } from "@/lib/engine/agent";
import { listAgentsAwaitingWork } from "@/lib/db/queries/work-sessions";
import { JobQueue } from "@/lib/jobs/job-queue";
import { OfflineModel } from "@/lib/llm/offline-model";
import { offlineEmbeddingChoice, type EmbeddingChoice } from "@/lib/llm/embeddings";
import { afterAll, afterEach, beforeAll } from "vitest";
import { stopLocalSession } from "@/lib/engine/agent";
import { SESSION_STOP_CHANNEL } from "@/lib/jobs/queues";
import { createTestDatabase, type TestDatabase } from "./database";

export type TestEngine = { deps: EngineDeps; jobs: JobQueue; logs: string[]; close: () => Promise<void> };

/**
 * The engine on a test database: a real job queue (pg-boss in that database; nobody
 * works its jobs unless a test starts a worker) and the model the test chooses.
 */
export async function createTestEngine(
  database: TestDatabase,
  options: {
    model?: LanguageModel;
    modelFor?: (override?: string | null) => LanguageModel;
    config?: Partial<EngineConfig>;
    /** The embedding model; the offline one when not given. */
    embedding?: EmbeddingChoice;
  } = {},
): Promise<TestEngine> {
  const jobs = await JobQueue.start(database.url, "web", { quiet: true });
  const logs: string[] = [];
  const deps: EngineDeps = {
    db: database.db,
    jobs,
    config: {
      contextTokenBudget: 24_000,
      maxStepsPerSession: 25,
      sessionTokenBudget: 1_000_000,
      teamDailyTokenBudget: 5_000_000,
      modelTimeoutMs: 30_000,
      staleSessionSeconds: 15,
      search: {},
      worker: "test-worker",
      ...options.config,
    },
    chooseModel: (override) => {
      const model = options.modelFor?.(override) ?? options.model ?? new OfflineModel();
      return { model, modelId: typeof model === "string" ? model : model.modelId, kind: "offline" };
    },
    embedding: options.embedding ?? offlineEmbeddingChoice(),
    log: (line) => logs.push(line),
  };
  return { deps, jobs, logs, close: () => jobs.stop({ graceful: false, timeoutMs: 1000 }) };
}

/**
 * Runs sessions, one agent at a time, until no agent has anything left to do: the
 * worker's loop without the worker, for tests that want to look between sessions.
 */
export async function runUntilQuiet(
  deps: EngineDeps,
  maxSessions = 30,
  options: { agentIds?: readonly string[] } = {},
): Promise<{ agentId: string; outcome: SessionOutcome }[]> {
  const ran: { agentId: string; outcome: SessionOutcome }[] = [];
  for (let i = 0; i < maxSessions; i++) {
    const [agentId] = (await listAgentsAwaitingWork(deps.db))
      .map((agent) => agent.agentId)
      .filter((id) => !options.agentIds || options.agentIds.includes(id));
    if (!agentId) return ran;
    ran.push({ agentId, outcome: await runWorkSession(deps, agentId) });
  }
  throw new Error(`Still not quiet after ${maxSessions} sessions: ${JSON.stringify(ran.map((r) => r.outcome.status))}`);
}

/**
 * A test file that runs sessions in-process: its own database (a stop NOTIFY reaches
 * this process's sessions at once, as in a worker) and `engineWith(...)` for an engine
 * per test. Engines close as each test ends — each holds a pg-boss pool, and parallel
 * test files must stay under max_connections. Call at the top of the file.
 */
export function useEngineTests() {
  const context = {
    database: undefined as unknown as TestDatabase,
    engineWith: async (
      ...args: Parameters<typeof createTestEngine> extends [unknown, ...infer Rest] ? Rest : never
    ) => {
      const engine = await createTestEngine(context.database, ...args);
      engines.push(engine);
      return engine;
    },
  };
  const engines: TestEngine[] = [];
  beforeAll(async () => {
    context.database = await createTestDatabase({ max: 20 });
    await context.database.sql.listen(SESSION_STOP_CHANNEL, (sessionId) => stopLocalSession(sessionId));
  });
  afterEach(async () => {
    for (const engine of engines.splice(0)) await engine.close();
  });
  afterAll(async () => {
    await context.database?.drop();
  });
  return context;
}
