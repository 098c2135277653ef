// Real worker processes for the engine model-check: started, SIGKILLed mid-step, and
// watched — a worker that dies on its own is a finding, and is replaced.
import os from "node:os";
import { sql } from "drizzle-orm";
import type { Db } from "@/lib/db/client";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../worker-process";

export class WorkerPool {
  readonly live: WorkerProcess[] = [];
  /** When each SIGKILL landed (epoch ms). */
  readonly killTimes: number[] = [];
  /** Workers that exited without being told to: when, and what they printed last. */
  readonly crashes: { at: number; pid: number | undefined; output: string }[] = [];
  private readonly killing = new Set<WorkerProcess>();
  /**
   * Wake-up jobs that were active when a worker died. pg-boss keeps a dead worker's jobs
   * "active" until their heartbeat expires (then retries them): nobody is working them,
   * so quiet detection ignores them while they are active, and counts their retries.
   */
  readonly deadJobs = new Set<string>();
  private readonly dead: WorkerProcess[] = [];
  private stopping = false;

  constructor(
    private readonly db: Db,
    private readonly env: Record<string, string>,
  ) {}

  start(): WorkerProcess {
    const worker = startWorkerProcess(this.env);
    this.live.push(worker);
    const watchReady = (chunk: Buffer) => {
      if (!chunk.toString().includes("[worker] ready")) return;
      this.ready.add(worker);
      worker.child.stdout?.off("data", watchReady);
    };
    worker.child.stdout?.on("data", watchReady);
    // A long run's output is kept to its tail, for failure messages.
    worker.child.stdout?.on("data", () => {
      if (worker.output.length > 400) worker.output.splice(0, worker.output.length - 200);
    });
    worker.child.once("exit", (code, signal) => {
      if (this.stopping || this.killing.has(worker) || !this.live.includes(worker)) return;
      this.crashes.push({
        at: Date.now(),
        pid: worker.child.pid,
        output: `exited on its own (${signal ?? `code ${code}`}):\n${worker.output.join("").slice(-1500)}`,
      });
      void this.retire(worker).then(() => this.start());
    });
    return worker;
  }

  private readonly ready = new Set<WorkerProcess>();

  isReady(worker: WorkerProcess): boolean {
    return this.ready.has(worker);
  }

  async waitReady(timeoutMs = 60_000): Promise<void> {
    await waitFor(async () => this.live.every((worker) => this.isReady(worker)), {
      timeoutMs,
      what: "the workers to be ready",
    }).catch((error: Error) => {
      throw new Error(`${error.message}\n${this.output()}`);
    });
  }

  /**
   * Takes a dead worker out of the pool, remembering the jobs it was running: the active
   * jobs of agents whose session ran on it, or of agents with no session (a job between
   * its fetch and the claim; a live worker's such job claims a session within moments,
   * which keeps its agent busy anyway). Called right after the death, before the dead
   * worker's sessions are reaped.
   */
  private async retire(worker: WorkerProcess): Promise<void> {
    this.live.splice(this.live.indexOf(worker), 1);
    this.dead.push(worker);
    const active = await this.db.execute<{ id: string }>(sql`
      select j.id::text from pgboss.job j
       where j.name = 'agent-wake' and j.state = 'active'
         and not exists (select 1 from work_sessions s
                          where s.agent_id = j.singleton_key::uuid and s.status = 'running' and s.worker <> ${`${os.hostname()}:${worker.child.pid}`})`);
    for (const row of active) this.deadJobs.add(row.id);
  }

  /**
   * SIGKILLs the ready worker running the most sessions (so it dies mid-step, in a model
   * call or a tool), after starting its replacement. Returns a line for the log.
   */
  async killOne(): Promise<string> {
    const ready = this.live.filter((worker) => this.isReady(worker));
    const rows = await this.db.execute<{ worker: string; n: string }>(
      sql`select worker, count(*) as n from work_sessions where status = 'running' group by worker`,
    );
    const running = new Map(rows.map((row) => [row.worker, Number(row.n)]));
    const sessionsOf = (worker: WorkerProcess) => running.get(`${os.hostname()}:${worker.child.pid}`) ?? 0;
    const victim = ready.sort((a, b) => sessionsOf(b) - sessionsOf(a))[0];
    if (!victim) return "no ready worker to kill";
    const sessions = sessionsOf(victim);
    // The replacement starts first: the run is never without a worker for long.
    this.start();
    this.killing.add(victim);
    await victim.stop("SIGKILL");
    this.killTimes.push(Date.now());
    await this.retire(victim);
    return `SIGKILL worker ${victim.child.pid} with ${sessions} running session(s)`;
  }

  /** CPU seconds the live workers have used (Linux /proc), for the run's figures. */
  async cpuSeconds(): Promise<number> {
    let seconds = 0;
    for (const worker of this.live) seconds += await processCpuSeconds(worker.child.pid);
    return seconds;
  }

  /** The tail of every worker's output, for a failure message. */
  output(chars = 4000): string {
    return [...this.dead, ...this.live]
      .map((w) => `[pid ${w.child.pid}]\n${w.output.join("").slice(-chars)}`)
      .join("\n---\n");
  }

  async stopAll(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.live.splice(0).map((worker) => worker.stop("SIGKILL")));
  }
}

/** utime + stime of a process, in seconds (Linux /proc; 0 elsewhere). */
async function processCpuSeconds(pid: number | undefined): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) / 100;
}

/** CPU seconds of the Postgres backends serving this database (those still connected). */
export async function postgresCpuSeconds(databaseName: string): Promise<number> {
  const { readdir, readFile } = await import("node:fs/promises");
  let seconds = 0;
  for (const entry of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmdline.startsWith("postgres:") && cmdline.includes(` ${databaseName} `))
      seconds += await processCpuSeconds(Number(entry));
  }
  return seconds;
}
