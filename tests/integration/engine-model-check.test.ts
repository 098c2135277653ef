// The engine's randomized model-based test (issue 9, item 17).
//
// A seeded generator builds scenarios — a lead and 1–3 subordinates per team, several
// tasks at once, delegations, subordinates that report, ask, fail (model error, step
// limit, budget), send malformed tool calls, answers, cancels, Stop (also before a
// session starts), pause/resume, removed subordinates, webhooks — and runs each against
// real worker processes and a scripted model (tests/support/model-check/). Model calls
// take random time, so input lands mid-call; a few times per run a worker is SIGKILLed
// mid-step. Once a scenario's team is quiet, the invariants of
// tests/support/model-check/invariants.ts are checked on it.
//
// Environment:
//   CADRE_SEED=S                       the run's seed (random when unset; printed). Scenario i
//                                      of run S has seed S + i, so it is scenario 0 of run S + i.
//   CADRE_MODEL_CHECK_SCENARIOS=N      how many scenarios (default 300)
//   CADRE_MODEL_CHECK_CONCURRENCY=C    scenarios in flight at once (default 14)
//   CADRE_MODEL_CHECK_KILLS=K          worker SIGKILLs per run (default 3 from 30 scenarios up, else 0)
//   CADRE_MODEL_CHECK_SHOW=F           failing scenarios printed in full (default 5)
//   CADRE_MODEL_CHECK_DEBUG=1          print them with every agent's tasks and work log, and the workers' output
//
// Replay one failing scenario (its seed is printed with its violations):
//   CADRE_SEED=<scenario seed> CADRE_MODEL_CHECK_SCENARIOS=1 npx vitest run tests/integration/engine-model-check.test.ts
// (add CADRE_MODEL_CHECK_KILLS=1 when it is marked * — a worker died while it ran — to
// SIGKILL a worker during it too). The scenario (team, scripts, actions and their times)
// is the same; the interleaving with real processes is not, so a race may need a few runs.
//
// Violations are printed grouped by kind with example seeds, then the first failing
// scenarios in full: the script, what the person did when, and what broke.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTestEngine, type TestEngine } from "../support/engine";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai";
import { formatFailure, summarizeByKind } from "../support/model-check/report";
import { runScenario, type ScenarioResult, type Violation } from "../support/model-check/runner";
import { ScriptedModel } from "../support/model-check/scripted-model";
import { QuietMonitor, TaskEvents } from "../support/model-check/watchers";
import { postgresCpuSeconds, WorkerPool } from "../support/model-check/workers";

// The person's side runs in this process: no lead schedules (setTeamStatus reads it).
process.env.LEAD_SCHEDULE = "off";

const SCENARIOS = Number(process.env.CADRE_MODEL_CHECK_SCENARIOS ?? 300);
const CONCURRENCY = Number(process.env.CADRE_MODEL_CHECK_CONCURRENCY ?? 14);
/** Failing scenarios shown in full (with work logs when CADRE_MODEL_CHECK_DEBUG is set). */
const SHOW = Number(process.env.CADRE_MODEL_CHECK_SHOW ?? 5);
const KILLS = Number(process.env.CADRE_MODEL_CHECK_KILLS ?? (SCENARIOS >= 30 ? 3 : 0));
const RUN_SEED = process.env.CADRE_SEED ? Number(process.env.CADRE_SEED) >>> 0 : Math.floor(Math.random() * 2 ** 31);
const SESSION_TOKEN_BUDGET = 400_000;

let database: TestDatabase;
let engine: TestEngine;
let openai: FakeOpenAI;
let workers: WorkerPool;
let taskEvents: Awaited<ReturnType<typeof TaskEvents.start>>;
const model = new ScriptedModel({
  maxDelayMs: 80,
  slowChance: 0.08,
  slowDelayMs: [150, 450],
  spendTokens: SESSION_TOKEN_BUDGET + 100_000,
});

let suiteStarted = 0;

beforeAll(async () => {
  suiteStarted = Date.now();
  database = await createTestDatabase({ max: 20 });
  engine = await createTestEngine(database);
  openai = await startFakeOpenAI(model.handler, { record: false });
  taskEvents = await TaskEvents.start(database.sql);
  workers = new WorkerPool(database.db, {
    DATABASE_URL: database.url,
    OPENAI_BASE_URL: openai.url,
    LLM_MODEL: "model-check",
    // Enough sessions at once for the scenarios in flight; not more: pg-boss wakes every
    // idle poller of a worker on each new job, and each one queries Postgres.
    WORKER_CONCURRENCY: "16",
    // A killed worker's sessions are retaken within seconds.
    SESSION_STALE_SECONDS: "5",
    MAX_STEPS_PER_SESSION: "12",
    SESSION_TOKEN_BUDGET: String(SESSION_TOKEN_BUDGET),
    TEAM_DAILY_TOKEN_BUDGET: "1000000000",
    // No compaction: the context of a call is the whole log, which invariant 7 compares.
    CONTEXT_TOKEN_BUDGET: "1000000",
    MODEL_TIMEOUT_MS: "20000",
  });
  workers.start();
  workers.start();
  await workers.waitReady();
}, 120_000);

afterAll(async () => {
  await workers?.stopAll();
  await taskEvents?.stop();
  await engine?.close();
  await openai?.close();
  await database?.drop();
});

describe("engine model-check", () => {
  it(`${SCENARIOS} random scenarios keep every invariant`, { timeout: 900_000 }, async () => {
    const started = Date.now();
    const monitor = new QuietMonitor(database.db, 300, workers.deadJobs);
    const killAt = new Set(Array.from({ length: KILLS }, (_, k) => Math.floor((SCENARIOS * (k + 0.5)) / KILLS)));
    const kills: Promise<string>[] = [];
    const results: ScenarioResult[] = [];
    let next = 0;

    const lane = async () => {
      for (let index = next++; index < SCENARIOS; index = next++) {
        const seed = (RUN_SEED + index) >>> 0;
        const result = await runScenario(
          {
            app: engine.deps,
            taskEvents: taskEvents.events,
            model,
            monitor,
            // A killed worker's wake-up job comes back only when pg-boss sees its heartbeat expire (~20 s).
            stallMs: 40_000,
            maxMs: 120_000,
            onStarted: () => {
              // Mid-step: the scenario's agents are at work a moment after it starts.
              if (killAt.has(index))
                kills.push(
                  new Promise((resolve) => setTimeout(resolve, 300 + (seed % 900))).then(() => workers.killOne()),
                );
            },
          },
          seed,
        );
        results.push(result);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, SCENARIOS) }, lane));
    const killLog = await Promise.all(kills);

    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (process.env.CADRE_MODEL_CHECK_DEBUG) {
      const own = process.cpuUsage();
      const postgres = await postgresCpuSeconds(database.name);
      console.log(
        `[engine model-check] cpu: test process ${((own.user + own.system) / 1e6).toFixed(1)} s, live workers ${(await workers.cpuSeconds()).toFixed(1)} s, Postgres backends still connected ${postgres.toFixed(1)} s; quiet monitor: ${monitor.stats.looks} looks, ${(monitor.stats.ms / Math.max(1, monitor.stats.looks)).toFixed(1)} ms each`,
      );
    }
    // Scenarios running when a worker died (a kill, or a crash) also see its fallout.
    const dyingAt = [...workers.killTimes, ...workers.crashes.map((crash) => crash.at)];
    const disturbed = new Set(
      results.filter((r) => dyingAt.some((t) => r.startedAt <= t && t <= r.endedAt)).map((r) => r.scenario.seed),
    );
    const failing = results
      .filter((result) => result.violations.length > 0)
      .sort(
        (a, b) =>
          Number(disturbed.has(a.scenario.seed)) - Number(disturbed.has(b.scenario.seed)) ||
          a.scenario.seed - b.scenario.seed,
      );
    const violations: (Violation & { seed: number })[] = failing.flatMap((result) =>
      result.violations.map((v) => ({ seed: result.scenario.seed, ...v })),
    );
    // A worker that dies on its own is a violation of the run, not of one scenario.
    for (const crash of workers.crashes) {
      const inFlight = results
        .filter((r) => r.startedAt <= crash.at && crash.at <= r.endedAt)
        .map((r) => r.scenario.seed);
      violations.push({
        seed: RUN_SEED,
        invariant: "0 worker crashed",
        message: `worker ${crash.pid} ${crash.output}\n(scenarios in flight: ${inFlight.join(", ")})`,
      });
    }
    // Quiet means nothing more happens: a model call after a scenario was checked says its quiet was not.
    for (const seed of new Set(model.lateCalls)) {
      violations.push({
        seed,
        invariant: "0 model called after quiet",
        message: `${model.lateCalls.filter((s) => s === seed).length} model call(s) after the team was found quiet`,
      });
    }
    const steps = results.reduce((sum, result) => sum + result.steps, 0);
    const summary = summarizeByKind(violations, disturbed);

    if (violations.length > 0) {
      console.log(`[engine model-check] violations by kind (* = a worker died while it ran):\n${summary.join("\n")}`);
      console.log(
        failing
          .slice(0, SHOW)
          .map((result) => formatFailure(result, !!process.env.CADRE_MODEL_CHECK_DEBUG))
          .join("\n\n"),
      );
      const crashes = violations.filter((v) => v.invariant === "0 worker crashed");
      if (crashes.length > 0)
        console.log(`[engine model-check] worker crashes:\n${crashes.map((v) => v.message).join("\n---\n")}`);
      if (process.env.CADRE_MODEL_CHECK_DEBUG) console.log(workers.output(20_000));
    }
    console.log(
      `[engine model-check] wall ${seconds} s (${((Date.now() - suiteStarted) / 1000).toFixed(1)} s with worker start-up), ${(results.length / Number(seconds)).toFixed(1)} scenarios/s, kills: ${killLog.join("; ") || "none"}, unknown-team calls: ${model.unknownCalls}`,
    );
    console.log(
      `[engine model-check] scenarios: ${results.length}, steps: ${steps}, invariant violations: ${violations.length}, seed: ${RUN_SEED}`,
    );

    expect(results).toHaveLength(SCENARIOS);
    // The kinds, not every violation: the details are printed above.
    expect(summary).toEqual([]);
  });
});
