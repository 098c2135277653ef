import { runWorkSession } from "../../src/lib/engine/agent";
import { assignTask } from "../../src/lib/domain/tasks";
import { sessionModel, textReply, toolCallReply } from "../../tests/support/mock-model";
import { createTestEngine } from "../../tests/support/engine";
import type { LoadedHistory } from "../lib/history";
import type { BenchDatabase } from "../lib/postgres";
import { formatMs, now, summarize } from "../lib/stats";
import type { FigureResult } from "../lib/table";

const STEPS = 50;

/**
 * What Cadre adds to each tool round of a 50-step session, with a model and a tool
 * that take no time: from the model's answer to the next model call. That gap holds
 * storing the assistant row, the usage row and the step count, running the (free)
 * tool and storing its result, then the system prompt, the compaction check and the
 * context reload (the injection) for the next call.
 *
 * The agent's log already holds 100k messages, so the figure is the one of an agent
 * with a long life behind it.
 */
export async function stepFigure(database: BenchDatabase, history: LoadedHistory, sessions = 3): Promise<FigureResult> {
  const { gaps, cpuPerRound } = await measureSteps(database, history.agentId, { sessions, steps: STEPS });
  const summary = summarize(gaps);
  return {
    rows: [
      {
        figure: "step",
        measure: `overhead per tool round (${STEPS}-step session)`,
        p50: formatMs(summary.p50),
        p95: formatMs(summary.p95),
        ratio: "",
        goal: "p50 ≤ 2 ms",
        pass: summary.p50 <= 2,
      },
    ],
    notes: [
      `step: ${summary.n} tool rounds over ${sessions} sessions (after one warm-up session) of an agent whose log holds ${history.length.toLocaleString("en-US")} messages; zero-latency mock model, tavilySearch unconfigured (returns at once). This process spent ${formatMs(cpuPerRound)} of CPU per round (whole sessions included).`,
    ],
  };
}

/**
 * The gaps of `sessions` sessions of `steps` tool rounds each (after a warm-up session),
 * run in this process with a model that answers at once: the step figure's measurement,
 * shared with the peers figure.
 */
export async function measureSteps(
  database: BenchDatabase,
  agentId: string,
  options: { sessions: number; steps: number },
): Promise<{ gaps: number[]; cpuPerRound: number }> {
  const { sessions, steps } = options;
  const gaps: number[] = [];
  let calledAt: number[] = [];
  let answeredAt: number[] = [];
  const model = sessionModel((_options, call) => {
    const index = calledAt.length;
    calledAt.push(now());
    const reply =
      index < steps - 1 ? toolCallReply("tavilySearch", { query: `round ${call}` }) : textReply("All rounds done.");
    answeredAt.push(now());
    return reply;
  });
  const engine = await createTestEngine(database, { model, config: { maxStepsPerSession: steps + 10 } });
  let cpu = { user: 0, system: 0 };
  try {
    for (let session = 0; session < sessions + 1; session++) {
      if (session === 1) cpu = process.cpuUsage();
      calledAt = [];
      answeredAt = [];
      await assignTask(database.db, engine.jobs, { agentId, source: "lead", title: `${steps} rounds (${session})` });
      const outcome = await runWorkSession(engine.deps, agentId);
      if (outcome.status !== "completed" || calledAt.length !== steps) {
        throw new Error(
          `The step session ended ${outcome.status} after ${calledAt.length} model calls: ${outcome.error ?? ""}`,
        );
      }
      // The first session warms the caches and the JIT.
      if (session === 0) continue;
      for (let i = 1; i < steps; i++) gaps.push(calledAt[i]! - answeredAt[i - 1]!);
    }
    cpu = process.cpuUsage(cpu);
  } finally {
    await engine.close();
  }
  return { gaps, cpuPerRound: (cpu.user + cpu.system) / 1000 / (sessions * steps) };
}
