import type { JobQueue } from "../../src/lib/jobs/job-queue";
import { createFleet, processUsage, runOneTaskEach, scriptFleet } from "../lib/fleet";
import type { ModelServer } from "../lib/model-server";
import type { BenchDatabase } from "../lib/postgres";
import { formatCount } from "../lib/stats";
import type { FigureResult } from "../lib/table";
import type { Workers } from "../lib/workers";

export type MemoryOptions = { sessions: number; agents: number };

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * One worker process running session after session (each a task answered at once, with
 * knowledge extraction, and the briefing decision for leads): its resident memory after
 * the first fifth of the sessions (warm: modules loaded, caches full, the heap grown) and at the end. A
 * leak grows with sessions; what is left is noise (the heap's own rhythm).
 */
export async function memoryFigure(database: BenchDatabase, jobs: JobQueue, model: ModelServer, workers: Workers, options: MemoryOptions): Promise<FigureResult> {
  const fleet = await createFleet(database, "Memory", Math.max(1, Math.round(options.agents / 10)), 10);
  scriptFleet(model, fleet, 0);
  await workers.stopAll();
  const [worker] = await workers.start(1);
  const pid = worker!.child.pid!;
  const rounds = Math.max(2, Math.ceil(options.sessions / fleet.length));
  const samples: number[][] = [];
  let sessions = 0;
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
    }
  } finally {
    await workers.stopAll();
  }
  // V8 grows its heap in steps over the first thousands of sessions before it settles: the
  // reference is the median after a fifth of the sessions.
  const warmRound = Math.max(0, Math.round(rounds / 5) - 1);
  const warm = median(samples[warmRound]!);
  const end = median(samples.at(-1)!);
  const perRound = samples.map(median);
  const growth = end / warm;
  return {
    rows: [
      {
        figure: "memory",
        measure: `worker RSS over ${formatCount(sessions)} sessions`,
        p50: "",
        p95: "",
        ratio: `${warm.toFixed(0)} MiB after ${formatCount(((warmRound + 1) * sessions) / rounds)} → ${end.toFixed(0)} MiB at the end (${growth.toFixed(2)}×)`,
        goal: "growth ≤ 1.10× after warm-up",
        pass: growth <= 1.1,
      },
    ],
    notes: [
      `memory: one worker (8 sessions at once), ${rounds} rounds of one task for each of ${fleet.length} agents, ${formatCount(sessions)} sessions in ${((performance.now() - started) / 1000).toFixed(0)} s; median RSS per round (MiB): ${perRound.map((value) => value.toFixed(0)).join(", ")}.`,
    ],
  };
}
