import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import { assignTask } from "../../src/lib/domain/tasks";
import { createSubordinate } from "../../src/lib/db/queries/agents";
import { createTeamWithLead } from "../../src/lib/db/queries/teams";
import { tasks } from "../../src/lib/db/schema";
import type { JobQueue } from "../../src/lib/jobs/job-queue";
import { waitFor } from "../../tests/support/worker-process";
import { roundsSinceTask, type ModelServer } from "../lib/model-server";
import type { BenchDatabase } from "../lib/postgres";
import { formatMs, summarize } from "../lib/stats";
import type { FigureResult, Row } from "../lib/table";
import type { Workers } from "../lib/workers";
import { measureSteps } from "./step";

const peersDir = path.resolve(import.meta.dirname, "../peers");
/** A peer as a row of the table: its harness script in bench/peers and the arguments that set it up. */
type PeerHarness = { key: string; name: string; script: string; args?: Record<string, string> };
/**
 * LangGraph twice: as a user gets it (durability "async": a step's checkpoint is written while
 * the next step runs) and with durability "sync", the promise Cadre makes (a step is stored
 * before the next begins), so the table compares equal durability too.
 */
const PEERS: PeerHarness[] = [
  { key: "langgraph", name: "LangGraph.js + PostgresSaver (default durability: async)", script: "langgraph.mjs" },
  {
    key: "langgraph-sync",
    name: "LangGraph.js + PostgresSaver (durability: sync)",
    script: "langgraph.mjs",
    args: { durability: "sync" },
  },
  { key: "mastra", name: "Mastra + @mastra/pg", script: "mastra.mjs" },
];

export type PeersOptions = { rounds: number[]; sessions: number; crashAt: number };

/** The peers live in bench/peers with a lockfile of their own, out of the app's install. */
function installPeers(log: (line: string) => void): void {
  if (existsSync(path.join(peersDir, "node_modules", "@langchain", "langgraph"))) return;
  log("peers: installing bench/peers (npm ci) …");
  const result = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], {
    cwd: peersDir,
    stdio: "pipe",
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(`npm ci in bench/peers failed:\n${result.stdout}\n${result.stderr}`);
}

type Peer = { messages: Record<string, unknown>[]; kill: () => void; done: Promise<number | null> };

/** A peer's harness as a process of its own (node, with the peers' node_modules), its JSON lines collected. */
function runPeer(script: string, args: Record<string, string | number>): Peer {
  const child = spawn(
    process.execPath,
    [path.join(peersDir, script), ...Object.entries(args).map(([key, value]) => `--${key}=${value}`)],
    {
      cwd: peersDir,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const collected: Record<string, unknown>[] = [];
  let buffer = "";
  let errors = "";
  child.stdout.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      if (line.startsWith("{")) collected.push(JSON.parse(line) as Record<string, unknown>);
    }
  });
  child.stderr.on("data", (chunk: Buffer) => (errors += chunk.toString()));
  const done = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  void done.then((code) => {
    if (code !== 0 && code !== null) collected.push({ error: `${script} exited with ${code}: ${errors.slice(-2000)}` });
  });
  return { messages: collected, kill: () => child.kill("SIGKILL"), done };
}

async function peerGaps(url: string, harness: PeerHarness, steps: number, sessions: number): Promise<number[]> {
  const peer = runPeer(harness.script, { ...harness.args, url, steps, sessions, mode: "time" });
  await peer.done;
  const result = peer.messages.find((message) => "gaps" in message) as { gaps: number[] } | undefined;
  if (!result)
    throw new Error(
      String(peer.messages.find((message) => "error" in message)?.error ?? `${harness.name} reported nothing`),
    );
  return result.gaps;
}

type Crash = { kept: number; lost: number; repeated: number };

/**
 * kill -9 a peer after `crashAt` tool rounds (its model is "thinking" about the next one),
 * then do what its user would: resume the thread (LangGraph) or run the task again on it
 * (Mastra). Kept: tool rounds its store held after the kill. Repeated: tool executions
 * (side effects, one row each in peer_effects) that ran twice.
 */
async function peerCrash(
  database: BenchDatabase,
  harness: PeerHarness,
  total: number,
  crashAt: number,
): Promise<Crash> {
  const { script } = harness;
  const thread = `crash-${harness.key}-${Date.now()}`;
  const first = runPeer(script, { ...harness.args, url: database.url, mode: "crash", steps: crashAt, total, thread });
  await waitFor(async () => first.messages.some((message) => "holding" in message || "error" in message), {
    timeoutMs: 60_000,
    what: `${harness.name} to reach round ${crashAt}`,
  });
  first.kill();
  await first.done;
  const second = runPeer(script, { ...harness.args, url: database.url, mode: "resume", total, thread });
  await second.done;
  const kept = Number(
    (second.messages.find((message) => "kept" in message) as { kept: number } | undefined)?.kept ?? Number.NaN,
  );
  const [row] = (await database.sql`
    select count(*)::int as executions, count(distinct step)::int as steps from peer_effects where thread = ${thread}`) as unknown as [
    { executions: number; steps: number },
  ];
  return { kept, lost: crashAt - kept, repeated: row!.executions - row!.steps };
}

/**
 * Cadre's side of the crash: a worker process runs a task of `total` rounds, each a tool that
 * writes (addKnowledgeItem: its row commits with its result), and is killed with kill -9 while
 * the model thinks about round `crashAt`; a second worker takes the session up.
 */
async function cadreCrash(
  database: BenchDatabase,
  jobs: JobQueue,
  model: ModelServer,
  workers: Workers,
  total: number,
  crashAt: number,
): Promise<Crash> {
  await workers.stopAll();
  const { lead } = await createTeamWithLead(database.db, {
    name: "Crash peer",
    mission: "Record findings.",
    leadName: "Recorder",
  });
  let holding = false;
  let killed = false;
  model.script(lead.name, async ({ request }) => {
    const round = roundsSinceTask(request);
    if (round >= crashAt && !killed) {
      holding = true;
      await new Promise(() => {}); // thinking until the worker dies
    }
    return round < total - 1
      ? {
          toolCalls: [
            {
              name: "addKnowledgeItem",
              arguments: { type: "fact", content: `Finding of round ${round}.`, confidence: 0.8 },
            },
          ],
        }
      : { text: "All rounds done." };
  });
  // The whole loop in one turn, as the peers run it (the default MAX_STEPS_PER_SESSION is 25).
  const env = { MAX_STEPS_PER_SESSION: String(total + 10) };
  const [victim] = await workers.start(1, env);
  const task = await assignTask(database.db, jobs, { agentId: lead.id, source: "user", title: `${total} findings` });
  await waitFor(async () => holding, { timeoutMs: 60_000, what: "Cadre's session to reach the crash round" });
  await workers.kill(victim!);
  killed = true;
  const [{ kept }] = (await database.sql`
    select count(*)::int as kept from messages m join conversations c on c.id = m.conversation_id
     where c.agent_id = ${lead.id} and c.mode = 'background' and m.role = 'tool'`) as unknown as [{ kept: number }];
  await workers.start(1, env);
  await waitFor(
    async () => {
      const [row] = await database.db.select({ status: tasks.status }).from(tasks).where(eq(tasks.id, task.id));
      return row?.status === "completed";
    },
    { timeoutMs: 120_000, what: "Cadre's crashed task to complete" },
  );
  const rows = (await database.sql`
    select content, count(*)::int as n from knowledge_items where agent_id = ${lead.id} group by content`) as unknown as {
    content: string;
    n: number;
  }[];
  await workers.stopAll();
  return { kept, lost: crashAt - kept, repeated: rows.reduce((sum, row) => sum + row.n - 1, 0) };
}

/**
 * The same zero-latency tool loop in Cadre and in the two peers a user would pick instead,
 * on the same Postgres in the same run: overhead per step (the gap between a model answer
 * and the next call, as the step figure measures it), and what each keeps after kill -9.
 */
export async function peersFigure(
  database: BenchDatabase,
  jobs: JobQueue,
  model: ModelServer,
  workers: Workers,
  options: PeersOptions,
  log: (line: string) => void,
): Promise<FigureResult> {
  installPeers(log);
  // Cadre's loop runs in this process: no worker process may take its agent's wake-up.
  await workers.stopAll();
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const rounds of options.rounds) {
    // A subordinate, as in the step figure: a lead's session ends with one more call (its briefing decision).
    const { team } = await createTeamWithLead(database.db, { name: `Peer ${rounds}`, mission: "Loop." });
    const looper = await createSubordinate(database.db, team.id, {
      name: `Looper ${rounds}`,
      instructions: "Search, round after round.",
    });
    const cadre = summarize(
      (await measureSteps(database, looper.id, { sessions: options.sessions, steps: rounds })).gaps,
    );
    rows.push({
      figure: "peers",
      measure: `Cadre, ${rounds}-step tool loop`,
      p50: formatMs(cadre.p50),
      p95: formatMs(cadre.p95),
      ratio: "1.00×",
      goal: "",
      pass: null,
    });
    for (const peer of PEERS) {
      const gaps = summarize(await peerGaps(database.url, peer, rounds, options.sessions));
      rows.push({
        figure: "peers",
        measure: `${peer.name}, ${rounds}-step`,
        p50: formatMs(gaps.p50),
        p95: formatMs(gaps.p95),
        ratio: `${(gaps.p50 / cadre.p50).toFixed(2)}× Cadre's p50, ${(gaps.p95 / cadre.p95).toFixed(2)}× its p95`,
        goal: "",
        pass: null,
      });
    }
  }
  const total = Math.max(...options.rounds.filter((rounds) => rounds <= 50), options.crashAt * 2);
  const crashes: [string, Crash][] = [
    ["Cadre", await cadreCrash(database, jobs, model, workers, total, options.crashAt)],
  ];
  for (const peer of PEERS) crashes.push([peer.name, await peerCrash(database, peer, total, options.crashAt)]);
  for (const [name, crash] of crashes) {
    rows.push({
      figure: "peers",
      measure: `${name}: kill -9 after ${options.crashAt} of ${total} rounds`,
      p50: "",
      p95: "",
      ratio: `kept ${crash.kept}, lost ${crash.lost} steps; ${crash.repeated} side effects repeated`,
      goal: name === "Cadre" ? "0 lost, 0 repeated" : "",
      pass: name === "Cadre" ? crash.lost === 0 && crash.repeated === 0 : null,
    });
  }
  notes.push(
    `peers: each peer in a process of its own (bench/peers, its own lockfile), the model a scripted stand-in inside the framework's own model interface (LangChain BaseChatModel; an AI SDK LanguageModelV2 for Mastra), a tool that returns at once; Cadre's loop as the step figure runs it (its own agent, a fresh log), ${options.sessions} sessions after a warm-up one for each. LangGraph twice: with its default durability ("async": a checkpoint is written while the next step runs, not awaited) and with durability "sync" (each step's checkpoint written before the next step starts, Cadre's promise); Mastra with Memory's defaults on PostgresStore. After a kill -9 the peer's user resumes the thread (LangGraph, from its last checkpoint) or runs the task again on the thread (Mastra: a run cannot be resumed); Cadre's next worker takes the session up by itself. A repeated side effect is a tool that ran again for a step it had already done (one row per execution).`,
  );
  return { rows, notes };
}
