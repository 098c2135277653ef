// Every piece of work ends visibly (issue: no silent stall). Each case is a path on which
// the engine used to go quiet: a failed or removed subordinate nobody told its lead about,
// work that arrived as a session ended, a turn's last words completing every task, Stop
// before a session, resume waking only the lead, input swallowed by the wrap-up, a cancel
// the agent never heard of, an answer that resumed every task, a session end in three
// commits, a report whose garbled id lost the findings.
import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { APICallError } from "ai";
import { and, eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { runWorkSession } from "@/lib/engine/agent";
import { parseLogInput, STOPPED_MARKER } from "@/lib/core/formats";
import { stopAgent } from "@/lib/engine/stop";
import { assignTask, cancelTask, queueInput, removeSubordinate } from "@/lib/domain/tasks";
import { setTeamStatus } from "@/lib/domain/teams";
import {
  appendMessage,
  claimSession,
  getAllMessages,
  getBackgroundConversation,
  getTask,
  listTasksByAgent,
} from "@/lib/db/queries";
import { agentInputs, agents, inboxItems, questions, tasks, workSessions } from "@/lib/db/schema";
import { separatedPrompt } from "@/lib/llm/alternating-prompt";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { runUntilQuiet, useEngineTests, type TestEngine } from "../support/engine";
import { offeredTools, promptText, sessionModel, textReply, toolCallReply } from "../support/mock-model";

const tests = useEngineTests();
const engineWith = tests.engineWith;
let database: TestDatabase;
beforeAll(() => {
  database = tests.database;
});

const unreachable = () =>
  new APICallError({
    message: "The model refused the key",
    url: "http://127.0.0.1:9/v1/chat/completions",
    requestBodyValues: {},
    statusCode: 401,
  });

/** The text of the newest message of the prompt a model call was given (one of those the request joined: see alternatingPrompt). */
function lastMessage(options: LanguageModelV4CallOptions): string {
  return promptText(separatedPrompt(options.prompt).slice(-1));
}

const whoIs = (options: LanguageModelV4CallOptions) =>
  /^You are ([^,\s]+)/.exec(promptText(options.prompt.slice(0, 1)))?.[1] ?? "";

async function backgroundLog(agentId: string) {
  return getAllMessages(database.db, (await getBackgroundConversation(database.db, agentId)).id);
}

async function queued(agentId: string) {
  return database.db.select().from(agentInputs).where(eq(agentInputs.agentId, agentId));
}

async function wakeRequested(agentId: string): Promise<boolean> {
  const [agent] = await database.db.select({ at: agents.wakeRequestedAt }).from(agents).where(eq(agents.id, agentId));
  return agent?.at != null;
}

async function alertsFor(taskId: string) {
  return database.db
    .select()
    .from(inboxItems)
    .where(and(eq(inboxItems.type, "alert"), eq(inboxItems.taskId, taskId)));
}

describe("a subordinate's outcome always reaches its lead", () => {
  it("a failed subordinate: the lead hears 'failed' with the reason, is woken, and the person gets one alert", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const engine = await engineWith({
      model: sessionModel((options) => {
        if (whoIs(options) === "Scout") throw unreachable();
        const last = lastMessage(options);
        if (/^Task from the person/.test(last))
          return toolCallReply("delegateToAgent", { agentId: scout.id, title: "Dig", description: "" });
        if (/failed \(task id/.test(last)) return textReply("Scout could not do it; the model refused the key.");
        return textReply("Waiting for Scout.");
      }),
    });
    const root = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Research" });
    await runWorkSession(engine.deps, lead.id);
    const [delegated] = await listTasksByAgent(database.db, scout.id);
    expect(delegated).toMatchObject({ parentTaskId: root.id, status: "pending" });

    expect((await runWorkSession(engine.deps, scout.id)).status).toBe("failed");
    expect(await getTask(database.db, delegated!.id)).toMatchObject({ status: "failed" });
    // In the transaction that failed the task: the lead's input, its wake-up and the alert.
    const waiting = await queued(lead.id);
    expect(waiting).toHaveLength(1);
    expect(parseLogInput(waiting[0]!.content)).toMatchObject({
      kind: "failed",
      agentName: "Scout",
      taskId: delegated!.id,
    });
    expect(waiting[0]!.taskId).toBe(root.id);
    expect(await wakeRequested(lead.id)).toBe(true);
    expect(await alertsFor(delegated!.id)).toHaveLength(1);

    await runWorkSession(engine.deps, lead.id);
    expect(await getTask(database.db, root.id)).toMatchObject({
      status: "completed",
      result: "Scout could not do it; the model refused the key.",
    });
  });

  it("a cancelled or removed subordinate: the lead hears 'was cancelled' or 'was removed', once, and its task goes on", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout", "Analyst"] });
    const [scout, analyst] = subordinates as [(typeof subordinates)[number], (typeof subordinates)[number]];
    const engine = await engineWith({ model: sessionModel(() => textReply("ok")) });
    const root = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Research" });
    await database.db.update(tasks).set({ status: "in_progress" }).where(eq(tasks.id, root.id));
    const dig = await assignTask(database.db, engine.jobs, {
      agentId: scout.id,
      source: "lead",
      title: "Dig",
      parentTaskId: root.id,
    });
    const count = await assignTask(database.db, engine.jobs, {
      agentId: analyst.id,
      source: "lead",
      title: "Count",
      parentTaskId: root.id,
    });

    await cancelTask(database.db, engine.jobs, dig.id);
    await cancelTask(database.db, engine.jobs, dig.id);
    await removeSubordinate(database.db, engine.jobs, analyst.id);
    const outcomes = (await queued(lead.id)).map((input) => parseLogInput(input.content));
    expect(outcomes).toEqual([
      { kind: "cancelled", agentName: "Scout", taskId: dig.id, reason: "Cancelled by the person." },
      { kind: "removed", agentName: "Analyst", taskId: count.id },
    ]);
    expect(await getTask(database.db, root.id)).toMatchObject({ status: "in_progress" });
    expect(await wakeRequested(lead.id)).toBe(true);
  });

  it("removing a subordinate mid-session stops its session and tells the lead", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    let calls = 0;
    const engine = await engineWith({
      model: sessionModel(async (options) => {
        if (whoIs(options) !== "Scout") return textReply("ok");
        calls += 1;
        await new Promise((_, reject) =>
          options.abortSignal?.addEventListener("abort", () => reject(options.abortSignal?.reason)),
        );
        throw new Error("unreachable");
      }),
    });
    const root = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Research" });
    const dig = await assignTask(database.db, engine.jobs, {
      agentId: scout.id,
      source: "lead",
      title: "Dig",
      parentTaskId: root.id,
    });
    const running = runWorkSession(engine.deps, scout.id);
    await expect.poll(() => calls, { timeout: 5_000 }).toBe(1);
    await removeSubordinate(database.db, engine.jobs, scout.id);
    expect(["lost", "stopped", "deleted"]).toContain((await running).status);
    expect((await queued(lead.id)).map((input) => parseLogInput(input.content))).toEqual([
      { kind: "removed", agentName: "Scout", taskId: dig.id },
    ]);
  });
});

describe("work that arrives as a session ends is picked up", () => {
  it("a task given while a session fails on a model error gets a session of its own", async () => {
    const { lead } = await createTeamFixture(database.db);
    let engine!: TestEngine;
    let second: string | undefined;
    engine = await engineWith({
      model: sessionModel(async (options, call) => {
        if (call === 0) {
          const b = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "B" });
          second = b.id;
          throw unreachable();
        }
        return textReply(`Did ${lastMessage(options).includes("B") ? "B" : "?"}`);
      }),
    });
    const a = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "A" });
    expect((await runWorkSession(engine.deps, lead.id)).status).toBe("failed");
    expect(await getTask(database.db, a.id)).toMatchObject({ status: "failed" });
    expect(await getTask(database.db, second!)).toMatchObject({ status: "pending" });
    expect(await wakeRequested(lead.id)).toBe(true);
    await runUntilQuiet(engine.deps, 30, { agentIds: [lead.id] });
    expect(await getTask(database.db, second!)).toMatchObject({ status: "completed", result: "Did B" });
  });

  it("a report that reaches a lead as its session hits the step limit is handled by the next session", async () => {
    const { lead } = await createTeamFixture(database.db);
    let engine!: TestEngine;
    engine = await engineWith({
      config: { maxStepsPerSession: 2 },
      model: sessionModel(async (options, call) => {
        if (call === 1)
          await queueInput(database.db, engine.jobs, lead.id, "Subordinate Scout reports: the launch moved.");
        if (lastMessage(options).includes("launch moved")) return textReply("Noted: the launch moved.");
        return toolCallReply("searchKnowledge", { query: `round ${call}` });
      }),
    });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Loop" });
    expect((await runWorkSession(engine.deps, lead.id)).status).toBe("failed");
    expect(await wakeRequested(lead.id)).toBe(true);
    await runWorkSession(engine.deps, lead.id);
    const log = await backgroundLog(lead.id);
    const report = log.findIndex((m) => m.content === "Subordinate Scout reports: the launch moved.");
    expect(report).toBeGreaterThan(0);
    expect(log[report + 1]).toMatchObject({ role: "assistant", content: "Noted: the launch moved." });
  });
});

describe("one task in focus at a time", () => {
  it("20 tasks at once: each delegation belongs to its task, each result is that task's own", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const engine = await engineWith({
      model: sessionModel((options) => {
        const last = parseLogInput(lastMessage(options));
        if (whoIs(options) === "Scout") {
          if (last?.kind === "task") return toolCallReply("reportToLead", { result: `Findings on ${last.title}` });
          return textReply("Reported to the lead.");
        }
        if (last?.kind === "task")
          return toolCallReply("delegateToAgent", {
            agentId: scout.id,
            title: `Look into ${last.title}`,
            description: "",
          });
        if (last?.kind === "report") return textReply(`Result: ${last.result}`);
        return textReply("Waiting for reports from Scout.");
      }),
    });
    const given = [];
    for (let i = 1; i <= 20; i++)
      given.push(await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: `Topic ${i}` }));
    await runUntilQuiet(engine.deps, 200, { agentIds: [lead.id, ...subordinates.map((s) => s.id)] });
    const delegated = await listTasksByAgent(database.db, scout.id);
    expect(delegated).toHaveLength(20);
    for (const task of given) {
      const child = delegated.find((d) => d.title === `Look into ${task.title}`)!;
      expect(child.parentTaskId).toBe(task.id);
      expect(await getTask(database.db, task.id)).toMatchObject({
        status: "completed",
        result: `Result: Findings on Look into ${task.title}`,
      });
    }
  });

  it("a subordinate with three tasks reports each with its own findings", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const engine = await engineWith({
      model: sessionModel((options) => {
        const last = parseLogInput(lastMessage(options));
        if (last?.kind === "task") return toolCallReply("reportToLead", { result: `Findings on ${last.title}` });
        return textReply("Reported to the lead.");
      }),
    });
    const given = [];
    for (const title of ["One", "Two", "Three"])
      given.push(await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "lead", title }));
    await runWorkSession(engine.deps, scout.id);
    for (const task of given)
      expect(await getTask(database.db, task.id)).toMatchObject({
        status: "completed",
        result: `Findings on ${task.title}`,
      });
    const reports = (await queued(lead.id)).map((input) => parseLogInput(input.content));
    expect(reports.map((r) => r?.kind === "report" && r.result).sort()).toEqual([
      "Findings on One",
      "Findings on Three",
      "Findings on Two",
    ]);
  });
});

describe("Stop", () => {
  it("pressed before a session starts: the task is cancelled and nothing runs", async () => {
    const { lead } = await createTeamFixture(database.db);
    let calls = 0;
    const engine = await engineWith({
      model: sessionModel(() => {
        calls++;
        return textReply("did it");
      }),
    });
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Never mind" });
    const stopped = await stopAgent(database.db, engine.jobs, lead.id);
    expect(stopped.session).toBeNull();
    expect(stopped.cancelled.map((t) => t.id)).toEqual([task.id]);
    expect((await runWorkSession(engine.deps, lead.id)).steps).toBe(0);
    expect(calls).toBe(0);
    expect(await getTask(database.db, task.id)).toMatchObject({
      status: "cancelled",
      result: "Stopped by the person.",
    });
  });

  it("on a lead: its subordinates' work is cancelled and their sessions stop; a report that comes anyway is refused", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    let reported: Promise<void> | undefined;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const engine = await engineWith({
      model: sessionModel(async (options, call) => {
        if (whoIs(options) !== "Scout") return textReply("ok");
        if (call === 0) {
          // The Scout is mid-call when the person stops its lead; it answers anyway.
          reported = held;
          await held;
          return toolCallReply("reportToLead", { result: "Late findings." });
        }
        return textReply("Done.");
      }),
    });
    const root = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Research" });
    await database.db.update(tasks).set({ status: "in_progress" }).where(eq(tasks.id, root.id));
    const dig = await assignTask(database.db, engine.jobs, {
      agentId: scout.id,
      source: "lead",
      title: "Dig",
      parentTaskId: root.id,
    });
    const running = runWorkSession(engine.deps, scout.id);
    await expect.poll(() => reported !== undefined, { timeout: 5_000 }).toBe(true);
    await stopAgent(database.db, engine.jobs, lead.id);
    release();
    expect((await running).status).toBe("stopped");
    expect(await getTask(database.db, dig.id)).toMatchObject({ status: "cancelled", result: "Stopped by the person." });
    // The lead stopped its own work: it hears nothing about the work under it, and no late report.
    expect(await queued(lead.id)).toEqual([]);
  });

  it("leaves input that is not a task for after the Stop, with work given after it", async () => {
    const { lead } = await createTeamFixture(database.db);
    const engine = await engineWith({
      model: sessionModel((options) =>
        textReply(lastMessage(options).startsWith("[webhook") ? "Looked at the deploy." : "done"),
      ),
    });
    await queueInput(database.db, engine.jobs, lead.id, "[webhook:deploy] {}");
    await stopAgent(database.db, engine.jobs, lead.id);
    const after = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Later" });
    await runUntilQuiet(engine.deps, 30, { agentIds: [lead.id] });
    expect(await getTask(database.db, after.id)).toMatchObject({ status: "completed" });
    expect((await backgroundLog(lead.id)).map((m) => m.content)).toContain("Looked at the deploy.");
    expect(await queued(lead.id)).toEqual([]);
  });
});

describe("resume, wrap-up, cancel, answers", () => {
  it("resuming a team wakes every agent with waiting work, not only the lead", async () => {
    const { team, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const engine = await engineWith({ model: sessionModel(() => textReply("done")) });
    await setTeamStatus(engine.deps, team.id, "paused");
    const task = await assignTask(database.db, engine.jobs, {
      agentId: scout.id,
      source: "lead",
      title: "Queued while paused",
    });
    expect((await runWorkSession(engine.deps, scout.id)).steps).toBe(0);
    expect(await wakeRequested(scout.id)).toBe(false);
    await setTeamStatus(engine.deps, team.id, "active");
    expect(await wakeRequested(scout.id)).toBe(true);
    await runUntilQuiet(engine.deps, 30, { agentIds: [...subordinates.map((s) => s.id)] });
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "completed" });
  });

  it("a report that lands during the wrap-up sends the session back to a work turn", async () => {
    const { lead } = await createTeamFixture(database.db);
    let engine!: TestEngine;
    let sent = false;
    const workTurnsSaw: string[] = [];
    engine = await engineWith({
      model: sessionModel(
        (options) => {
          if (offeredTools(options).includes("delegateToAgent")) workTurnsSaw.push(lastMessage(options));
          if (/Decide whether to brief/.test(lastMessage(options))) return textReply("No briefing needed.");
          return textReply(lastMessage(options).includes("launch moved") ? "Handled the report." : "Checked.");
        },
        {
          extract: () => {
            if (!sent) {
              sent = true;
              void queueInput(database.db, engine.jobs, lead.id, "Subordinate Scout reports: the launch moved.");
            }
            return '{"items":[]}';
          },
        },
      ),
    });
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Check" });
    await runWorkSession(engine.deps, lead.id);
    expect(workTurnsSaw.some((text) => text.includes("launch moved"))).toBe(true);
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "completed", result: "Checked." });
    expect(await queued(lead.id)).toEqual([]);
  });

  it("cancelling one of an agent's tasks tells the agent, and its other task goes on", async () => {
    const { subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const engine = await engineWith({ model: sessionModel(() => textReply("ok")) });
    const keep = await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "lead", title: "Keep" });
    const drop = await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "lead", title: "Drop" });
    await database.db.update(tasks).set({ status: "in_progress" }).where(eq(tasks.agentId, scout.id));
    await cancelTask(database.db, engine.jobs, drop.id);
    const notices = (await queued(scout.id)).map((input) => parseLogInput(input.content));
    expect(notices).toEqual([
      { kind: "task-cancelled", taskId: drop.id, title: "Drop", reason: "Cancelled by the person." },
    ]);
    expect(await getTask(database.db, keep.id)).toMatchObject({ status: "in_progress" });
    const [running] = await database.db.select().from(workSessions).where(eq(workSessions.agentId, scout.id));
    expect(running).toBeUndefined();
  });

  it("an answer resumes only the task that asked", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    let answered = false;
    const engine = await engineWith({
      model: sessionModel((options) => {
        const last = parseLogInput(lastMessage(options));
        if (whoIs(options) === "Scout")
          return last?.kind === "task"
            ? toolCallReply("requestInput", { question: `Which ${last.title}?` })
            : textReply("Waiting.");
        const asked = separatedPrompt(options.prompt)
          .map((message) => parseLogInput(promptText([message])))
          .find((input) => input?.kind === "question" && input.question === "Which One?");
        if (asked?.kind === "question" && !answered) {
          answered = true;
          return toolCallReply("answerSubordinate", { questionId: asked.questionId, answer: "the first" });
        }
        return textReply("ok");
      }),
    });
    const one = await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "lead", title: "One" });
    const two = await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "lead", title: "Two" });
    await runWorkSession(engine.deps, scout.id);
    expect((await getTask(database.db, one.id))!.status).toBe("waiting_input");
    expect((await getTask(database.db, two.id))!.status).toBe("waiting_input");
    await runWorkSession(engine.deps, lead.id);
    expect((await getTask(database.db, one.id))!.status).toBe("in_progress");
    expect((await getTask(database.db, two.id))!.status).toBe("waiting_input");
    const asked = await database.db.select().from(questions).where(eq(questions.agentId, scout.id));
    expect(asked.map((q) => [q.question, q.status]).sort()).toEqual([
      ["Which One?", "answered"],
      ["Which Two?", "open"],
    ]);
  });
});

describe("a session ends in one transaction", () => {
  it("a failure while ending leaves none of the ending; the retry writes all of it", async () => {
    const { lead } = await createTeamFixture(database.db);
    const engine = await engineWith({
      model: sessionModel(() => {
        throw unreachable();
      }),
    });
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Try" });
    // The alert is written last of the ending's rows: refuse it once, as a crash there would.
    await database.db.execute(sql`
      create function refuse_alert() returns trigger language plpgsql as $$
      begin if new.type = 'alert' then raise exception 'disk full'; end if; return new; end $$`);
    await database.db.execute(
      sql`create trigger refuse_alert before insert on inbox_items for each row execute function refuse_alert()`,
    );
    await expect(runWorkSession(engine.deps, lead.id)).rejects.toThrow();
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "in_progress" });
    expect((await backgroundLog(lead.id)).some((m) => m.content.startsWith("(error:"))).toBe(false);
    expect(await alertsFor(task.id)).toHaveLength(0);

    await database.db.execute(sql`drop trigger refuse_alert on inbox_items`);
    await runWorkSession(engine.deps, lead.id);
    const after = await getTask(database.db, task.id);
    expect(after).toMatchObject({ status: "failed" });
    expect(after!.result).toMatch(/refused the credentials/);
    expect((await backgroundLog(lead.id)).filter((m) => m.content.startsWith("(error:"))).toHaveLength(1);
    expect(await alertsFor(task.id)).toHaveLength(1);
  });
});

describe("tools forgive what they can resolve", () => {
  it("a report with a garbled task id completes the task in focus with the findings", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const engine = await engineWith({
      model: sessionModel((_options, call) =>
        call === 0
          ? toolCallReply("reportToLead", { result: "Revenue grew 12% (source: the Q3 filing).", taskId: "task-1" })
          : textReply("Reported to the lead."),
      ),
    });
    const task = await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "lead", title: "Revenue" });
    await runWorkSession(engine.deps, scout.id);
    expect(await getTask(database.db, task.id)).toMatchObject({
      status: "completed",
      result: "Revenue grew 12% (source: the Q3 filing).",
    });
    expect((await queued(lead.id)).map((input) => parseLogInput(input.content))).toEqual([
      { kind: "report", agentName: "Scout", taskId: task.id, result: "Revenue grew 12% (source: the Q3 filing)." },
    ]);
  });

  it("a validation error names the field to fix, and the model's retry goes through", async () => {
    const { subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const engine = await engineWith({
      model: sessionModel((options, call) => {
        if (call === 0) return toolCallReply("reportToLead", { findings: "Revenue grew 12%." });
        if (call === 1) return toolCallReply("reportToLead", { result: "Revenue grew 12%." });
        return textReply(lastMessage(options));
      }),
    });
    const task = await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "lead", title: "Revenue" });
    await runWorkSession(engine.deps, scout.id);
    const results = (await backgroundLog(scout.id)).filter((m) => m.role === "tool").map((m) => m.content);
    expect(results[0]).toMatch(/invalid arguments for reportToLead.*`result`/);
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "completed", result: "Revenue grew 12%." });
  });
});

describe("input that lands during a model call", () => {
  it("is stored after the answer the call gave, and gets a next step of its own", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    let engine!: TestEngine;
    const seen: string[] = [];
    engine = await engineWith({
      model: sessionModel(async (options, call) => {
        seen.push(lastMessage(options));
        if (call === 0) {
          await queueInput(database.db, engine.jobs, scout.id, `Your lead ${lead.name} says: also check Q4.`);
          return textReply("Started on Q3.");
        }
        return textReply("Checked Q4 too.");
      }),
    });
    await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "lead", title: "Revenue" });
    await runWorkSession(engine.deps, scout.id);
    expect(seen[1]).toContain("also check Q4");
    const log = (await backgroundLog(scout.id)).map((m) => [m.role, m.content]);
    expect(log.slice(0, 4)).toEqual([
      ["user", expect.stringMatching(/^Task from your lead/)],
      ["assistant", "Started on Q3."],
      ["user", `Your lead ${lead.name} says: also check Q4.`],
      ["assistant", "Checked Q4 too."],
    ]);
  });
});

describe("what a stranger found from outside", () => {
  it("a task is not completed with words written before input about it arrived", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    let engine!: TestEngine;
    let task!: { id: string };
    engine = await engineWith({
      model: sessionModel(async (options, call) => {
        if (call === 0) {
          // The lead's answer lands while the Scout's last call of the turn is in flight.
          await queueInput(database.db, engine.jobs, scout.id, `Your lead ${lead.name} says: use Q3.`, task.id);
          return textReply("Waiting for my lead.");
        }
        return textReply(lastMessage(options).includes("use Q3") ? "Q3 revenue grew 12%." : "?");
      }),
    });
    task = await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "lead", title: "Revenue" });
    await runWorkSession(engine.deps, scout.id);
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "completed", result: "Q3 revenue grew 12%." });
  });

  it("a model error fails the task the turn served, not the agent's other tasks waiting on subordinates", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const engine = await engineWith({
      model: sessionModel(() => {
        throw unreachable();
      }),
    });
    const waiting = await assignTask(database.db, engine.jobs, {
      agentId: lead.id,
      source: "user",
      title: "Waits on Scout",
    });
    await database.db.update(tasks).set({ status: "in_progress" }).where(eq(tasks.id, waiting.id));
    const dig = await assignTask(database.db, engine.jobs, {
      agentId: subordinates[0]!.id,
      source: "lead",
      title: "Dig",
      parentTaskId: waiting.id,
    });
    await queueInput(database.db, engine.jobs, lead.id, "[webhook:deploy] {}");
    expect((await runWorkSession(engine.deps, lead.id)).status).toBe("failed");
    expect(await getTask(database.db, waiting.id)).toMatchObject({ status: "in_progress" });
    expect(await getTask(database.db, dig.id)).toMatchObject({ status: "pending" });
    const alerts = await database.db
      .select()
      .from(inboxItems)
      .where(and(eq(inboxItems.type, "alert"), eq(inboxItems.agentId, lead.id)));
    expect(alerts).toHaveLength(1);
  });

  it("a Stop whose worker died before it ended is honoured by the next session", async () => {
    const { lead } = await createTeamFixture(database.db);
    let calls = 0;
    const engine = await engineWith({
      model: sessionModel(() => {
        calls++;
        return textReply("worked anyway");
      }),
    });
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Stop me" });
    // A session took the task, then its worker died mid-call; the person pressed Stop.
    const dead = (await claimSession(database.db, lead.id, "dead-worker"))!;
    await database.db.update(tasks).set({ status: "in_progress" }).where(eq(tasks.id, task.id));
    await appendMessage(database.db, (await getBackgroundConversation(database.db, lead.id)).id, {
      role: "user",
      content: "Task from the person: Stop me",
    });
    await stopAgent(database.db, engine.jobs, lead.id);
    await database.db
      .update(workSessions)
      .set({ heartbeatAt: new Date(Date.now() - 60_000) })
      .where(eq(workSessions.id, dead.id));
    await runWorkSession(engine.deps, lead.id);
    expect(calls).toBe(0);
    expect((await backgroundLog(lead.id)).at(-1)).toMatchObject({ role: "assistant", content: STOPPED_MARKER });
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "cancelled" });
  });

  it("an answer with a garbled question id is refused while several questions are open, naming the ids", async () => {
    const { subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout", "Analyst"] });
    const engine = await engineWith({
      model: sessionModel((options) => {
        const last = parseLogInput(lastMessage(options));
        if (whoIs(options) !== "Team") {
          return last?.kind === "task"
            ? toolCallReply("requestInput", { question: `Which ${last.title}?` })
            : textReply("Waiting.");
        }
        return textReply("ok");
      }),
    });
    for (const [index, agent] of subordinates.entries()) {
      await assignTask(database.db, engine.jobs, { agentId: agent.id, source: "lead", title: `Q${index}` });
      await runWorkSession(engine.deps, agent.id);
    }
    const lead = (
      await database.db
        .select()
        .from(agents)
        .where(and(eq(agents.teamId, subordinates[0]!.teamId), eq(agents.role, "lead")))
    )[0]!;
    const { teamLeadTools } = await import("@/lib/engine/tools/team-lead-tools");
    const tools = teamLeadTools({
      db: database.db,
      jobs: engine.jobs,
      agent: lead,
      team: (await database.db.query.teams.findFirst({
        where: (team, { eq: equals }) => equals(team.id, lead.teamId),
      }))!,
      conversationId: (await getBackgroundConversation(database.db, lead.id)).id,
      workSessionId: null,
      embedding: engine.deps.embedding,
      search: {},
      focusTaskId: () => null,
      effect: (_id, write) => database.db.transaction(write),
    });
    const answer = await tools.answerSubordinate.execute!(
      { questionId: "c388", answer: "the first" },
      { toolCallId: "t1", messages: [], context: {} },
    );
    expect(String(answer)).toMatch(
      /^Not sent: "c388" is not an open question id, and 2 questions are open\. Call answerSubordinate again with questionId set to one of: /,
    );
    const open = await database.db.select().from(questions).where(eq(questions.status, "open"));
    expect(open.filter((q) => subordinates.some((s) => s.id === q.agentId))).toHaveLength(2);
  });
});

// Found by the engine model-check (seed 347748089, on a loaded machine): a Stop pressed while
// the lead was handing work over, and a resume still committing when the subordinate's session
// looked at the team, left the handed-over task pending with nothing to run it.
describe("a Stop or a resume that meets work in flight", () => {
  /** Statements of this database waiting for a row lock. */
  const lockWaits = async () =>
    (
      await database.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`
    )[0]!.n;

  /** Holds a row FOR UPDATE on a connection of its own until `release` (what another transaction under way does). */
  async function holdRow(table: "agents" | "tasks", id: string): Promise<{ release: () => Promise<void> }> {
    const connection = await database.sql.reserve();
    await connection`begin`;
    await connection`select 1 from ${database.sql(table)} where id = ${id} for update`;
    return {
      release: async () => {
        await connection`rollback`;
        connection.release();
      },
    };
  }

  /** Resolves once `work` settled or `locks` statements wait for a lock (it is held up by one). */
  const settledOrWaiting = async (work: Promise<unknown>, locks: number) => {
    let settled = false;
    void work.then(
      () => (settled = true),
      () => (settled = true),
    );
    await expect.poll(async () => settled || (await lockWaits()) >= locks, { timeout: 10_000 }).toBe(true);
  };

  /** A lead working on a task of the person's, with one subordinate. */
  async function leadAtWork() {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    return { team, lead, scout: subordinates[0]! };
  }
  const delegating = (options: LanguageModelV4CallOptions) => offeredTools(options).includes("delegateToAgent");

  it("a Stop that commits while the lead hands work over: the hand-over is refused, the subordinate gets nothing", async () => {
    const { lead, scout } = await leadAtWork();
    let commitStop!: () => void;
    const stopHeld = new Promise<void>((resolve) => (commitStop = resolve));
    let stopping: Promise<unknown> | undefined;
    const engine = await engineWith({
      model: sessionModel(async (options, call) => {
        if (!delegating(options) || call > 0) return textReply("ok");
        // The person presses Stop while the lead decides; the Stop's transaction is under way
        // (its task cancelled, not committed yet) when the lead's delegation starts.
        let stopped!: () => void;
        const stopDone = new Promise<void>((resolve) => (stopped = resolve));
        stopping = database.db.transaction(async (tx) => {
          await stopAgent(tx, engine.jobs, lead.id);
          stopped();
          await stopHeld;
        });
        await stopDone;
        return toolCallReply("delegateToAgent", { agentId: scout.id, title: "Dig", description: "Look into it." });
      }),
    });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Research" });
    const session = runWorkSession(engine.deps, lead.id);
    await expect.poll(() => stopping !== undefined, { timeout: 10_000 }).toBe(true);
    // The delegation waits for the Stop's transaction; then the Stop commits.
    await expect.poll(lockWaits, { timeout: 10_000 }).toBeGreaterThan(0);
    commitStop();
    await stopping;
    expect((await session).status).toBe("stopped");
    expect(await listTasksByAgent(database.db, scout.id)).toEqual([]);
    const results = (await backgroundLog(lead.id)).filter((m) => m.role === "tool").map((m) => m.content);
    expect(results.join("\n")).toMatch(/^Not delegated: the task you are working on \("Research"\) is cancelled/m);
  });

  it("a delegation that commits while a Stop waits for it: the Stop cancels the delegated task too", async () => {
    const { lead, scout } = await leadAtWork();
    // Another transaction holds the Scout's row: the delegation's write waits for it, mid-way.
    const scoutHeld = await holdRow("agents", scout.id);
    const engine = await engineWith({
      model: sessionModel((options, call) =>
        delegating(options) && call === 0
          ? toolCallReply("delegateToAgent", { agentId: scout.id, title: "Dig", description: "Look into it." })
          : textReply("ok"),
      ),
    });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Research" });
    const session = runWorkSession(engine.deps, lead.id);
    await expect.poll(lockWaits, { timeout: 10_000 }).toBeGreaterThan(0);
    // The person presses Stop now: it meets the delegation in flight.
    const stopping = stopAgent(database.db, engine.jobs, lead.id);
    await settledOrWaiting(stopping, 2);
    await scoutHeld.release();
    await stopping;
    expect((await session).status).toBe("stopped");
    const handedOver = await listTasksByAgent(database.db, scout.id);
    expect(handedOver).toHaveLength(1);
    expect(handedOver[0]).toMatchObject({ title: "Dig", status: "cancelled", result: "Stopped by the person." });
  });

  it("a task delegated while the team's resume commits is taken up by the session its wake-up starts", async () => {
    const { team, lead, scout } = await leadAtWork();
    const engine = await engineWith({ model: sessionModel(() => textReply("done")) });
    await setTeamStatus(engine.deps, team.id, "paused");
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Waiting for the resume" });
    // The resume has looked for agents with work (the lead) and is held up waking it: still uncommitted.
    const leadHeld = await holdRow("agents", lead.id);
    const resuming = setTeamStatus(engine.deps, team.id, "active");
    await expect.poll(lockWaits, { timeout: 10_000 }).toBeGreaterThan(0);
    // Meanwhile the lead's turn (begun before the pause) delegates; its wake-up starts the Scout's session.
    const task = await assignTask(database.db, engine.jobs, {
      agentId: scout.id,
      source: "lead",
      title: "Delegated as the team resumes",
    });
    const session = runWorkSession(engine.deps, scout.id);
    await settledOrWaiting(session, 2);
    await leadHeld.release();
    await resuming;
    expect((await session).steps).toBeGreaterThan(0);
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "completed" });
  });
});
