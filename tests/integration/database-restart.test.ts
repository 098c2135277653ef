// Postgres restarted in the middle of a work session: the web process and the worker
// recover by themselves and the session's work finishes.
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres, type LocalPostgres } from "../../scripts/lib/embedded-postgres";
import { assignTask } from "@/lib/domain/tasks";
import { createDatabase, type Database } from "@/lib/db/client";
import { migrateDatabase } from "@/lib/db/migrate";
import { getAllMessages, getBackgroundConversation, listTasksByAgent } from "@/lib/db/queries";
import { JobQueue } from "@/lib/jobs/job-queue";
import { stopWebProcess } from "../support/web";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import { systemText, teamPlay, toolNames } from "../support/team-play";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../support/worker-process";

const dataDir = path.join(os.tmpdir(), `cadre-restart-${process.pid}`);
let server: LocalPostgres;
let database: Database;
let openai: FakeOpenAI;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  server = await startEmbeddedPostgres({ dataDir, database: "cadre", persistent: true });
  await migrateDatabase(server.url);
  const jobs = await JobQueue.start(server.url, "web", { quiet: true });
  await jobs.stop({ graceful: false, timeoutMs: 1000 });
  database = createDatabase(server.url, { max: 3 });
  process.env.DATABASE_URL = server.url;
}, 120_000);
afterAll(async () => {
  await worker?.stop("SIGKILL");
  await stopWebProcess();
  await database?.close();
  await openai?.close();
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe("a database restart mid-session", () => {
  it("is survived by the worker and the web process", { timeout: 150_000 }, async () => {
    const { lead } = await createTeamFixture(database.db);
    openai = await startFakeOpenAI(async (request) => {
      if (!systemText(request).includes(lead.name) || request.response_format || toolNames(request).length === 0)
        return teamPlay(request);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const rounds = request.messages.filter((m) => m.role === "tool").length;
      return rounds < 10
        ? { toolCalls: [{ name: "searchKnowledge", arguments: { query: `round ${rounds}` } }] }
        : { text: "All ten rounds done." };
    });
    worker = startWorkerProcess({
      DATABASE_URL: server.url,
      OPENAI_BASE_URL: openai.url,
      LLM_MODEL: "fake-model",
      SESSION_STALE_SECONDS: "3",
    });
    await waitFor(async () => worker!.output.join("").includes("[worker] ready"), {
      timeoutMs: 30_000,
      what: "the worker",
    });
    const jobs = await JobQueue.start(server.url, "web", { quiet: true });
    const task = await assignTask(database.db, jobs, { agentId: lead.id, source: "user", title: "Ten rounds" });
    await jobs.stop({ graceful: false, timeoutMs: 1000 });
    const conversation = await getBackgroundConversation(database.db, lead.id);
    await waitFor(
      async () => (await getAllMessages(database.db, conversation.id)).filter((m) => m.role === "tool").length >= 3,
      {
        timeoutMs: 30_000,
        what: "three steps",
      },
    );

    const { GET: health } = await import("@/app/api/health/route");
    const before = await health();
    expect(before.status, await before.clone().text()).toBe(200);
    const port = server.port;
    await server.stop();
    const down = Date.now();
    expect((await health()).status).toBe(503);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    server = await startEmbeddedPostgres({ dataDir, database: "cadre", persistent: true, port });
    const upAfter = Date.now() - down;

    // The web process answers again without a restart of its own.
    await waitFor(async () => (await health()).status === 200, { timeoutMs: 20_000, what: "/api/health to recover" });
    // The worker picks the session up again and finishes it.
    await waitFor(
      async () => (await listTasksByAgent(database.db, lead.id).catch(() => []))[0]?.status === "completed",
      {
        timeoutMs: 90_000,
        what: "the task to complete after the restart",
      },
    ).catch((error) => {
      throw new Error(`${error.message}\n${worker!.output.join("").slice(-3000)}`);
    });
    const log = await getAllMessages(database.db, conversation.id);
    const calls = log.flatMap((m) => m.toolCalls ?? []);
    for (const call of calls)
      expect(log.filter((m) => m.role === "tool" && m.toolCallId === call.toolCallId)).toHaveLength(1);
    console.log(
      `[database restart] Postgres down for ${upAfter} ms; task ${task.id.slice(0, 8)} completed; ${calls.length} tool calls, each with one result; recovered in ${Date.now() - down} ms`,
    );
  });
});
