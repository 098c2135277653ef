// `npm run bench`: the costs users feel, measured against their limits. Prints one table.
// Options: --only=context,step,…  (run some figures; the table shows those);
//          --quick (no filler histories: under a million messages, and small sizes for the scale
//          figures: for working on the bench itself); --memory-sessions=N; --divergences (the cache
//          figure logs every request that does not extend the one before it).
import os from "node:os";
import { JobQueue } from "../src/lib/jobs/job-queue";
import { compactionFigure } from "./figures/compaction";
import { contextFigure } from "./figures/context";
import { injectFigure } from "./figures/inject";
import { recoveryFigure } from "./figures/recovery";
import { stepFigure } from "./figures/step";
import { describeBreakdown, stepBreakdown } from "./figures/step-breakdown";
import { throughputFigure } from "./figures/throughput";
import { TIMELINE_AGENTS, TIMELINE_MESSAGES_PER_AGENT, timelineFigure } from "./figures/timeline";
import { buildIfMissing, ttfbFigure, type Build } from "./figures/ttfb";
import { wakeFigure } from "./figures/wake";
import { idleFigure } from "./figures/idle";
import { scaleFigure } from "./figures/scale";
import { memoryFigure } from "./figures/memory";
import { pagesFigure } from "./figures/pages";
import { fanOutFigure } from "./figures/fan-out";
import { peersFigure } from "./figures/peers";
import { costFigure } from "./figures/cost";
import { cacheFigure } from "./figures/cache";
import { recallFigure } from "./figures/recall";
import { loadHistories, type HistorySpec } from "./lib/history";
import { ModelServer } from "./lib/model-server";
import { createBenchDatabase, describeServer, startBenchServer } from "./lib/postgres";
import { renderTable, type FigureResult } from "./lib/table";
import { Workers } from "./lib/workers";

const allFigures = [
  "context",
  "step",
  "wake",
  "inject",
  "throughput",
  "ttfb",
  "compaction",
  "recovery",
  "timeline",
  "scale",
  "idle",
  "memory",
  "fan-out",
  "pages",
  "peers",
  "cost",
  "cache",
  "recall",
] as const;
type Figure = (typeof allFigures)[number];

const onlyArg = process.argv.find((arg) => arg.startsWith("--only="));
const selected = new Set<Figure>(
  onlyArg
    ? (onlyArg
        .slice("--only=".length)
        .split(",")
        .filter((name) => (allFigures as readonly string[]).includes(name)) as Figure[])
    : allFigures,
);
const needsWorkers = ["wake", "inject", "throughput", "recovery", "scale", "idle", "memory", "peers"].some((figure) =>
  selected.has(figure as Figure),
);
const quick = process.argv.includes("--quick");
// --divergences: the cache figure logs every request that breaks its conversation's prefix, not only the first.
const listDivergences = process.argv.includes("--divergences");
// The sizes of the scale figures: the in a full run, small ones with --quick.
const sizes = {
  scale: quick
    ? { teams: 20, perTeam: 10, workerCounts: [1, 2, 4] }
    : { teams: 100, perTeam: 10, workerCounts: [1, 2, 4] },
  idle: quick ? { seconds: 20, teams: 100, perTeam: 10 } : { seconds: 60, teams: 100, perTeam: 10 },
  memory: quick ? { sessions: 1_000, agents: 200 } : { sessions: 10_000, agents: 500 },
  fanOut: quick ? { streams: 200, events: 10 } : { streams: 200, events: 30 },
  peers: quick ? { rounds: [50], sessions: 2, crashAt: 25 } : { rounds: [50, 200], sessions: 3, crashAt: 25 },
  cache: quick ? { rounds: 20, leadTasks: 4, chatMessages: 6 } : { rounds: 50, leadTasks: 10, chatMessages: 10 },
  pages: quick
    ? { tasks: 1_000, knowledgeItems: 10_000, inboxItems: 5_000, samples: 10 }
    : { tasks: 10_000, knowledgeItems: 100_000, inboxItems: 50_000, samples: 20 },
  recall: quick ? { sizes: [1_000, 10_000], samples: 12 } : { sizes: [10_000, 30_000, 100_000], samples: 20 },
};
// --memory-sessions=N: a longer (or shorter) memory figure than the default.
const memorySessions = Number(process.argv.find((arg) => arg.startsWith("--memory-sessions="))?.split("=")[1]);
if (memorySessions > 0) sizes.memory.sessions = memorySessions;
const needsBuild = ["ttfb", "idle", "fan-out", "pages", "recall"].some((figure) => selected.has(figure as Figure));

const startedAt = performance.now();
const elapsed = () => `${((performance.now() - startedAt) / 1000).toFixed(0).padStart(4)} s`;
const log = (line: string) => console.log(`[bench ${elapsed()}] ${line}`);

const histories: HistorySpec[] = [
  { key: "ctx-1k", length: 1_000, summaries: true, ownTeam: true },
  { key: "ctx-10k", length: 10_000, summaries: true, ownTeam: true },
  { key: "ctx-100k", length: 100_000, summaries: true, ownTeam: true },
  { key: "full-100k", length: 100_000, summaries: false, ownTeam: true },
  // One team whose timeline is read: 100k messages over five work logs.
  ...Array.from(
    { length: TIMELINE_AGENTS },
    (_, i): HistorySpec => ({
      key: `team-${i}`,
      length: TIMELINE_MESSAGES_PER_AGENT,
      summaries: true,
      teamKey: "timeline",
    }),
  ),
  // Other agents' logs, so the tables and indexes hold over a million messages.
  ...Array.from(
    { length: quick ? 0 : 80 },
    (_, i): HistorySpec => ({ key: `filler-${i}`, length: 10_000, summaries: true }),
  ),
];

const server = await startBenchServer(log);
const database = await createBenchDatabase(server.adminUrl, { max: 20 });
let jobs: JobQueue | undefined;
let model: ModelServer | undefined;
let workers: Workers | undefined;
let cleaned = false;
const cleanUp = async () => {
  if (cleaned) return;
  cleaned = true;
  await workers?.stopAll().catch((error) => log(`could not stop the workers: ${error}`));
  await jobs?.stop({ graceful: false, timeoutMs: 1000 }).catch(() => {});
  await model?.close().catch(() => {});
  await database.drop().catch((error) => log(`could not drop ${database.name}: ${error}`));
  await server.stop().catch((error) => log(`could not stop Postgres: ${error}`));
};
process.once("SIGINT", () => void cleanUp().then(() => process.exit(130)));
process.once("SIGTERM", () => void cleanUp().then(() => process.exit(143)));

const results = new Map<Figure, FigureResult>();
const run = async (figure: Figure, what: string, measure: () => Promise<FigureResult>) => {
  if (!selected.has(figure)) return;
  // On a shared machine the other processes' load moves every figure: say what it was.
  const load = os.loadavg()[0]!.toFixed(1);
  log(`${figure}: ${what} (load average ${load}) …`);
  try {
    const result = await measure();
    if (result.notes[0]) result.notes[0] += ` Load average at the start of this figure: ${load}.`;
    results.set(figure, result);
  } catch (error) {
    // One broken figure should not cost the others: it shows as a failed row.
    const message = error instanceof Error ? error.message : String(error);
    log(`${figure} failed: ${error instanceof Error ? (error.stack ?? message) : message}`);
    results.set(figure, {
      rows: [{ figure, measure: what, p50: "–", p95: "–", ratio: "did not finish", goal: "", pass: false }],
      notes: [`${figure}: did not finish: ${message.split("\n")[0]}`],
    });
  }
};
const loadAtStart = os.loadavg()[0]!;

try {
  const machine = await describeServer(database);
  log(`database ${database.name} on ${server.embedded ? "an embedded Postgres" : new URL(server.adminUrl).host}`);
  // The build (when needed) overlaps the load, and is done before anything is timed.
  const building: Promise<Build> = needsBuild ? buildIfMissing(log) : Promise.resolve({ built: false, seconds: 0 });
  // The figures that count tokens run on teams of their own and need no histories (minutes to load);
  // every other figure is measured with them in the tables, as before.
  const needsHistories = [...selected].some((figure) => !["cost", "cache", "recall"].includes(figure));
  if (needsHistories)
    log(`loading ${histories.reduce((sum, spec) => sum + spec.length, 0).toLocaleString("en-US")} messages …`);
  const loaded = needsHistories ? await loadHistories(database, histories, log) : new Map<string, never>();
  const build = await building;
  if (build.error) log(`ttfb: the production build failed; ttfb is reported as not measured.\n${build.error}`);

  await run("context", "getConversationContext at 1k, 10k and 100k messages", () => contextFigure(database, loaded));
  await run("step", "app overhead per tool round of a 50-step session", async () => {
    const result = await stepFigure(database, loaded.get("ctx-100k")!);
    result.notes.push(
      `step, where the time goes (a round's own work replayed without the AI SDK, p50 per phase): ${describeBreakdown(await stepBreakdown(database, loaded.get("ctx-100k")!))}.`,
    );
    return result;
  });
  await run("compaction", "a 500-step session with and without compaction", () => compactionFigure(database));
  await run("timeline", "a team's timeline page at 100k messages", () =>
    timelineFigure(
      database,
      Array.from({ length: TIMELINE_AGENTS }, (_, i) => loaded.get(`team-${i}`)!),
    ),
  );

  if (needsWorkers) {
    jobs = await JobQueue.start(database.url, "web", { quiet: true });
    model = await ModelServer.start();
    workers = new Workers(database, model.url);
    log("starting a worker process …");
    await workers.start(1);
    const [m, j, w] = [model, jobs, workers];
    await run("wake", "task enqueued → first model call", () => wakeFigure(database, j, m, w));
    await run("inject", "messages posted mid-session", () => injectFigure(database, j, m, w));
    await run("throughput", "2 workers, 100 agents × 3 tasks", () => throughputFigure(database, j, m, w));
    await run("recovery", "kill -9 a worker mid-session, 3 times", () => recoveryFigure(database, j, m, w));
    await run("scale", `1, 2 and 4 workers over ${sizes.scale.teams * sizes.scale.perTeam} agents`, () =>
      scaleFigure(database, j, m, w, sizes.scale),
    );
    await run(
      "idle",
      `statements while ${sizes.idle.teams * sizes.idle.perTeam} agents idle, ${sizes.idle.seconds} s`,
      () => idleFigure(database, w, sizes.idle),
    );
    await run("peers", "the same tool loop in Cadre, LangGraph.js and Mastra; kill -9 mid-session", () =>
      peersFigure(database, j, m, w, sizes.peers, log),
    );
    await run("memory", `worker RSS over ${sizes.memory.sessions} sessions`, () =>
      memoryFigure(database, j, m, w, sizes.memory),
    );
    await workers.stopAll();
  }
  // Each starts a worker of its own, on a model server that applies OpenAI's prompt cache rule
  // and a web whose answers are the size real ones are: after the workers above have stopped.
  if (selected.has("cost") || selected.has("cache")) {
    jobs ??= await JobQueue.start(database.url, "web", { quiet: true });
    const j = jobs;
    await run("cost", "tokens and dollars per outcome: a research briefing, a check-in, a chat reply", () =>
      costFigure(database, j, log),
    );
    await run("cache", "share of input tokens served by the prompt cache", () =>
      cacheFigure(database, j, sizes.cache, log, listDivergences),
    );
  }
  await run("ttfb", "POST chat → first streamed byte, production build", () => ttfbFigure(database, build));
  await run("fan-out", `${sizes.fanOut.streams} live-update streams on one web process`, () =>
    fanOutFigure(database, sizes.fanOut),
  );
  await run("recall", "hybrid search (words and meaning) at up to 100k items a team", () =>
    recallFigure(database, sizes.recall),
  );
  // Last: it fills the big team's tables, which would change what other figures read.
  await run("pages", "server render of the team, agent, inbox and knowledge pages of a big team", () =>
    pagesFigure(database, loaded.get("ctx-100k")!, sizes.pages),
  );

  const ordered = allFigures.flatMap((figure) => (results.has(figure) ? [results.get(figure)!] : []));
  console.log("");
  console.log(renderTable(ordered.flatMap((result) => result.rows)));
  console.log("");
  for (const note of ordered.flatMap((result) => result.notes)) console.log(`- ${note}`);
  console.log(
    `- machine: ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; load average (1 min) ${loadAtStart.toFixed(1)} at the start, ${os.loadavg()[0]!.toFixed(1)} at the end; Node ${process.version}; ${machine.version.split(" on ")[0]} (${machine.settings}); ${loaded.size} histories, total run ${elapsed().trim()}`,
  );
  const goals = ordered.flatMap((result) => result.rows).filter((row) => row.pass !== null);
  console.log(`\n${goals.filter((row) => row.pass).length} of ${goals.length} goals met.`);
} finally {
  await cleanUp();
}
// A missed goal is a finding to read in the table, not a failure of the run.
process.exit(0);
