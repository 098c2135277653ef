// The whole eval: the web, a migrated template database, and each mission run on a copy of it.
import { execFileSync } from "node:child_process";
import postgres from "postgres";
import {
  LOCAL_POSTGRES_URL,
  localOrEmbeddedPostgres,
  postgresAnswers,
  withDatabase,
} from "../../scripts/lib/postgres-server";
import { migrateDatabase, redactUrl } from "../../src/lib/db/migrate";
import { JobQueue } from "../../src/lib/jobs/job-queue";
import { parseEnv } from "../../src/lib/env";
import { chooseModel } from "../../src/lib/llm/provider";
import { judgeBriefings } from "./judge";
import { startMisbehavingRelay, type ServerMode } from "./misbehaving-relay";
import { loadMissions, type Mission } from "./missions";
import { dropDatabase, runMission, type Break, type MissionRun } from "./run-mission";
import { startEvalWeb } from "./web";

export type EvalReport = {
  version: 1;
  startedAt: string;
  /** The model as usage rows name it, and how it is reached (offline, openai, openai-compatible). */
  model: string;
  modelKind: string;
  break: Break | null;
  /** The misbehaving server the offline model's answers came through (--server-misbehaves); absent: none. */
  serverMisbehaves?: ServerMode;
  /** The commit the eval ran on, when it ran in a git checkout. */
  commit: string | null;
  missions: MissionRun[];
};

export type EvalOptions = {
  /** Mission ids to run (default: all). */
  missions?: readonly string[];
  break?: Break;
  /** Per mission, from the person's message to a briefing and an idle team. */
  timeoutMs?: number;
  /** Missions run at once (each has its own database and worker). */
  parallel?: number;
  /** Where the databases go: a server that may create them and a migrated template (the tests'); default: see evalServer. */
  database?: { adminUrl: string; template: string };
  leadInstructions?: string;
  researcherInstructions?: string;
  /**
   * The model settings (OPENAI_BASE_URL, OPENAI_API_KEY, LLM_MODEL …) the team runs on, in the
   * worker and in the lead's chat alike; default: those of this process's environment. {} is
   * the offline model, whatever the environment says.
   */
  modelEnv?: Record<string, string>;
  /**
   * Run on the offline model's answers relayed through a local OpenAI-compatible server that
   * misbehaves this way (misbehaving-relay.ts), instead of modelEnv; not judged.
   */
  serverMisbehaves?: ServerMode;
  /** Grade each mission's briefings with the configured model (judge.ts); never with the offline model. Default: yes. */
  judge?: boolean;
  keepDatabases?: boolean;
  log?: (line: string) => void;
};

/** The environment the app reads for its model (src/lib/env.ts), handed to each worker as it is here. */
const MODEL_SETTINGS = [
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "LLM_MODEL",
  "PROMPT_CACHE_KEY",
  "MODEL_TIMEOUT_MS",
  "CONTEXT_TOKEN_BUDGET",
  "MAX_STEPS_PER_SESSION",
  "SESSION_TOKEN_BUDGET",
  "TEAM_DAILY_TOKEN_BUDGET",
  "PAGE_READ_MAX_CHARS",
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_HEADERS",
];

export async function runEval(options: EvalOptions = {}): Promise<EvalReport> {
  const log = options.log ?? ((line: string) => console.error(line));
  const startedAt = new Date().toISOString();
  const web = await startEvalWeb();
  try {
    const all = await loadMissions(new Set(web.pages.map((page) => page.path)));
    const missions = pickMissions(all, options.missions);
    const server = options.database ? { ...options.database, stop: async () => {} } : await evalServer(log);
    const relay = options.serverMisbehaves ? await startMisbehavingRelay(options.serverMisbehaves, log) : undefined;
    try {
      const configured =
        options.modelEnv ??
        Object.fromEntries(
          MODEL_SETTINGS.flatMap((key) => (process.env[key]?.trim() ? [[key, process.env[key]!.trim()]] : [])),
        );
      // Through the relay, the model is the relay's; the other settings (CONTEXT_TOKEN_BUDGET …) stay as configured.
      const modelEnv = relay ? { ...configured, ...relay.modelEnv } : configured;
      const settings = parseEnv(modelEnv);
      const choice = chooseModel(undefined, settings);
      const offlineAnswers = choice.kind === "offline" || relay !== undefined;
      const timeoutMs = options.timeoutMs ?? (offlineAnswers ? 90_000 : 20 * 60_000);
      const judging = !offlineAnswers && options.judge !== false;
      const runs = await inBatches(missions, options.parallel ?? 1, async (mission) => {
        log(
          `[eval] ${mission.id}: running${options.break ? ` (broken: ${options.break})` : ""} on ${choice.modelId}${relay ? ` through a server that misbehaves: ${options.serverMisbehaves}` : ""} …`,
        );
        const run = await runMission(mission, {
          adminUrl: server.adminUrl,
          template: server.template,
          web,
          timeoutMs,
          break: options.break,
          leadInstructions: options.leadInstructions,
          researcherInstructions: options.researcherInstructions,
          workerEnv: modelEnv,
          chooseModel: (override) => chooseModel(override, settings),
          keepDatabase: options.keepDatabases,
          log,
        });
        if (!judging) return run;
        // After the team's usage was read: the grade is not the team's cost.
        const judge = await judgeBriefings(choice.model, mission, run.briefings).catch((error: unknown) => {
          log(
            `[eval] ${mission.id}: the judge did not answer: ${error instanceof Error ? error.message : String(error)}`,
          );
          return null;
        });
        return { ...run, judge };
      });
      return {
        version: 1,
        startedAt,
        model: choice.modelId,
        modelKind: choice.kind,
        break: options.break ?? null,
        ...(options.serverMisbehaves ? { serverMisbehaves: options.serverMisbehaves } : {}),
        commit: currentCommit(),
        missions: runs,
      };
    } finally {
      await relay?.close();
      await server.stop();
    }
  } finally {
    await web.close();
  }
}

function pickMissions(all: Mission[], wanted: readonly string[] | undefined): Mission[] {
  if (!wanted?.length) return all;
  const unknown = wanted.filter((id) => !all.some((mission) => mission.id === id));
  if (unknown.length)
    throw new Error(`No mission ${unknown.join(", ")}; there are: ${all.map((m) => m.id).join(", ")}`);
  return all.filter((mission) => wanted.includes(mission.id));
}

/** Runs `work` on every item, at most `size` at once, keeping the items' order in the results. */
async function inBatches<T, R>(items: readonly T[], size: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    for (let index = next++; index < items.length; index = next++) results[index] = await work(items[index]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(size, items.length)) }, lane));
  return results;
}

/**
 * The Postgres at DATABASE_URL when it is set (the eval only adds databases of its own there,
 * and drops them), else the one on 127.0.0.1:5432 when it answers, else an embedded one in a
 * temporary directory; with a template migrated once, which each mission copies.
 */
async function evalServer(log: (line: string) => void) {
  const configured = process.env.DATABASE_URL?.trim();
  if (configured && !(await postgresAnswers(configured)))
    throw new Error(
      `DATABASE_URL does not answer (${redactUrl(configured)}): start that Postgres, or unset DATABASE_URL for an embedded one.`,
    );
  const server = await localOrEmbeddedPostgres({
    preferredUrl: configured || LOCAL_POSTGRES_URL,
    purpose: "eval",
    log: (line) => log(`[eval] ${line}`),
  });
  const template = `cadre_eval_template_${process.pid}`;
  try {
    const admin = postgres(server.adminUrl, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`drop database if exists ${template} with (force)`);
      await admin.unsafe(`create database ${template}`);
    } finally {
      await admin.end({ timeout: 5 });
    }
    const url = withDatabase(server.adminUrl, template);
    await migrateDatabase(url);
    // pg-boss's schema too, so no mission's copy pays for creating it.
    const jobs = await JobQueue.start(url, "web", { quiet: true });
    await jobs.stop({ graceful: false, timeoutMs: 1000 });
  } catch (error) {
    await server.stop().catch(() => {});
    throw error;
  }
  return {
    adminUrl: server.adminUrl,
    template,
    stop: async () => {
      await dropDatabase(server.adminUrl, template).catch(() => {});
      await server.stop();
    },
  };
}

function currentCommit(): string | null {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return null;
  }
}
