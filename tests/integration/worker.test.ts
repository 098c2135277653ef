// Real worker processes against a fake OpenAI-compatible server: the full flow through
// @ai-sdk/openai, and two workers sharing one agent without ever running it twice.
import { asc, eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { assignTask } from "@/lib/domain/tasks";
import {
  getAllMessages,
  getBackgroundConversation,
  getForegroundConversation,
  getTask,
  listInboxItems,
  listTasksByAgent,
} from "@/lib/db/queries";
import { usage, workSessions } from "@/lib/db/schema";
import { JobQueue } from "@/lib/jobs/job-queue";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai";
import { systemText, teamPlay, toolNames } from "../support/team-play";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../support/worker-process";

let database: TestDatabase;
let jobs: JobQueue;
let openai: FakeOpenAI;
let tavily: FakeTavily;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  jobs = await JobQueue.start(database.url, "web", { quiet: true });
  openai = await startFakeOpenAI(teamPlay);
  tavily = await startFakeTavily();
});
// Each test starts the workers it needs; none outlives its test to steal the next one's jobs.
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop("SIGKILL")));
});
afterAll(async () => {
  await jobs?.stop({ graceful: false, timeoutMs: 1000 });
  await openai?.close();
  await tavily?.close();
  await database?.drop();
});

function startWorker(extra: Record<string, string> = {}) {
  const worker = startWorkerProcess({
    DATABASE_URL: database.url,
    OPENAI_BASE_URL: openai.url,
    LLM_MODEL: "fake-model",
    TAVILY_API_KEY: "tvly-test",
    TAVILY_BASE_URL: tavily.url,
    WORKER_CONCURRENCY: "4",
    ...extra,
  });
  workers.push(worker);
  return worker;
}

describe("worker processes", () => {
  it("run the full flow through @ai-sdk/openai against an OpenAI-compatible server", { timeout: 60_000 }, async () => {
    const worker = startWorker();
    await waitFor(async () => worker.output.join("").includes("[worker] ready"), {
      timeoutMs: 20_000,
      what: "the worker",
    });
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    await assignTask(database.db, jobs, { agentId: lead.id, source: "user", title: "Research solar panel prices" });

    const [item] = await waitFor(
      async () => {
        const items = await listInboxItems(database.db);
        return items.length ? items : null;
      },
      { timeoutMs: 30_000, what: "the briefing" },
    ).catch((error) => {
      throw new Error(`${error.message}\nworker output:\n${worker.output.join("")}`);
    });
    expect(item).toMatchObject({ title: "Solar prices fell", agentId: lead.id });
    const foreground = await getAllMessages(database.db, (await getForegroundConversation(database.db, lead.id)).id);
    expect(foreground.at(-1)!.content).toBe("**Solar prices fell**\n\n## Solar\nPrices fell 12% this year.");
    const scoutLog = await getAllMessages(
      database.db,
      (await getBackgroundConversation(database.db, subordinates[0]!.id)).id,
    );
    expect(scoutLog.flatMap((m) => m.toolCalls?.map((c) => c.toolName) ?? [])).toEqual([
      "tavilySearch",
      "addKnowledgeItem",
      "reportToLead",
    ]);
    expect(tavily.requests).toHaveLength(1);
    // The requests really went through the Chat Completions API with the tools attached.
    expect(openai.requests.some((r) => r.model === "fake-model" && toolNames(r).includes("delegateToAgent"))).toBe(
      true,
    );
    const usageRows = await database.db.select().from(usage).where(eq(usage.model, "fake-model"));
    expect(usageRows.length).toBeGreaterThan(0);
    await waitFor(async () => (await listTasksByAgent(database.db, lead.id))[0]?.status === "completed", {
      timeoutMs: 10_000,
      what: "the lead's task to complete",
    });
    await worker.stop();
  });

  it("two workers, one agent: never two sessions at once, and no wake-up lost", async () => {
    const { lead } = await createTeamFixture(database.db);
    // Each session takes a while, so wake-ups keep arriving while one runs.
    let inFlight = 0;
    let maxInFlight = 0;
    openai.setHandler(async (request) => {
      if (!systemText(request).includes(lead.name) || request.response_format || toolNames(request).length === 0)
        return teamPlay(request);
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 40));
      inFlight -= 1;
      const last = request.messages.at(-1)!;
      return last.role === "tool"
        ? { text: "Checked." }
        : { toolCalls: [{ name: "searchKnowledge", arguments: { query: "anything" } }] };
    });
    const pair = [startWorker(), startWorker()];
    await waitFor(async () => pair.every((worker) => worker.output.join("").includes("[worker] ready")), {
      timeoutMs: 20_000,
      what: "both workers",
    });

    const titles = Array.from({ length: 12 }, (_, i) => `Check ${i}`);
    // Bursts of three: within a burst, wake-ups land while a session runs; between
    // bursts the session has ended, so a new one starts, on either worker.
    const sessionsOf = () => database.db.select().from(workSessions).where(eq(workSessions.agentId, lead.id));
    for (const [i, title] of titles.entries()) {
      await assignTask(database.db, jobs, { agentId: lead.id, source: "user", title });
      if (i % 3 < 2) await new Promise((resolve) => setTimeout(resolve, Math.random() * 60));
      else {
        await waitFor(
          async () => {
            const rows = await sessionsOf();
            return rows.length > 0 && rows.every((row) => row.status !== "running");
          },
          { timeoutMs: 30_000, what: "the burst's session to end" },
        );
      }
    }
    await waitFor(
      async () => (await listTasksByAgent(database.db, lead.id)).every((task) => task.status === "completed"),
      {
        timeoutMs: 60_000,
        what: "every task to complete",
      },
    ).catch(async (error) => {
      throw new Error(
        `${error.message}: ${JSON.stringify((await listTasksByAgent(database.db, lead.id)).map((t) => t.status))}\n${workers.map((w) => w.output.join("")).join("\n---\n")}`,
      );
    });

    expect(await listTasksByAgent(database.db, lead.id)).toHaveLength(titles.length);
    const sessionRows = await database.db.select().from(workSessions).where(eq(workSessions.agentId, lead.id));
    expect(sessionRows.length).toBeGreaterThan(1);
    expect(maxInFlight).toBe(1);
    const sessions = await database.db
      .select()
      .from(workSessions)
      .where(eq(workSessions.agentId, lead.id))
      .orderBy(asc(workSessions.startedAt));
    for (let i = 1; i < sessions.length; i++) {
      expect(sessions[i - 1]!.endedAt!.getTime()).toBeLessThanOrEqual(sessions[i]!.startedAt.getTime());
    }
    console.log(
      `[two workers] ${titles.length} tasks, ${sessions.length} sessions, workers: ${[...new Set(sessions.map((s) => s.worker))].length}`,
    );
  });

  it("a killed worker's session is taken up by another worker within 30 s", async () => {
    const { lead } = await createTeamFixture(database.db);
    let hung = false;
    openai.setHandler(async (request) => {
      if (!systemText(request).includes(lead.name) || request.response_format || toolNames(request).length === 0)
        return teamPlay(request);
      if (!hung) {
        hung = true;
        return { fault: "hang" };
      }
      return request.messages.at(-1)!.role === "tool"
        ? { text: "Recovered and done." }
        : { toolCalls: [{ name: "searchKnowledge", arguments: { query: "x" } }] };
    });
    const doomed = startWorker();
    const survivor = startWorker();
    await waitFor(async () => [doomed, survivor].every((w) => w.output.join("").includes("[worker] ready")), {
      timeoutMs: 20_000,
      what: "both workers",
    });
    // Only the doomed worker may take the first session: the survivor starts working later.
    const task = await assignTask(database.db, jobs, { agentId: lead.id, source: "user", title: "Survive a crash" });
    const first = await waitFor(
      async () => {
        const [running] = await database.db.select().from(workSessions).where(eq(workSessions.agentId, lead.id));
        return hung && running ? running : null;
      },
      { timeoutMs: 20_000, what: "the first session to start" },
    );
    const victim = workers.find((w) => first.worker.endsWith(`:${w.child.pid}`))!;
    const killedAt = Date.now();
    await victim.stop("SIGKILL");
    const retaken = await waitFor(
      async () => {
        const rows = await database.db.select().from(workSessions).where(eq(workSessions.agentId, lead.id));
        return rows.find((row) => (row.id !== first.id && row.status !== "running" ? false : row.id !== first.id));
      },
      { timeoutMs: 40_000, what: "another worker to take the session" },
    );
    const seconds = (retaken.startedAt.getTime() - killedAt) / 1000;
    console.log(`[dead worker] session retaken ${seconds.toFixed(1)} s after kill -9`);
    expect(seconds).toBeLessThan(30);
    await waitFor(async () => (await getTask(database.db, task.id))?.status === "completed", {
      timeoutMs: 20_000,
      what: "the task",
    });
    const [old] = await database.db.select().from(workSessions).where(eq(workSessions.id, first.id));
    expect(old!.status).toBe("interrupted");
  }, 90_000);

  it("SIGTERM: the worker takes no new jobs, ends the step in flight, exits; another worker continues", async () => {
    const { lead } = await createTeamFixture(database.db);
    openai.setHandler(async (request) => {
      if (!systemText(request).includes(lead.name) || request.response_format || toolNames(request).length === 0)
        return teamPlay(request);
      const rounds = request.messages.filter((m) => m.role === "tool").length;
      await new Promise((resolve) => setTimeout(resolve, 250));
      return rounds < 8
        ? { toolCalls: [{ name: "searchKnowledge", arguments: { query: `round ${rounds}` } }] }
        : { text: "All rounds done." };
    });
    const pair = [startWorker(), startWorker()];
    await waitFor(async () => pair.every((w) => w.output.join("").includes("[worker] ready")), {
      timeoutMs: 20_000,
      what: "both workers",
    });
    await assignTask(database.db, jobs, { agentId: lead.id, source: "user", title: "Eight rounds" });
    const conversation = await getBackgroundConversation(database.db, lead.id);
    const first = await waitFor(
      async () => {
        const [session] = await database.db.select().from(workSessions).where(eq(workSessions.agentId, lead.id));
        const results = (await getAllMessages(database.db, conversation.id)).filter((m) => m.role === "tool").length;
        return session && results >= 2 ? session : null;
      },
      { timeoutMs: 20_000, what: "two steps" },
    );
    const leaving = pair.find((w) => first.worker.endsWith(`:${w.child.pid}`))!;
    const exitCode = await leaving.stop("SIGTERM");
    expect(exitCode).toBe(0);
    await waitFor(async () => (await listTasksByAgent(database.db, lead.id))[0]?.status === "completed", {
      timeoutMs: 30_000,
      what: "the task",
    });
    const sessions = await waitFor(
      async () => {
        const rows = await database.db
          .select()
          .from(workSessions)
          .where(eq(workSessions.agentId, lead.id))
          .orderBy(asc(workSessions.startedAt));
        return rows.every((row) => row.status !== "running") ? rows : null;
      },
      { timeoutMs: 20_000, what: "the sessions to end" },
    );
    expect(sessions[0]!.status).toBe("interrupted");
    expect(sessions.at(-1)!.status).toBe("completed");
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    const calls = log.flatMap((m) => m.toolCalls ?? []);
    const results = log.filter((m) => m.role === "tool");
    expect(calls).toHaveLength(8);
    // Every step finished: each call has exactly one result, none cut short.
    expect(results.map((r) => r.toolCallId).sort()).toEqual(calls.map((c) => c.toolCallId).sort());
    expect(results.every((r) => !r.content.includes("interrupted"))).toBe(true);
  }, 90_000);
});
