import type { JobQueue } from "../../src/lib/jobs/job-queue";
import {
  backendCpuBetween,
  backendCpuMs,
  createFleet,
  maxSessionsPerAgent,
  processUsage,
  runOneTaskEach,
  scriptFleet,
  type FleetAgent,
} from "../lib/fleet";
import type { ModelServer } from "../lib/model-server";
import { PgProxy } from "../lib/pg-proxy";
import type { BenchDatabase } from "../lib/postgres";
import { formatCount } from "../lib/stats";
import type { FigureResult, Row } from "../lib/table";
import type { Workers } from "../lib/workers";

const POOL_SIZE = 8;

export type ScaleOptions = { teams: number; perTeam: number; workerCounts: number[] };

type Point = {
  workers: number;
  sessions: number;
  perSecond: number;
  workerCpuMs: number;
  postgresCpuMs: number;
  statements: number;
  bossStatements: number;
  peakConnections: number;
  kinds: string;
};

/**
 * The curve of throughput over worker processes: 1 000 agents in 100 teams, one task each
 * (a web search, then an answer; the scripted model answers at once), run by 1, 2 and 4
 * worker processes in turn. Each worker talks to Postgres through a counting proxy, so
 * statements and connections are the workers' own, pg-boss's included. CPU per session is
 * the workers' (from /proc) and, apart, the Postgres backends serving them.
 */
export async function scaleFigure(
  database: BenchDatabase,
  jobs: JobQueue,
  model: ModelServer,
  workers: Workers,
  options: ScaleOptions,
): Promise<FigureResult> {
  const fleet: FleetAgent[] = await createFleet(database, "Scale", options.teams, options.perTeam);
  scriptFleet(model, fleet, 1);
  const points: Point[] = [];
  for (const count of options.workerCounts) {
    await workers.stopAll();
    const proxies = await Promise.all(Array.from({ length: count }, () => PgProxy.start(database.url)));
    try {
      const started = [];
      // A pool of 8 each (11 connections per worker): four workers stay well inside a shared
      // server's max_connections of 100, as several machines on one managed Postgres must.
      for (const proxy of proxies)
        started.push(
          ...(await workers.start(1, { DATABASE_URL: proxy.url(database.url), DATABASE_POOL_SIZE: String(POOL_SIZE) })),
        );
      await workers.idle();
      for (const proxy of proxies) proxy.reset();
      const cpuBefore = started.map((worker) => processUsage(worker.child.pid!).cpuMs);
      const backendsBefore = await backendCpuMs(database);
      const run = await runOneTaskEach(database, jobs, fleet, `Scale with ${count} worker(s)`);
      const cpuAfter = started.map((worker) => processUsage(worker.child.pid!).cpuMs);
      const postgresCpuMs = backendCpuBetween(backendsBefore, await backendCpuMs(database));
      const statements = proxies.reduce((sum, proxy) => sum + proxy.total, 0);
      const bossStatements = proxies.reduce((sum, proxy) => sum + proxy.count((key) => key.startsWith("pg-boss|")), 0);
      points.push({
        workers: count,
        sessions: run.sessions,
        perSecond: run.sessions / run.seconds,
        workerCpuMs: cpuAfter.reduce((sum, cpu, i) => sum + cpu - cpuBefore[i]!, 0),
        postgresCpuMs,
        statements,
        bossStatements,
        peakConnections: proxies.reduce((sum, proxy) => sum + proxy.peakOpen, 0),
        kinds: run.kinds,
      });
    } finally {
      await workers.stopAll();
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  }
  const maxPerAgent = await maxSessionsPerAgent(database, fleet);
  const base = points[0]!;
  const rows: Row[] = points.map((point) => ({
    figure: "scale",
    measure: `${point.workers} worker${point.workers > 1 ? "s" : ""}, ${formatCount(fleet.length)} agents in ${options.teams} teams, 1 task each`,
    p50: "",
    p95: "",
    ratio: `${point.perSecond.toFixed(1)} sessions/s (${(point.perSecond / base.perSecond).toFixed(2)}× 1 worker); CPU ${(point.workerCpuMs / point.sessions).toFixed(0)} ms worker + ${(point.postgresCpuMs / point.sessions).toFixed(0)} ms Postgres per session; ${(point.statements / point.sessions).toFixed(0)} statements/session; ${point.peakConnections} connections`,
    goal: point === points.at(-1) ? "max sessions of one agent at once = 1" : "",
    pass: point === points.at(-1) ? maxPerAgent === 1 : null,
  }));
  return {
    rows,
    notes: [
      `scale: ${formatCount(fleet.length)} agents (${options.teams} teams of ${options.perTeam}), one task each per point (a web search, an answer, knowledge extraction, and each lead's briefing decision), zero-latency scripted model over HTTP; ${points.map((point) => `${point.workers} worker(s): ${point.sessions} sessions (${point.kinds}) in ${(point.sessions / point.perSecond).toFixed(1)} s, ${(point.bossStatements / point.sessions).toFixed(1)} of the statements per session pg-boss's, at most ${point.peakConnections} connections open`).join("; ")}. Each worker runs 8 sessions at once on DATABASE_POOL_SIZE=${POOL_SIZE}; the machine's cores are shared by the workers, Postgres, the model server and this process, so on 2 cores the curve flattens by CPU, not by Postgres. Max sessions of one agent at once: ${maxPerAgent}.`,
    ],
  };
}
