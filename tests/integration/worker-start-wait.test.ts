// A plain `npm run worker` started while its database is full, then while it is down, waits
// through the whole of its start — not only the first probe: the job queue, the LISTEN and the
// liveness lock open connections of their own — one line per attempt, and is ready once the
// database has room or is back. Before, it exited within seconds ("too many clients", ECONNREFUSED).
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres, type LocalPostgres } from "../../scripts/lib/embedded-postgres";
import { migrateDatabase } from "@/lib/db/migrate";
import { JobQueue } from "@/lib/jobs/job-queue";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../support/worker-process";

const MAX_CONNECTIONS = 20;
const dataDir = path.join(os.tmpdir(), `cadre-worker-start-${process.pid}`);
let server: LocalPostgres;
let port: number;
const workers: WorkerProcess[] = [];
const hogs: postgres.Sql[] = [];

async function startServer() {
  server = await startEmbeddedPostgres({
    dataDir,
    database: "cadre",
    persistent: true,
    port,
    settings: { max_connections: String(MAX_CONNECTIONS) },
  });
  port = server.port;
}

beforeAll(async () => {
  await startServer();
  await migrateDatabase(server.url);
  const jobs = await JobQueue.start(server.url, "web", { quiet: true }); // pg-boss's schema
  await jobs.stop({ graceful: false, timeoutMs: 1000 });
}, 120_000);

afterAll(async () => {
  await Promise.all(hogs.splice(0).map((hog) => hog.end({ timeout: 1 }).catch(() => {})));
  await Promise.all(workers.map((worker) => worker.stop("SIGKILL")));
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Holds `count` connections open, each with a client of its own. */
async function hold(count: number) {
  for (let i = 0; i < count; i++) {
    const hog = postgres(server.url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
    await hog`select 1`;
    hogs.push(hog);
  }
}

describe("a worker waits for its database through the whole of its start", () => {
  it("full: it waits while its queue and LISTEN connections are refused, and is ready once there is room", {
    timeout: 120_000,
  }, async () => {
    // Room for the probe and one more, not for all a worker opens at start (DATABASE_POOL_SIZE=4: up to 7).
    await hold(MAX_CONNECTIONS - 2);
    const worker = startWorkerProcess({
      DATABASE_URL: server.url,
      DATABASE_POOL_SIZE: "4",
      DATABASE_WAIT_SECONDS: "120",
    });
    workers.push(worker);
    const output = () => worker.output.join("");
    await waitFor(async () => /Waiting for the database/.test(output()) || worker.child.exitCode !== null, {
      timeoutMs: 60_000,
      what: "the worker to say it waits",
    }).catch((error: Error) => {
      throw new Error(`${error.message}:\n${output()}`);
    });
    // Still waiting some seconds later: it did not give up (it used to exit within ~7 s).
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    expect(worker.child.exitCode, output()).toBeNull();
    expect(output()).not.toContain("[worker] ready");
    await Promise.all(hogs.splice(0).map((hog) => hog.end({ timeout: 1 })));
    await waitFor(async () => output().includes("[worker] ready") || worker.child.exitCode !== null, {
      timeoutMs: 60_000,
      what: "the worker to be ready",
    });
    expect(output()).toContain("[worker] ready");
    expect(output()).not.toContain("could not start");
    await worker.stop();
  });

  it("down: it waits while nothing answers, and is ready once the server is back", { timeout: 120_000 }, async () => {
    await server.stop();
    const worker = startWorkerProcess({ DATABASE_URL: server.url, DATABASE_WAIT_SECONDS: "120" });
    workers.push(worker);
    const output = () => worker.output.join("");
    await waitFor(async () => /Waiting for the database.*connection refused/.test(output()), {
      timeoutMs: 30_000,
      what: "the worker to say it waits",
    });
    await startServer();
    await waitFor(async () => output().includes("[worker] ready") || worker.child.exitCode !== null, {
      timeoutMs: 60_000,
      what: "the worker to be ready",
    });
    expect(output()).toContain("[worker] ready");
    await worker.stop();
  });
});
