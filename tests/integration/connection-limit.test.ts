// A Postgres at its connection limit (max_connections set low): requests answer 503 with
// Retry-After, logs carry no query parameters, the LISTENs lost meanwhile come back, and
// Cadre's and pg-boss's pools work again once connections are free. A worker started short of
// connections says so.
import { createHmac, randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { inspect } from "node:util";
import { NextRequest } from "next/server";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startEmbeddedPostgres, type LocalPostgres } from "../../scripts/lib/embedded-postgres";
import { migrateDatabase } from "@/lib/db/migrate";
import { JobQueue } from "@/lib/jobs/job-queue";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../support/worker-process";

const PASSWORD = "connection-limit-password";
const MAX_CONNECTIONS = 24;
const dataDir = path.join(os.tmpdir(), `cadre-connection-limit-${process.pid}`);
let server: LocalPostgres;
let worker: WorkerProcess | undefined;
const hogs: postgres.Sql[] = [];

beforeAll(async () => {
  server = await startEmbeddedPostgres({
    dataDir,
    database: "cadre",
    persistent: false,
    settings: { max_connections: String(MAX_CONNECTIONS) },
  });
  await migrateDatabase(server.url);
  const jobs = await JobQueue.start(server.url, "web", { quiet: true }); // creates pg-boss's schema
  await jobs.stop({ graceful: false, timeoutMs: 1000 });
  // Read once per process (env()), so before anything reads it.
  process.env.DATABASE_URL = server.url;
  process.env.APP_PASSWORD = PASSWORD;
  process.env.DATABASE_POOL_SIZE = "4";
}, 120_000);

afterAll(async () => {
  await releaseHogs();
  await worker?.stop("SIGKILL");
  const { closeWebTestDatabase } = await import("../support/web");
  await closeWebTestDatabase(undefined);
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Takes every connection the server will still give, each held open by a client of its own. */
async function fillUp(): Promise<void> {
  for (let i = 0; i < MAX_CONNECTIONS + 5; i++) {
    const hog = postgres(server.url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
    try {
      await hog`select 1`;
      hogs.push(hog);
    } catch (error) {
      await hog.end({ timeout: 0 });
      expect(String(error)).toMatch(/too many clients|remaining connection slots/);
      return;
    }
  }
  throw new Error("the server never refused a connection");
}

async function releaseHogs(): Promise<void> {
  await Promise.all(hogs.splice(0).map((hog) => hog.end({ timeout: 1 }).catch(() => {})));
}

/** Ends every connection but the hogs' (the app's pools and LISTENs) from one hog, then takes the freed slots. */
async function cutTheAppsConnections(): Promise<number> {
  const [admin] = hogs;
  const hogPids = (await Promise.all(
    hogs.map(async (hog) => (await hog<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid),
  )) as number[];
  const others = await admin!<
    { pid: number }[]
  >`select pid from pg_stat_activity where backend_type = 'client backend'`;
  const cut = others.filter(({ pid }) => !hogPids.includes(pid));
  for (const { pid } of cut) await admin!`select pg_terminate_backend(${pid})`;
  await fillUp();
  return cut.length;
}

describe("a database at its connection limit", () => {
  it("answers 503 while full, leaks no parameters, and recovers its pools and LISTENs after", {
    timeout: 120_000,
  }, async () => {
    const { subscribeToEvents, EVENTS_CHANNEL } = await import("@/lib/http/events");
    const { GET: health } = await import("@/app/api/health/route");
    // Next passes the request; the handler's own signature leaves it out.
    const listTeams = (await import("@/app/api/teams/route")).GET as unknown as (request: Request) => Promise<Response>;
    const { startSession } = await import("@/lib/auth/auth");
    const { database } = await import("@/lib/db/client");
    const { webEngine } = await import("@/lib/http/server");

    const { token } = await startSession(database().db);
    const cookie = `cadre_session=${token}`;
    const asPerson = () =>
      new Request("http://127.0.0.1:3000/api/teams", { headers: { cookie, host: "127.0.0.1:3000" } });
    expect((await listTeams(asPerson())).status).toBe(200);
    const engine = await webEngine();

    const heard: string[] = [];
    let gaps = 0;
    await subscribeToEvents(
      (event) => heard.push(event.id),
      () => gaps++,
    );
    const logged: string[] = [];
    const capture = (...args: unknown[]) =>
      void logged.push(args.map((arg) => (typeof arg === "string" ? arg : inspect(arg, { depth: 5 }))).join(" "));
    const errors = vi.spyOn(console, "error").mockImplementation(capture);
    const lines = vi.spyOn(console, "log").mockImplementation(capture);
    try {
      await fillUp();
      expect(await cutTheAppsConnections()).toBeGreaterThanOrEqual(3); // the query pool, pg-boss's, the LISTEN

      // A route that needs a connection: 503 with Retry-After and one line, not a 500 with a stack.
      const refused = await listTeams(asPerson());
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
      expect((await refused.json()).error.code).toBe("unavailable:database");
      expect((await health()).status).toBe(503);

      // The proxy's session check fails for want of a connection: its log line carries the
      // query, never the token's hash it was given.
      const { proxy } = await import("@/proxy");
      await proxy(new NextRequest("http://127.0.0.1:3000/api/teams", { headers: { cookie } }));
      // A page is not rendered meanwhile: 503 and the plain page that tries again (page-outage.ts).
      const page = await proxy(new NextRequest("http://127.0.0.1:3000/teams", { headers: { cookie } }));
      expect(page.status).toBe(503);
      expect(page.headers.get("retry-after")).toMatch(/^\d+$/);
      const hash = createHmac("sha256", PASSWORD).update(token).digest("hex");
      const proxyLine = logged.find((line) => line.includes("[auth] proxy could not check a session"));
      expect(proxyLine).toBeDefined();
      expect(logged.join("\n")).not.toContain(hash);
      expect(logged.join("\n")).not.toMatch(/params:/);

      // The LISTEN was cut and cannot come back while the server is full; it says so once.
      await waitFor(async () => logged.some((line) => line.includes("lost the LISTEN for live updates")), {
        timeoutMs: 15_000,
        what: "the lost LISTEN to be reported",
      });
    } finally {
      await releaseHogs();
    }

    // Once connections are free: the LISTEN is back (subscribers told of the gap), and
    // events flow again; both pools answer.
    await waitFor(async () => gaps > 0, { timeoutMs: 20_000, what: "the LISTEN to come back" });
    errors.mockRestore();
    lines.mockRestore();
    expect(logged.some((line) => line.includes("listening for live updates again"))).toBe(true);
    const probe = randomBytes(8).toString("hex");
    await database()
      .sql`select pg_notify(${EVENTS_CHANNEL}, ${JSON.stringify({ table: "teams", op: "update", id: probe })})`;
    await waitFor(async () => heard.includes(probe), { timeoutMs: 5_000, what: "an event after the LISTEN came back" });
    expect((await listTeams(asPerson())).status).toBe(200);
    expect((await health()).status).toBe(200);
    const { createTeam } = await import("@/lib/domain/teams");
    await createTeam(engine, { name: "After the limit", mission: "Keep watch." }); // a job is sent through pg-boss's pool
  });

  it("a worker started short of connections says so, and works once they are free", { timeout: 90_000 }, async () => {
    await fillUp();
    // Leave four free: fewer than a worker may open (DATABASE_POOL_SIZE=4: 2 + 2 + 3 dedicated).
    await Promise.all(hogs.splice(0, 4).map((hog) => hog.end({ timeout: 1 })));
    worker = startWorkerProcess({ DATABASE_URL: server.url, DATABASE_POOL_SIZE: "4" });
    const output = () => worker!.output.join("");
    await waitFor(async () => output().includes("[worker] database: this worker may open up to 7 connections"), {
      timeoutMs: 30_000,
      what: "the connection line",
    });
    await waitFor(async () => /\[worker\] warning: only \d connections are free/.test(output()), {
      timeoutMs: 5_000,
      what: "the warning",
    });
    await releaseHogs();
    await waitFor(async () => output().includes("[worker] ready"), {
      timeoutMs: 30_000,
      what: "the worker to be ready",
    });
    expect(output()).not.toMatch(/\n\s+at /); // no stack
  });
});
