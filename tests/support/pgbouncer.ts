// A real PgBouncer in transaction mode in front of a Postgres, for the pooler tests: Debian's
// /usr/sbin/pgbouncer (`.ci/run` installs it), its config in a temporary directory, on a free port.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export type PgBouncer = {
  port: number;
  url: (database: string) => string;
  output: string[];
  stop: () => Promise<void>;
};

const BINARY = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].find((candidate) => existsSync(candidate));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

/** Starts PgBouncer (pool_mode = transaction) in front of `upstream` (host:port, trust auth as postgres). */
export async function startPgBouncer(upstream = { host: "127.0.0.1", port: 5432 }): Promise<PgBouncer> {
  if (!BINARY) throw new Error("pgbouncer is not installed (apt-get install pgbouncer; .ci/run does)");
  const dir = await mkdtemp(path.join(os.tmpdir(), "cadre-pgbouncer-"));
  await chmod(dir, 0o777); // it refuses to run as root: it runs as postgres, and writes here
  const port = await freePort();
  const ini = path.join(dir, "pgbouncer.ini");
  await writeFile(
    ini,
    [
      "[databases]",
      `* = host=${upstream.host} port=${upstream.port} user=postgres`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      "auth_type = any",
      "pool_mode = transaction",
      "max_client_conn = 500",
      "default_pool_size = 20",
      "ignore_startup_parameters = extra_float_digits",
      `pidfile = ${path.join(dir, "pgbouncer.pid")}`,
      "",
    ].join("\n"),
  );
  await chmod(ini, 0o644);
  const asRoot = process.getuid?.() === 0;
  const child: ChildProcess = spawn(BINARY, [...(asRoot ? ["-u", "postgres"] : []), ini], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  child.stdout?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => {
        socket.destroy();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    });
    if (up) break;
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`pgbouncer did not start: ${output.join("").slice(-1000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    port,
    output,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}?pgbouncer=true`,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
