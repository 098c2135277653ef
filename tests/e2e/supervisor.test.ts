// `npm start` keeps the web server up when a background worker dies: a killed worker is started
// again (and waits for a database that is full), and a database that refuses or is full at
// start-up is waited for with one line per attempt. (A worker that keeps crashing: worker-crash-alert.test.ts.)
import net from "node:net";
import postgres from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/lib/embedded-postgres";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { waitFor } from "../support/worker-process";
import { buildIfStale, startApp, type AppServer } from "./app-server";

/** What Postgres answers a client when max_connections is reached (an ErrorResponse before authentication). */
function tooManyClients(): Buffer {
  const fields = Buffer.concat(
    [
      ["S", "FATAL"],
      ["V", "FATAL"],
      ["C", "53300"],
      ["M", "sorry, too many clients already"],
    ].map(([kind, text]) => Buffer.from(`${kind}${text}\0`)),
  );
  const body = Buffer.concat([fields, Buffer.from([0])]);
  const header = Buffer.alloc(5);
  header.write("E", 0);
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

/**
 * A TCP door in front of the test's Postgres: closed (connection refused), "full" (every new
 * connection gets "too many clients") or open (forwarded). Connections already through stay.
 */
async function databaseDoor(target: URL) {
  const port = await freePort();
  let mode: "full" | "open" = "full";
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => {});
    if (mode === "full") {
      client.once("data", () => client.end(tooManyClients()));
      return;
    }
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(upstream);
    upstream.on("close", () => sockets.delete(upstream));
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    upstream.on("error", close);
    client.on("close", close);
    upstream.on("close", close);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const url = new URL(target);
  url.port = String(port);
  return {
    url: url.toString(),
    listen: (next: "full" | "open") =>
      new Promise<void>((resolve) => {
        mode = next;
        if (server.listening) return resolve();
        server.listen(port, "127.0.0.1", () => resolve());
      }),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
    },
  };
}

async function health(baseUrl: string): Promise<{ status: number; workersAlive: number }> {
  const response = await fetch(`${baseUrl}/api/health`);
  const body = (await response.json()) as { workers?: { alive: number } };
  return { status: response.status, workersAlive: body.workers?.alive ?? 0 };
}

/** The live workers' process ids, from their `workers` rows (id `host:pid`). */
async function liveWorkerPids(sql: postgres.Sql): Promise<number[]> {
  const rows = await sql<
    { id: string }[]
  >`select id from workers where stopped_at is null and heartbeat_at > now() - interval '5 seconds'`;
  return rows.map((row) => Number(row.id.split(":").at(-1)));
}

const count = (text: string, pattern: RegExp) => text.match(new RegExp(pattern.source, "gm"))?.length ?? 0;

describe("npm start when the worker dies or the database is not ready", () => {
  let database: TestDatabase;
  let door: Awaited<ReturnType<typeof databaseDoor>>;
  let app: AppServer | undefined;
  let sql: postgres.Sql;

  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase({ max: 2 });
    door = await databaseDoor(new URL(database.url));
    sql = postgres(database.url, { max: 1, onnotice: () => {} });
  }, 300_000);

  afterEach((test) => {
    if (test.task.result?.state === "fail") console.error(app?.output().split("\n").slice(-60).join("\n"));
  });

  afterAll(async () => {
    await app?.stop();
    await door?.close();
    await sql?.end({ timeout: 5 });
    await database?.drop();
  }, 60_000);

  it("waits for a database that refuses, then is full, with one line per attempt, then comes up", {
    timeout: 60_000,
  }, async () => {
    // Nothing listens at first; once start-up has said so, the door answers "too many clients";
    // once it has said that too, the door opens.
    const steps: Promise<void>[] = [];
    let step = 0;
    app = await startApp({ DATABASE_URL: door.url }, [], {
      onOutput: (output) => {
        if (step === 0 && /Waiting for the database .*connection refused/.test(output)) {
          step = 1;
          steps.push(door.listen("full"));
        } else if (step === 1 && /Waiting for the database .*too many clients/.test(output)) {
          step = 2;
          steps.push(door.listen("open"));
        }
      },
    });
    await Promise.all(steps);
    const output = app.output();
    expect(step).toBe(2);
    expect(
      count(
        output,
        /^\[cadre\] Waiting for the database at .*: nothing answers there yet \(connection refused\); trying again in \d+ s \(attempt \d+\)\.$/,
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(
      count(
        output,
        /^\[cadre\] Waiting for the database at .*: it has no connections to spare \(too many clients\); trying again in \d+ s \(attempt \d+\)\.$/,
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(output).not.toMatch(/^\s+at /m); // no stack
    expect(output).toContain("[cadre] Migrations applied.");
    expect((await health(app.url)).status).toBe(200);
  });

  it("starts a killed worker again while the web server keeps answering; the new one waits for a full database", {
    timeout: 120_000,
  }, async () => {
    const [first] = await waitFor(
      async () => {
        const pids = await liveWorkerPids(sql);
        return pids.length === 1 && pids;
      },
      { timeoutMs: 20_000, what: "the first worker" },
    );
    process.kill(first!, "SIGKILL");

    // The web server answers all along, and a new worker comes up within the first wait (1 s) and its start.
    const started = Date.now();
    const second = await waitFor(
      async () => {
        expect((await health(app!.url)).status).toBe(200);
        return (await liveWorkerPids(sql)).find((pid) => pid !== first);
      },
      { timeoutMs: 15_000, what: "a new worker after the kill" },
    );
    expect(Date.now() - started).toBeLessThan(15_000);
    expect((await health(app!.url)).workersAlive).toBeGreaterThanOrEqual(1);
    expect(app!.output()).toMatch(
      /^\[cadre\] The worker was killed \(SIGKILL\); starting it again in 1 s\. The web server keeps running\.$/m,
    );

    // Killed again while the database is full: the next worker says so in one line per attempt and waits.
    await door.listen("full");
    process.kill(second, "SIGKILL");
    await waitFor(
      async () => /^\[worker\] Waiting for the database at .*too many clients.*\(attempt 1\)\.$/m.test(app!.output()),
      {
        // Its restart waits 1–2 s (backoff), then Node and tsx start: slow on a loaded machine.
        timeoutMs: 40_000,
        what: "the restarted worker to wait for the full database",
      },
    );
    expect([200, 503]).toContain((await health(app!.url)).status); // it answers (503 if it needed a new connection)
    await door.listen("open");
    const third = await waitFor(
      async () => (await liveWorkerPids(sql)).find((pid) => pid !== first && pid !== second),
      {
        timeoutMs: 20_000,
        what: "a worker once the database has room",
      },
    );
    expect(third).toBeGreaterThan(0);
    expect((await health(app!.url)).status).toBe(200);
    expect(app!.output()).not.toMatch(/^\s+at /m);
    expect(app!.output()).not.toMatch(/stopping the rest/);
  });
});
