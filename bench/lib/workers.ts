import { sql } from "drizzle-orm";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../../tests/support/worker-process";
import type { BenchDatabase } from "./postgres";

/** Real worker processes (`npm run worker`) on the bench database and the fake model server. */
export class Workers {
  readonly running: WorkerProcess[] = [];

  constructor(
    private readonly database: BenchDatabase,
    private readonly modelUrl: string,
  ) {}

  /**
   * `env` adds to or overrides the workers' environment (a DATABASE_URL through a counting proxy,
   * a pool size); `nodeArgs` go to Node itself (an inspector for the memory figure).
   */
  async start(count = 1, env: Record<string, string> = {}, nodeArgs: readonly string[] = []): Promise<WorkerProcess[]> {
    const started = Array.from({ length: count }, () =>
      startWorkerProcess(
        {
          DATABASE_URL: this.database.url,
          OPENAI_BASE_URL: this.modelUrl,
          LLM_MODEL: "fake-model",
          WORKER_CONCURRENCY: "8",
          ...env,
        },
        nodeArgs,
      ),
    );
    this.running.push(...started);
    await waitFor(async () => started.every((worker) => worker.output.join("").includes("[worker] ready")), {
      timeoutMs: 60_000,
      what: "the worker processes to start",
    }).catch((error: Error) => {
      throw new Error(`${error.message}\n${started.map((worker) => worker.output.join("")).join("\n---\n")}`);
    });
    return started;
  }

  /** The worker whose pid names it in work_sessions.worker ("host:pid"). */
  byName(name: string): WorkerProcess | undefined {
    return this.running.find((worker) => name.endsWith(`:${worker.child.pid}`));
  }

  async kill(worker: WorkerProcess): Promise<void> {
    await worker.stop("SIGKILL");
    this.running.splice(this.running.indexOf(worker), 1);
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.running.splice(0).map((worker) => worker.stop("SIGTERM")));
  }

  /** No session running and no wake-up queued: the state a measurement starts from. */
  async idle(timeoutMs = 60_000): Promise<void> {
    await waitFor(
      async () => {
        const [row] = await this.database.db.execute<{ busy: number }>(sql`
          select (select count(*) from work_sessions where status = 'running')
               + (select count(*) from pgboss.job where name = 'agent-wake' and state in ('created', 'retry', 'active')) as busy`);
        return Number(row?.busy ?? 1) === 0;
      },
      { timeoutMs, what: "the workers to be idle" },
    );
  }
}
