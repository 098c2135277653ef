import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { migrateDatabase, redactUrl } from "../../src/lib/db/migrate";
import { PostgresSetupError, startEmbeddedPostgres, type LocalPostgres } from "./embedded-postgres";

const bin = (name: string) => path.join(process.cwd(), "node_modules", ".bin", name);

export function log(line: string): void {
  console.log(`[cadre] ${line}`);
}

/**
 * DATABASE_URL when it is set; otherwise an embedded Postgres under .data/ so a
 * fresh clone runs with no setup. Either way the migrations are applied. When that
 * cannot be done, says what to do in one line and exits (no stack trace).
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
    await migrateDatabase(url);
  } catch (error) {
    await local?.stop().catch(() => {});
    log(startFailure(error, Boolean(configured)));
    process.exit(1);
  }
  log("Migrations applied.");
  return { url, local };
}

/** One line for a database that could not be started or prepared, ending with what to do. */
function startFailure(error: unknown, configured: boolean): string {
  const message = (error instanceof Error ? error.message : String(error)).split("\n")[0]!.replace(/[.\s]+$/, "");
  if (error instanceof PostgresSetupError) return `${message}.`;
  if (configured) return `${message}. Check DATABASE_URL (is that Postgres running and reachable?).`;
  return `Could not start the embedded Postgres: ${message}. Set DATABASE_URL to a Postgres you run yourself.`;
}

/** Where the web server listens: everywhere only when sign-in protects it. */
export function webHost(): string {
  if (process.env.APP_PASSWORD?.trim()) return "0.0.0.0";
  log("APP_PASSWORD is not set: listening on 127.0.0.1 only. Set APP_PASSWORD to require sign-in and listen on all interfaces.");
  return "127.0.0.1";
}

/**
 * Runs the child processes until one of them exits or we get Ctrl-C / SIGTERM, then
 * stops all of them (SIGTERM, SIGKILL after a grace period) and the local Postgres.
 */
export async function supervise(
  /** `env`, when given, is the command's whole environment instead of the shared one. */
  commands: { name: string; command: string; args: string[]; env?: NodeJS.ProcessEnv }[],
  env: NodeJS.ProcessEnv,
  local?: LocalPostgres,
): Promise<never> {
  const children: { name: string; child: ChildProcess }[] = [];
  let stopping = false;

  const stopAll = async (exitCode: number) => {
    if (stopping) return;
    stopping = true;
    log("Stopping …");
    await Promise.all(
      children.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
            child.once("exit", () => {
              clearTimeout(killer);
              resolve();
            });
            child.kill("SIGTERM");
          }),
      ),
    );
    if (local) await local.stop().catch((error) => log(`Postgres did not stop cleanly: ${error}`));
    log("Stopped.");
    process.exit(exitCode);
  };

  // Postgres is stopped here, after the web server and worker are done with it
  // (scripts/lib/embedded-postgres.ts removes the library's own signal hooks).
  process.on("SIGINT", () => void stopAll(0));
  process.on("SIGTERM", () => void stopAll(0));

  for (const { name, command, args, env: own } of commands) {
    const executable = existsSync(bin(command)) ? bin(command) : command;
    const child = spawn(executable, args, { env: { NEXT_TELEMETRY_DISABLED: "1", ...(own ?? env) }, stdio: "inherit" });
    children.push({ name, child });
    child.on("exit", (code, signal) => {
      if (stopping) return;
      log(`${name} exited (${signal ?? `code ${code}`}); stopping the rest.`);
      void stopAll(code ?? 1);
    });
  }
  return new Promise<never>(() => {});
}
