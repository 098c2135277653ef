// `npm start`'s supervisor with a worker that fails at every start (its database does not exist):
// after 5 exits the person gets one alert with the worker's last line, the supervisor keeps
// starting it, and the web server answers all along. Apart from supervisor.test.ts so the two run side by side.
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/lib/embedded-postgres";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTeamFixture } from "../support/fixtures";
import { waitFor } from "../support/worker-process";
import { buildIfStale } from "./app-server";

const root = path.resolve(import.meta.dirname, "../..");

const count = (text: string, pattern: RegExp) => text.match(new RegExp(pattern.source, "gm"))?.length ?? 0;

describe("a worker that keeps crashing", () => {
  let database: TestDatabase;
  let supervisor: ChildProcess | undefined;
  let output = "";

  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase({ max: 2 });
  }, 300_000);

  afterEach((test) => {
    if (test.task.result?.state === "fail") console.error(output.split("\n").slice(-60).join("\n"));
  });

  afterAll(async () => {
    if (supervisor && supervisor.exitCode === null) {
      const exited = new Promise((resolve) => supervisor!.once("exit", resolve));
      supervisor.kill("SIGTERM");
      await exited;
    }
    await database?.drop();
  }, 60_000);

  it("raises one alert with its last error, keeps trying, and the web server stays up", {
    timeout: 60_000,
  }, async () => {
    const { team } = await createTeamFixture(database.db, { name: "Battery Lab" });
    const port = await freePort();
    // The supervisor `npm start` runs (scripts/start.ts), with a worker whose database does not
    // exist: it fails at every start. Short waits so five exits take seconds, not a minute.
    const badUrl = new URL(database.url);
    badUrl.pathname = "/no_such_database";
    const script = `
      const { supervise } = await import("./scripts/lib/processes.ts");
      const env = { ...process.env, NODE_ENV: "production" };
      await supervise(
        [
          { name: "web", command: "next", args: ["start", "--hostname", "127.0.0.1", "--port", process.env.PORT] },
          { name: "worker", command: process.execPath, args: ["--import", "tsx", "src/worker/index.ts"], env: { ...env, DATABASE_URL: process.env.BAD_WORKER_DATABASE_URL }, restart: true },
        ],
        env,
        undefined,
        { firstDelayMs: 300, maxDelayMs: 1000, steadyAfterMs: 60_000, alertAfterExits: 5, alertWindowMs: 600_000 },
      );`;
    supervisor = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        BAD_WORKER_DATABASE_URL: badUrl.toString(),
        PORT: String(port),
        NEXT_TELEMETRY_DISABLED: "1",
        LEAD_SCHEDULE: "off",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    supervisor.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    supervisor.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const baseUrl = `http://127.0.0.1:${port}`;

    const alerts = () => database.sql<{ title: string; summary: string; teamId: string }[]>`
      select title, summary, team_id as "teamId" from inbox_items where type = 'alert' and dedupe_key like 'worker-crashing:%'`;
    const [alert] = await waitFor(
      async () => {
        const found = await alerts();
        return found.length > 0 && found;
      },
      { timeoutMs: 45_000, what: "the alert that the worker keeps stopping" },
    );
    expect(alert!.teamId).toBe(team.id);
    expect(alert!.title).toBe("The background worker keeps stopping");
    expect(alert!.summary).toMatch(
      /^It stopped 5 times in 10 minutes and is started again every 1 s\. Last: could not start: database "no_such_database" does not exist$/,
    );

    // It keeps trying; another exit raises nothing more, and the web server answers all along.
    const exitsSoFar = count(output, /^\[cadre\] The worker exited with code 1;/);
    await waitFor(async () => count(output, /^\[cadre\] The worker exited with code 1;/) >= exitsSoFar + 1, {
      timeoutMs: 20_000,
      what: "another exit",
    });
    expect(await alerts()).toHaveLength(1);
    expect((await fetch(`${baseUrl}/api/health`)).status).toBe(200);
    expect(count(output, /^\[cadre\] The worker keeps stopping: the inbox has an alert about it\.$/)).toBe(1);
    expect(output).not.toMatch(/stopping the rest/);
    expect(output).not.toMatch(/^\s+at /m);
    // Each failed start is one line of the worker's.
    expect(
      count(output, /^\[worker\] could not start: database "no_such_database" does not exist$/),
    ).toBeGreaterThanOrEqual(6);
  });
});

describe("the crash alert before any team exists", () => {
  let empty: TestDatabase;
  beforeAll(async () => {
    empty = await createTestDatabase({ max: 2 });
  });
  afterAll(async () => {
    await empty?.drop();
  });

  /** Runs the supervisor's alert helper as it does; resolves with its exit code and output. */
  const raise = (url: string) =>
    new Promise<{ code: number | null; output: string }>((resolve) => {
      const report = {
        host: "test-host",
        exits: 5,
        windowMinutes: 10,
        since: new Date().toISOString(),
        lastError: "killed by SIGKILL",
        retrySeconds: 30,
      };
      const helper = spawn(
        process.execPath,
        ["--import", "tsx", "scripts/worker-crash-alert.ts", JSON.stringify(report)],
        {
          cwd: root,
          env: { ...process.env, DATABASE_URL: url },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      let output = "";
      helper.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
      helper.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
      helper.on("exit", (code) => resolve({ code, output }));
    });

  it("is not counted as raised, so the supervisor asks again once a team exists", { timeout: 60_000 }, async () => {
    const none = await raise(empty.url);
    expect(none.output).toContain("there is no team yet");
    expect(none.code).not.toBe(0); // the supervisor's "alerted" stays unset
    await createTeamFixture(empty.db);
    const raised = await raise(empty.url);
    expect(raised.output).toContain("the inbox has an alert about it");
    expect(raised.code).toBe(0);
  });
});
