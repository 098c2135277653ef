// Real worker processes on a test database, with a scripted model and search behind local
// fake servers, for the tests that kill workers at random (crash safety, approvals).
import type { SQL } from "drizzle-orm";
import { afterAll, beforeAll } from "vitest";
import { JobQueue } from "@/lib/jobs/job-queue";
import { startFakeOpenAI, type FakeChatRequest, type FakeOpenAI, type FakeReply } from "./fake-openai";
import { startFakeTavily, type FakeTavily } from "./fake-tavily";
import { createTestDatabase, type TestDatabase } from "./database";
import { startWorkerProcess, type WorkerProcess } from "./worker-process";

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export type WorkerFleet = {
  database: TestDatabase;
  jobs: JobQueue;
  /** Workers started and not killed yet. */
  live: WorkerProcess[];
  startWorker: () => WorkerProcess;
  /** SIGKILLs one worker that is ready (none ready: returns false) and starts its replacement. */
  killOne: () => Promise<boolean>;
  count: (query: SQL) => Promise<number>;
};

/**
 * Call at the top of a test file. Latency on the model and search sides (10–70 ms, 40–160 ms)
 * so kills land in model calls, in tools and between steps; dead workers are noticed within
 * seconds (SESSION_STALE_SECONDS=2) so many kills fit in a test run.
 */
export function useWorkerFleet(
  play: (request: FakeChatRequest) => FakeReply | Promise<FakeReply>,
  options: {
    /** Added to (or overriding) every worker's environment. */
    workerEnv?: Record<string, string>;
    /** Told of each model request as it arrives; the function it returns is called once it is answered. */
    onModelRequest?: (request: FakeChatRequest) => () => void;
  } = {},
): WorkerFleet {
  let openai: FakeOpenAI;
  let tavily: FakeTavily;
  const fleet = {
    live: [] as WorkerProcess[],
    startWorker: () => {
      const worker = startWorkerProcess({
        DATABASE_URL: fleet.database.url,
        OPENAI_BASE_URL: openai.url,
        LLM_MODEL: "fake-model",
        TAVILY_API_KEY: "tvly-test",
        TAVILY_BASE_URL: tavily.url,
        WORKER_CONCURRENCY: "4",
        SESSION_STALE_SECONDS: "2",
        ...options.workerEnv,
      });
      fleet.live.push(worker);
      return worker;
    },
    killOne: async () => {
      const ready = fleet.live.filter((worker) => worker.output.join("").includes("[worker] ready"));
      if (ready.length === 0) return false;
      const victim = ready[Math.floor(Math.random() * ready.length)]!;
      fleet.live.splice(fleet.live.indexOf(victim), 1);
      await victim.stop("SIGKILL");
      fleet.startWorker();
      return true;
    },
    count: async (query: SQL) => {
      const [row] = await fleet.database.db.execute<{ n: string }>(query);
      return Number(row?.n ?? 0);
    },
  } as WorkerFleet;
  beforeAll(async () => {
    fleet.database = await createTestDatabase({ max: 5 });
    fleet.jobs = await JobQueue.start(fleet.database.url, "web", { quiet: true });
    openai = await startFakeOpenAI(async (request) => {
      const answered = options.onModelRequest?.(request);
      try {
        await pause(10 + Math.random() * 60);
        return play(request);
      } finally {
        answered?.();
      }
    });
    tavily = await startFakeTavily(async ({ query }) => {
      await pause(40 + Math.random() * 120);
      return { results: [{ title: `About ${query}`, url: "https://example.com/solar", content: "Prices fell." }] };
    });
  });
  afterAll(async () => {
    await Promise.all(fleet.live.splice(0).map((worker) => worker.stop("SIGKILL")));
    await fleet.jobs?.stop({ graceful: false, timeoutMs: 1000 });
    await openai?.close();
    await tavily?.close();
    await fleet.database?.drop();
  });
  return fleet;
}
