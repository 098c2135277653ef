import type { JobQueue } from "../../src/lib/jobs/job-queue";
import { createFleet, processUsage, runOneTaskEach, scriptFleet } from "../lib/fleet";
import { Inspector, residentBreakdown, type MemoryUsage } from "../lib/inspector";
import type { ModelServer } from "../lib/model-server";
import type { BenchDatabase } from "../lib/postgres";
import { formatCount } from "../lib/stats";
import type { FigureResult } from "../lib/table";
import type { Workers } from "../lib/workers";

export type MemoryOptions = { sessions: number; agents: number };

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * One worker process running session after session (each a task answered at once, with
 * knowledge extraction, and the briefing decision for leads). A leak grows with sessions; what
 * is left is noise, and most of that noise is V8's collector: it lets garbage pile up, and its
 * heap grow, for a while before it collects. So the figure reads the worker twice through its
 * inspector, after the first fifth of the sessions (warm: modules loaded, caches full) and at
 * the end, each time right after a full garbage collection: its RSS and its live heap then are
 * what it keeps, and they are what the goal compares. The RSS sampled during the rounds (the
 * collector wherever it happens to be) is reported beside them, and where the resident memory
 * is (malloc's heap, anonymous mappings, files). The worker runs with the malloc settings
 * `npm start` gives it (src/worker/malloc.ts).
 */
export async function memoryFigure(
  database: BenchDatabase,
  jobs: JobQueue,
  model: ModelServer,
  workers: Workers,
  options: MemoryOptions,
): Promise<FigureResult> {
  const fleet = await createFleet(database, "Memory", Math.max(1, Math.round(options.agents / 10)), 10);
  scriptFleet(model, fleet, 0);
  await workers.stopAll();
  const [worker] = await workers.start(1, {}, ["--inspect=127.0.0.1:0"]);
  const pid = worker!.child.pid!;
  const inspector = await Inspector.connect(worker!.output);
  const rounds = Math.max(2, Math.ceil(options.sessions / fleet.length));
  // V8 grows its heap in steps over the first thousands of sessions before it settles: the
  // reference is taken after a fifth of the sessions.
  const warmRound = Math.max(0, Math.round(rounds / 5) - 1);
  const samples: number[][] = [];
  let sessions = 0;
  let warmSessions = 0;
  let warm: MemoryUsage | undefined;
  let end: MemoryUsage | undefined;
  let warmResident: ReturnType<typeof residentBreakdown> | undefined;
  let endResident: ReturnType<typeof residentBreakdown> | undefined;
  const started = performance.now();
  try {
    for (let round = 0; round < rounds; round++) {
      const sampled: number[] = [];
      const sampler = setInterval(() => sampled.push(processUsage(pid).rssMiB), 250);
      const run = await runOneTaskEach(database, jobs, fleet, `Memory round ${round + 1}`);
      clearInterval(sampler);
      sessions += run.sessions;
      samples.push(sampled.length ? sampled : [processUsage(pid).rssMiB]);
      // The model server keeps every request it saw: not this figure's business.
      model.fake.requests.length = 0;
      if (round === warmRound) {
        warm = await inspector.memoryAfterCollection();
        warmResident = residentBreakdown(pid);
        warmSessions = sessions;
      }
    }
    end = await inspector.memoryAfterCollection();
    endResident = residentBreakdown(pid);
  } finally {
    inspector.close();
    await workers.stopAll();
  }
  const perRound = samples.map(median);
  const sampledWarm = perRound[warmRound]!;
  const sampledEnd = perRound.at(-1)!;
  const rssGrowth = end.rss / warm!.rss;
  const heapGrowth = end.heapUsed / warm!.heapUsed;
  const mib = (value: number) => `${value.toFixed(0)} MiB`;
  return {
    rows: [
      {
        figure: "memory",
        measure: `worker after a full GC, ${formatCount(sessions)} sessions`,
        p50: "",
        p95: "",
        ratio: `RSS ${mib(warm!.rss)} after ${formatCount(warmSessions)} → ${mib(end.rss)} (${rssGrowth.toFixed(2)}×); live heap ${mib(warm!.heapUsed)} → ${mib(end.heapUsed)} (${heapGrowth.toFixed(2)}×)`,
        goal: "each ≤ 1.10× after warm-up",
        pass: rssGrowth <= 1.1 && heapGrowth <= 1.1,
      },
      {
        figure: "memory",
        measure: "worker RSS sampled during the rounds (median)",
        p50: "",
        p95: "",
        ratio: `${mib(sampledWarm)} after ${formatCount(warmSessions)} → ${mib(sampledEnd)} (${(sampledEnd / sampledWarm).toFixed(2)}×): garbage not yet collected counts here`,
        goal: "",
        pass: null,
      },
    ],
    notes: [
      `memory: one worker (8 sessions at once), ${rounds} rounds of one task for each of ${fleet.length} agents, ${formatCount(sessions)} sessions in ${((performance.now() - started) / 1000).toFixed(0)} s; median RSS per round (MiB): ${perRound.map((value) => value.toFixed(0)).join(", ")}. After a full GC, warm → end: heap total ${mib(warm!.heapTotal)} → ${mib(end.heapTotal)}, external ${mib(warm!.external)} → ${mib(end.external)} (array buffers ${mib(warm!.arrayBuffers)} → ${mib(end.arrayBuffers)}); resident, warm → end: malloc's brk heap ${mib(warmResident!.brk)} → ${mib(endResident!.brk)}, anonymous mappings ${mib(warmResident!.anonymous)} → ${mib(endResident!.anonymous)}, files ${mib(warmResident!.files)} → ${mib(endResident!.files)}.`,
    ],
  };
}
