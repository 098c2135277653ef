// A model whose server gets its answers wrong (issue 33, item 3), through the real @ai-sdk/openai
// client over HTTP to the fake server's answer modes: empty answers, answers cut at the length
// limit, no usage figures, no tool support. What a person would notice is asserted: each task's
// status and result, the briefing, alerts in words, the chat's reply, usage rows and budgets.
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { parseLogInput } from "@/lib/core/formats";
import { CUT_ANSWER_NOTE, EMPTY_ANSWER_NOTE } from "@/lib/core/prompts";
import type { EngineConfig, EngineDeps } from "@/lib/core/engine-config";
import { assignTask } from "@/lib/domain/tasks";
import type { JobQueue } from "@/lib/jobs/job-queue";
import {
  getAllMessages,
  getBackgroundConversation,
  getForegroundConversation,
  listInboxItems,
  listTasksByAgent,
} from "@/lib/db/queries";
import { runWorkSession } from "@/lib/engine/agent";
import { streamChatReply } from "@/lib/engine/chat";
import { chooseModel } from "@/lib/llm/provider";
import { getTeamStories } from "@/lib/views/stories";
import { toApiMessage, toChatMessages } from "@/lib/views/chat-messages";
import { describeLogMessage, taskResultText } from "@/lib/views/plain-words";
import {
  lastUserText,
  startFakeOpenAI,
  type AnswerModes,
  type FakeChatMessage,
  type FakeChatRequest,
  type FakeOpenAI,
  type FakeReply,
} from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import { runUntilQuiet, useEngineTests } from "../support/engine";
import { systemText, toolNames } from "../support/team-play";

const tests = useEngineTests();
const servers: FakeOpenAI[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
const text = (message: FakeChatMessage) =>
  typeof message.content === "string"
    ? message.content
    : (message.content ?? []).map((part) => part.text ?? "").join("");

/** The calls of `toolName` the request's history holds whose result did not fail. */
function succeeded(request: FakeChatRequest, toolName: string): number {
  const calls = request.messages.flatMap((message) =>
    (message.tool_calls ?? []).filter((call) => call.function.name === toolName),
  );
  return calls.filter((call) => {
    const result = request.messages.find((message) => message.role === "tool" && message.tool_call_id === call.id);
    return result !== undefined && !/error|invalid|not run/i.test(text(result));
  }).length;
}

/**
 * A research played by a lead with two subordinates, deciding from each request alone (so an
 * answer the server spoiled is simply played again): the lead hands one part to each, each
 * subordinate saves a finding and reports it, the lead briefs the person once both reported.
 */
function research(request: FakeChatRequest): FakeReply {
  if (request.response_format) return { text: '{"items":[]}' };
  const tools = toolNames(request);
  if (tools.length === 0 || request.tool_choice === "none") return { text: "Summary of the work so far." };
  const last = request.messages.at(-1)!;
  if (tools.includes("reportToLead")) {
    if (succeeded(request, "reportToLead") > 0) return { text: "Reported my findings to the lead." };
    const subject = /Wind/.test(request.messages.map(text).join("\n")) ? "Wind" : "Solar";
    if (succeeded(request, "addKnowledgeItem") === 0)
      return {
        toolCalls: [
          {
            name: "addKnowledgeItem",
            arguments: { type: "fact", content: `${subject} prices fell this year.`, confidence: 0.8 },
          },
        ],
      };
    return {
      toolCalls: [{ name: "reportToLead", arguments: { result: `Findings: ${subject.toLowerCase()} prices fell.` } }],
    };
  }
  if (/Decide whether to brief/.test(lastUserText(request))) return { text: "No briefing needed." };
  if (succeeded(request, "createInboxItem") > 0) return { text: "Briefed the person: solar and wind prices fell." };
  // Counted in the text: reports that arrived together go out as one user message (roles alternate).
  const reports = request.messages
    .filter((message) => message.role === "user")
    .flatMap((message) => text(message).match(/^Subordinate \S+ reports \(task id: /gm) ?? []).length;
  if (reports >= 2)
    return {
      toolCalls: [
        {
          name: "createInboxItem",
          arguments: {
            title: "Solar and wind prices fell",
            summary: "Both fell this year.",
            content: "## Energy\nSolar and wind prices fell this year.",
          },
        },
      ],
    };
  const delegated = succeeded(request, "delegateToAgent");
  const members = systemText(request)
    .split("\n")
    .filter((line) => line.startsWith("- ") && UUID.test(line))
    .map((line) => line.match(UUID)![0]);
  if (delegated < 2 && members[delegated] && last.role !== "assistant") {
    const part = delegated === 0 ? "Solar" : "Wind";
    return {
      toolCalls: [
        {
          name: "delegateToAgent",
          arguments: {
            agentId: members[delegated],
            title: `${part} prices`,
            description: `Find how ${part} prices moved.`,
          },
        },
      ],
    };
  }
  return { text: "Handed out both parts; waiting for the reports." };
}

/** The first answer to each task an agent is given (the request whose last message is the task). */
const firstAnswerToATask = (request: FakeChatRequest) => {
  const last = request.messages.at(-1);
  return last?.role === "user" && parseLogInput(text(last))?.kind === "task";
};

async function engineOn(modes: AnswerModes, play = research, config: Partial<EngineConfig> = {}) {
  const openai = await startFakeOpenAI(play, { answerModes: modes });
  servers.push(openai);
  const engine = await tests.engineWith({ config: { modelTimeoutMs: 8_000, ...config } });
  // The real provider path: Chat Completions against OPENAI_BASE_URL.
  engine.deps.chooseModel = (override) =>
    chooseModel(override, { OPENAI_BASE_URL: openai.url, OPENAI_API_KEY: undefined, LLM_MODEL: "fake-model" });
  return { openai, engine };
}

async function researchTeam(name: string, engine: { jobs: JobQueue }) {
  const fixture = await createTeamFixture(tests.database.db, { name, subordinates: ["Sol", "Vento"] });
  const task = await assignTask(tests.database.db, engine.jobs, {
    agentId: fixture.lead.id,
    source: "user",
    title: "Energy prices",
    description: "Find out how solar and wind prices moved this year.",
  });
  return { ...fixture, task, agents: [fixture.lead, ...fixture.subordinates] };
}

/** Runs the team's agents' sessions (only theirs: other tests' teams may wait over a budget) until none has work. */
async function runTeam(engine: { deps: EngineDeps }, agents: readonly { id: string }[]) {
  return runUntilQuiet(engine.deps, 30, { agentIds: agents.map((agent) => agent.id) });
}

async function tasksOf(teamId: string) {
  const rows = await tests.database.db.execute<{ title: string; status: string; result: string | null; role: string }>(
    sql`select t.title, t.status, t.result, a.role from tasks t join agents a on a.id = t.agent_id where a.team_id = ${teamId} order by t.created_at`,
  );
  return [...rows];
}

async function usageOf(teamId: string) {
  const rows = await tests.database.db.execute<{
    purpose: string;
    input_tokens: number;
    output_tokens: number;
    estimated: boolean;
  }>(sql`select purpose, input_tokens, output_tokens, estimated from usage where team_id = ${teamId}`);
  return [...rows];
}

describe("a research through a lead and two subordinates", () => {
  it("empty first answers: each agent is told and asked once more, and the research ends in a briefing", {
    timeout: 90_000,
  }, async () => {
    const { engine, openai } = await engineOn({ emptyAnswers: firstAnswerToATask });
    const { team, lead, agents } = await researchTeam("Empty first answers", engine);
    await runTeam(engine, agents);

    const tasks = await tasksOf(team.id);
    console.log(
      `[model answers] empty first answers: ${openai.requests.length} requests; ${tasks.map((t) => `${t.title} ${t.status}: ${t.result}`).join(" | ")}`,
    );
    expect(tasks).toHaveLength(3);
    for (const task of tasks) {
      expect(task.status).toBe("completed");
      expect(task.result).not.toBe("Done.");
    }
    expect(tasks.find((t) => t.role === "lead")!.result).toMatch(/Briefed the person/);
    expect(tasks.filter((t) => t.role === "subordinate").map((t) => t.result)).toEqual(
      expect.arrayContaining([expect.stringMatching(/solar prices fell/), expect.stringMatching(/wind prices fell/)]),
    );
    const briefings = await listInboxItems(tests.database.db, { teamId: team.id, type: "briefing" });
    expect(briefings.map((item) => item.title)).toEqual(["Solar and wind prices fell"]);
    // Each agent heard once what was missing, as a note at its log's tail, read on the page as words.
    const log = await getAllMessages(
      tests.database.db,
      (await getBackgroundConversation(tests.database.db, lead.id)).id,
    );
    const notes = log.filter((message) => message.content === EMPTY_ANSWER_NOTE);
    expect(notes).toHaveLength(1);
    expect(describeLogMessage(notes[0]!.content)).toMatchObject({
      headline: "Asked again: its answer was empty",
      engine: true,
    });
    // No request was refused, and none failed the work.
    expect(await listInboxItems(tests.database.db, { teamId: team.id, type: "alert" })).toEqual([]);
  });

  it("answers always empty: the lead's task fails once, with a reason the person can read, never 'Done.'", {
    timeout: 60_000,
  }, async () => {
    const { engine, openai } = await engineOn({ emptyAnswers: true });
    const { team, task, agents } = await researchTeam("Always empty", engine);
    await runTeam(engine, agents);

    const [lead] = await tasksOf(team.id);
    expect(lead!.status).toBe("failed");
    expect(lead!.result).toMatch(/^The model fake-model answered with nothing, even when asked again/);
    expect(taskResultText("failed", lead!.result!)).toMatch(/answered with nothing.*choose another model/);
    const alerts = await listInboxItems(tests.database.db, { teamId: team.id, type: "alert" });
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ taskId: task.id });
    expect(alerts[0]!.summary).toMatch(/answered with nothing/);
    // Asked once more, not again and again: the task's two answers, nothing delegated.
    const work = openai.requests.filter(
      (request) =>
        toolNames(request).includes("delegateToAgent") && !/Decide whether to brief/.test(lastUserText(request)),
    );
    expect(work.length).toBe(2);
  });

  it("answers cut at the length limit: told, bounded, and the task fails in words instead of running to the step limit", {
    timeout: 60_000,
  }, async () => {
    const { engine, openai } = await engineOn({ lengthCut: true });
    const { team, agents } = await researchTeam("Always cut", engine);
    await runTeam(engine, agents);

    const [lead] = await tasksOf(team.id);
    const work = openai.requests.filter((request) => toolNames(request).includes("delegateToAgent"));
    console.log(`[model answers] always cut: ${work.length} work requests; lead task ${lead!.status}: ${lead!.result}`);
    expect(lead!.status).toBe("failed");
    expect(lead!.result).toMatch(/^The model fake-model sent 3 answers in a row that could not be used/);
    // The model was told each time (its call's arguments were not JSON) and tried again, three times at most.
    expect(work.length).toBe(3);
    expect(text(work[1]!.messages.at(-1)!)).toMatch(/JSON|invalid|parse/i);
  });

  it("no usage from the server: every call is counted with Cadre's estimate, marked estimated, on the stories too", {
    timeout: 90_000,
  }, async () => {
    const { engine } = await engineOn({ noUsage: true });
    const { team, agents } = await researchTeam("No usage", engine);
    await runTeam(engine, agents);

    const tasks = await tasksOf(team.id);
    expect(tasks.map((t) => t.status)).toEqual(["completed", "completed", "completed"]);
    expect(await listInboxItems(tests.database.db, { teamId: team.id, type: "briefing" })).toHaveLength(1);
    // The model's calls (the embeddings here are the offline model's, which counts its own).
    const rows = (await usageOf(team.id)).filter((row) => row.purpose !== "embedding");
    expect(rows.length).toBeGreaterThan(6);
    for (const row of rows) {
      expect(row.estimated).toBe(true);
      expect(row.input_tokens).toBeGreaterThan(0);
    }
    expect(rows.filter((row) => row.purpose === "work").every((row) => row.output_tokens > 0)).toBe(true);
    const [story] = (await getTeamStories(tests.database.db, team.id)).stories;
    expect(story!.cost.tokens).toBeGreaterThan(0);
    expect(story!.cost.estimated).toBe(true);
  });
});

describe("calls nothing can run, again and again", () => {
  it("a tool never offered: the model is told each time, and the turn ends after three such answers", {
    timeout: 60_000,
  }, async () => {
    const { engine, openai } = await engineOn({}, (request) =>
      request.response_format ? { text: '{"items":[]}' } : { toolCalls: [{ name: "launchMissiles", arguments: {} }] },
    );
    const { lead } = await createTeamFixture(tests.database.db, { name: "Unknown tool" });
    await assignTask(tests.database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Try" });
    await runTeam(engine, [lead]);

    const [task] = await listTasksByAgent(tests.database.db, lead.id);
    expect(task!.status).toBe("failed");
    expect(task!.result).toMatch(/^The model fake-model sent 3 answers in a row that could not be used/);
    const work = openai.requests.filter((request) => (request.tools?.length ?? 0) > 0);
    expect(work).toHaveLength(3);
    expect(text(work[1]!.messages.at(-1)!)).toMatch(/launchMissiles/);
  });

  it("arguments in JSON that the tool does not take are no such answer: the model is told and may go on", {
    timeout: 60_000,
  }, async () => {
    const { engine } = await engineOn({}, (request) => {
      if (request.response_format) return { text: '{"items":[]}' };
      const tries = request.messages.filter((message) => message.role === "tool").length;
      return tries < 4
        ? { toolCalls: [{ name: "searchKnowledge", arguments: { query: "x".repeat(500) } }] }
        : { text: "Found nothing on it." };
    });
    const { lead } = await createTeamFixture(tests.database.db, { name: "Schema errors" });
    await assignTask(tests.database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Look" });
    await runTeam(engine, [lead]);

    const [task] = await listTasksByAgent(tests.database.db, lead.id);
    expect(task).toMatchObject({ status: "completed", result: "Found nothing on it." });
  });
});

describe("budgets when the server sends no usage", () => {
  it("the team's daily budget stops work at its limit: the rest waits, and the person is told", {
    timeout: 90_000,
  }, async () => {
    const { engine } = await engineOn({ noUsage: true }, (request) =>
      request.response_format ? { text: '{"items":[]}' } : { text: `Answer to: ${lastUserText(request).slice(0, 40)}` },
    );
    const { team, lead } = await createTeamFixture(tests.database.db, { name: "Budget without usage" });
    await tests.database.db.execute(sql`update teams set daily_token_budget = 4000 where id = ${team.id}`);
    for (let n = 1; n <= 12; n++)
      await assignTask(tests.database.db, engine.jobs, { agentId: lead.id, source: "user", title: `Question ${n}` });
    // Sessions until one ends at the budget (the work then waits for tomorrow or a higher budget).
    const outcomes: string[] = [];
    while (outcomes.at(-1) !== "over-budget" && outcomes.length < 20)
      outcomes.push((await runWorkSession(engine.deps, lead.id)).status);
    expect(outcomes.at(-1)).toBe("over-budget");

    const tasks = await listTasksByAgent(tests.database.db, lead.id);
    const done = tasks.filter((task) => task.status === "completed").length;
    const spent = (await usageOf(team.id)).reduce((sum, row) => sum + row.input_tokens + row.output_tokens, 0);
    console.log(
      `[model answers] budget without usage: ${done} of 12 tasks done, ${spent} tokens counted (budget 4000)`,
    );
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(12);
    expect(tasks.filter((task) => task.status === "failed")).toEqual([]);
    expect(spent).toBeGreaterThanOrEqual(4000);
    const alerts = await listInboxItems(tests.database.db, { teamId: team.id, type: "alert" });
    expect(alerts.map((alert) => alert.title)).toEqual([`${team.name} is over its daily budget: its work waits`]);
  });

  it("the session's own budget stops a turn at its limit", { timeout: 60_000 }, async () => {
    const { engine } = await engineOn(
      { noUsage: true },
      (request) =>
        request.response_format
          ? { text: '{"items":[]}' }
          : toolNames(request).includes("searchKnowledge") && request.messages.length < 40
            ? { toolCalls: [{ name: "searchKnowledge", arguments: { query: "prices" } }] }
            : { text: "Nothing found." },
      { sessionTokenBudget: 6000 },
    );
    const { lead } = await createTeamFixture(tests.database.db, { name: "Session budget without usage" });
    await assignTask(tests.database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Keep looking" });
    await runTeam(engine, [lead]);

    const [task] = await listTasksByAgent(tests.database.db, lead.id);
    expect(task!.status).toBe("failed");
    expect(task!.result).toMatch(/this session used \d+ tokens, over its budget of 6000/);
  });
});

describe("a single task's last answer", () => {
  it("cut at the length limit once: the model is told, answers again, and the whole answer is the result", {
    timeout: 60_000,
  }, async () => {
    const full = "Solar prices fell twelve percent this year, driven by cheaper modules and installation.";
    const { engine, openai } = await engineOn({ lengthCut: 1 }, (request) =>
      request.response_format ? { text: '{"items":[]}' } : { text: full },
    );
    const { lead } = await createTeamFixture(tests.database.db, { name: "Cut once" });
    await assignTask(tests.database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Solar" });
    await runTeam(engine, [lead]);

    const [task] = await listTasksByAgent(tests.database.db, lead.id);
    expect(task).toMatchObject({ status: "completed", result: full });
    expect(lastUserText(openai.requests[1]!)).toBe(CUT_ANSWER_NOTE);
  });
});

describe("empty answers between useful work", () => {
  /** How many times the request's history holds the note on an empty answer. */
  const notesIn = (request: FakeChatRequest) =>
    request.messages.filter((message) => message.role === "user" && text(message) === EMPTY_ANSWER_NOTE).length;

  it("a new empty answer after the model searched is asked again, and the findings that follow are the result", {
    timeout: 60_000,
  }, async () => {
    const findings = "Findings: solar prices fell twelve percent this year.";
    // Empty at first; after the note it searches, then answers empty again; after a second note it answers.
    const { engine, openai } = await engineOn(
      {
        emptyAnswers: (request) =>
          toolNames(request).length > 0 &&
          (notesIn(request) === 0 || (notesIn(request) === 1 && request.messages.at(-1)!.role === "tool")),
      },
      (request) => {
        if (request.response_format) return { text: '{"items":[]}' };
        if (notesIn(request) === 1 && request.messages.at(-1)!.role === "user")
          return { toolCalls: [{ name: "searchKnowledge", arguments: { query: "solar prices" } }] };
        return { text: findings };
      },
    );
    const { subordinates } = await createTeamFixture(tests.database.db, { name: "Empty again", subordinates: ["Sol"] });
    const sol = subordinates[0]!;
    await assignTask(tests.database.db, engine.jobs, { agentId: sol.id, source: "lead", title: "Solar prices" });
    await runTeam(engine, [sol]);

    const [task] = await listTasksByAgent(tests.database.db, sol.id);
    expect(task).toMatchObject({ status: "completed", result: findings });
    const work = openai.requests.filter((request) => toolNames(request).length > 0 && !request.response_format);
    expect(work.map(notesIn)).toEqual([0, 1, 1, 2]);
  });

  it("an empty answer right after the note fails the task with the reason", { timeout: 60_000 }, async () => {
    const { engine, openai } = await engineOn({ emptyAnswers: (request) => notesIn(request) < 2 }, (request) =>
      request.response_format ? { text: '{"items":[]}' } : { text: "Findings: solar prices fell." },
    );
    const { subordinates } = await createTeamFixture(tests.database.db, { name: "Empty twice", subordinates: ["Sol"] });
    const sol = subordinates[0]!;
    await assignTask(tests.database.db, engine.jobs, { agentId: sol.id, source: "lead", title: "Solar prices" });
    await runTeam(engine, [sol]);

    const [task] = await listTasksByAgent(tests.database.db, sol.id);
    expect(task!.status).toBe("failed");
    expect(task!.result).toMatch(/^The model fake-model answered with nothing, even when asked again/);
    expect(openai.requests.filter((request) => toolNames(request).length > 0).map(notesIn)).toEqual([0, 1]);
  });
});

describe("a model that cannot call tools", () => {
  it("ends all of the agent's work with one clear message naming the model and what to choose, without retrying", {
    timeout: 60_000,
  }, async () => {
    const { engine, openai } = await engineOn({ noTools: true });
    const { team, lead, agents } = await researchTeam("No tools", engine);
    for (const title of ["Battery prices", "Grid prices"])
      await assignTask(tests.database.db, engine.jobs, { agentId: lead.id, source: "user", title });
    await runTeam(engine, agents);

    const tasks = await tasksOf(team.id);
    expect(tasks).toHaveLength(3);
    for (const task of tasks) {
      expect(task.status).toBe("failed");
      expect(task.result).toMatch(
        /^The model fake-model cannot call tools \(its server says: registry\.ollama\.ai\/library\/fake-model does not support tools\).*Choose a model that supports tool calling/,
      );
    }
    const alerts = await listInboxItems(tests.database.db, { teamId: team.id, type: "alert" });
    expect(alerts.map((alert) => alert.title)).toEqual([
      "The model fake-model cannot call tools: the team's work with it stopped",
    ]);
    expect(taskResultText("failed", tasks[0]!.result!)).toMatch(/cannot call tools/);
    // One request for all of it: a 400 is not retried, and the other tasks do not ask again.
    expect(openai.requests.filter((request) => (request.tools?.length ?? 0) > 0)).toHaveLength(1);
  });

  it("one that writes its tool calls as text is told once, then its agent's work ends with one clear message", {
    timeout: 60_000,
  }, async () => {
    const { engine, openai } = await engineOn({}, (request) =>
      request.response_format
        ? { text: '{"items":[]}' }
        : { text: '```json\n{"name": "delegateToAgent", "arguments": {"title": "Solar prices"}}\n```' },
    );
    const { team, lead, agents } = await researchTeam("Calls as text", engine);
    await assignTask(tests.database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Grid prices" });
    await runTeam(engine, agents);

    const tasks = await tasksOf(team.id);
    expect(tasks.map((task) => task.status)).toEqual(["failed", "failed"]);
    for (const task of tasks) expect(task.result).toMatch(/^The model fake-model writes its tool calls as text/);
    const alerts = await listInboxItems(tests.database.db, { teamId: team.id, type: "alert" });
    expect(alerts.map((alert) => alert.title)).toEqual([
      "The model fake-model cannot call tools: the team's work with it stopped",
    ]);
    const work = openai.requests.filter((request) => toolNames(request).includes("delegateToAgent"));
    expect(work).toHaveLength(2);
    expect(lastUserText(work[1]!)).toMatch(/^\(Your last answer wrote a tool call out as text/);
  });

  it("the chat says so too", { timeout: 30_000 }, async () => {
    const { engine } = await engineOn({ noTools: true });
    const { lead } = await createTeamFixture(tests.database.db, { name: "No tools chat" });
    const body = await (await streamChatReply(engine.deps, lead.id, "hello?", new AbortController().signal)).text();
    expect(body).toMatch(/"errorText":"The model fake-model cannot call tools/);
  });
});

describe("the chat", () => {
  it("an empty reply says so to the person, and the chat keeps it as an error", { timeout: 30_000 }, async () => {
    const { engine } = await engineOn({ emptyAnswers: true });
    const { lead } = await createTeamFixture(tests.database.db, { name: "Empty chat" });
    const body = await (await streamChatReply(engine.deps, lead.id, "hello?", new AbortController().signal)).text();
    expect(body).toMatch(
      /"type":"error","errorText":"The model fake-model answered with nothing\. Try again, or choose another model for this agent\."/,
    );
    const conversation = await getForegroundConversation(tests.database.db, lead.id);
    await expect
      .poll(async () => (await getAllMessages(tests.database.db, conversation.id)).at(-1)?.content)
      .toBe("(error: The model fake-model answered with nothing. Try again, or choose another model for this agent.)");
  });

  it("a reply cut off at the output limit keeps its words and says so at its end", { timeout: 30_000 }, async () => {
    const full = "Solar prices fell twelve percent this year, driven by cheaper modules and installation.";
    const { engine } = await engineOn({ lengthCut: true }, () => ({ text: full }));
    const { lead } = await createTeamFixture(tests.database.db, { name: "Cut chat" });
    const body = await (await streamChatReply(engine.deps, lead.id, "hello?", new AbortController().signal)).text();
    const told =
      "The reply was cut off at the output limit of the model fake-model. Ask for a shorter answer, raise the model server's output limit, or choose another model for this agent.";
    expect(body).toMatch(/"delta":"Solar /);
    expect(body).toContain(`"type":"error","errorText":${JSON.stringify(told)}`);
    const conversation = await getForegroundConversation(tests.database.db, lead.id);
    await expect
      .poll(async () => (await getAllMessages(tests.database.db, conversation.id)).at(-1)?.content)
      .toBe(`${full.slice(0, Math.ceil(full.length / 2))}\n\n(error: ${told})`);
    // On the page: the words that came, and the notice in plain words (no marker among the words).
    const [, reply] = toChatMessages((await getAllMessages(tests.database.db, conversation.id)).map(toApiMessage));
    expect(reply!.metadata?.error).toBe(told);
    expect(reply!.parts).toEqual([
      { type: "text", text: full.slice(0, Math.ceil(full.length / 2)).trimEnd(), state: "done" },
    ]);
  });

  it("a reply without usage is counted with an estimate", { timeout: 30_000 }, async () => {
    const { engine } = await engineOn({ noUsage: true }, () => ({ text: "Hello there, here is my answer." }));
    const { team, lead } = await createTeamFixture(tests.database.db, { name: "Chat without usage" });
    const body = await (await streamChatReply(engine.deps, lead.id, "hello?", new AbortController().signal)).text();
    expect(body).toMatch(/"delta":"Hello "/);
    expect(body).not.toMatch(/"type":"error"/);
    await expect.poll(async () => (await usageOf(team.id)).length).toBe(1);
    const [row] = await usageOf(team.id);
    expect(row).toMatchObject({ purpose: "chat", estimated: true });
    expect(row!.input_tokens).toBeGreaterThan(0);
    expect(row!.output_tokens).toBeGreaterThan(0);
  });
});
