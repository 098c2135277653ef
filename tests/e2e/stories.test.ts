// A research request with two subordinates, told as one story (issue 23, item 1), in a real
// browser against the production build and a worker. The model is a local OpenAI-compatible
// server playing a research team: the lead delegates to both subordinates at once, each searches
// twice, reads a page, saves a fact and reports; with both reports in, the lead briefs. The
// story must fit one screen at 1440 px collapsed, say what each agent did in words with its
// duration and cost, and open its steps. Screenshots at 1440 and 375 px.
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseLogInput } from "@/lib/core/formats";
import { createTestDatabase, type TestDatabase } from "../support/database";
import {
  lastUserText,
  separatedMessages,
  startFakeOpenAI,
  type FakeChatRequest,
  type FakeOpenAI,
  type FakeReply,
} from "../support/fake-openai";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import {
  buildIfStale,
  callApi,
  launchChromium,
  screenshotDir,
  settle,
  shoot,
  startApp,
  type AppServer,
} from "./app-server";

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
const usage = { prompt_tokens: 2400, completion_tokens: 120, cached_tokens: 1800 };

const callsSoFar = (request: FakeChatRequest, name: string) =>
  request.messages.flatMap((message) => message.tool_calls ?? []).filter((call) => call.function.name === name).length;
const reportsSoFar = (request: FakeChatRequest) =>
  separatedMessages(request.messages).filter(
    (message) =>
      message.role === "user" &&
      typeof message.content === "string" &&
      parseLogInput(message.content)?.kind === "report",
  ).length;

/** A research team, decided from each request alone. */
function researchTeam(request: FakeChatRequest): FakeReply {
  if (request.response_format) return { text: '{"items":[]}', usage };
  const tools = (request.tools ?? []).map((tool) => tool.function.name);
  if (tools.length === 0) return { text: "Summary of the work so far.", usage };
  const last = request.messages.at(-1)!;
  const text = lastUserText(request);
  if (tools.includes("reportToLead")) {
    const topic =
      /Angle: (.+)/.exec(
        request.messages.map((message) => (typeof message.content === "string" ? message.content : "")).join("\n"),
      )?.[1] ?? "the topic";
    if (callsSoFar(request, "tavilySearch") === 0)
      return { toolCalls: [{ name: "tavilySearch", arguments: { query: `${topic} 2026` } }], usage };
    if (callsSoFar(request, "tavilySearch") === 1)
      return { toolCalls: [{ name: "tavilySearch", arguments: { query: `${topic} pilot lines` } }], usage };
    if (callsSoFar(request, "readWebPage") === 0)
      return { toolCalls: [{ name: "readWebPage", arguments: { url: "https://example.com/solid-state" } }], usage };
    if (callsSoFar(request, "addKnowledgeItem") === 0) {
      return {
        toolCalls: [
          {
            name: "addKnowledgeItem",
            arguments: { type: "fact", content: `On ${topic}: pilot cells reached 500 Wh/kg.`, confidence: 0.8 },
          },
        ],
        usage,
      };
    }
    if (callsSoFar(request, "reportToLead") === 0) {
      return {
        toolCalls: [
          {
            name: "reportToLead",
            arguments: { result: `On ${topic}: pilot cells reached 500 Wh/kg; two pilot lines open in 2026.` },
          },
        ],
        usage,
      };
    }
    return { text: "Reported.", usage };
  }
  if (last.role === "tool") {
    if (callsSoFar(request, "createInboxItem") > 0)
      return { text: "Briefed the person on solid-state batteries.", usage };
    return { text: "Asked Scout and Analyst; I will brief you when both have reported.", usage };
  }
  const input = parseLogInput(text);
  if (input?.kind === "report") {
    if (reportsSoFar(request) < 2) return { text: "One report in; waiting for the other.", usage };
    return {
      toolCalls: [
        {
          name: "createInboxItem",
          arguments: {
            title: "Solid-state batteries: pilot lines open",
            summary: "Pilot cells reached 500 Wh/kg; two pilot lines open in 2026.",
            content: "## Solid-state batteries\n\nPilot cells reached 500 Wh/kg, and two pilot lines open in 2026.",
          },
        },
      ],
      usage,
    };
  }
  if (/Decide whether to brief/.test(text)) return { text: "No briefing needed.", usage };
  if (input?.kind === "task") {
    const [scout, analyst] = systemText(request)
      .split("\n")
      .filter((line) => line.startsWith("- ") && UUID.test(line))
      .map((line) => UUID.exec(line)![0]);
    return {
      toolCalls: [
        {
          id: "call_scout",
          name: "delegateToAgent",
          arguments: { agentId: scout, title: "Find the latest results", description: "Angle: solid-state results" },
        },
        {
          id: "call_analyst",
          name: "delegateToAgent",
          arguments: {
            agentId: analyst,
            title: "Map the manufacturers",
            description: "Angle: solid-state manufacturers",
          },
        },
      ],
      usage,
    };
  }
  return { text: "Nothing to do.", usage };
}

const systemText = (request: FakeChatRequest) =>
  String(request.messages.find((message) => message.role === "system")?.content ?? "");

let database: TestDatabase;
let model: FakeOpenAI;
let tavily: FakeTavily;
let app: AppServer;
let browser: Browser;
let page: Page;
let teamId: string;

describe("A research request told as one story, in a browser", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    model = await startFakeOpenAI(researchTeam);
    tavily = await startFakeTavily();
    app = await startApp({
      DATABASE_URL: database.url,
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: "sk-test",
      LLM_MODEL: "gpt-4o-mini",
      TAVILY_API_KEY: "tvly-test",
      TAVILY_BASE_URL: tavily.url,
    });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    page.setDefaultTimeout(15_000);

    const call = <T>(pathname: string, body?: unknown) =>
      callApi<T>(app.url, pathname, body === undefined ? {} : { method: "POST", body });
    const created = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
      name: "Battery desk",
      mission: "Follow battery research.",
      leadName: "Ada",
    });
    expect(created.status).toBe(201);
    teamId = created.body.team.id;
    for (const name of ["Scout", "Analyst"])
      expect((await call(`/api/teams/${teamId}/agents`, { name, instructions: "You research." })).status).toBe(201);
    const given = await call(`/api/agents/${created.body.lead.id}/tasks`, {
      title: "Research solid-state batteries",
      description: "What changed this year, and who makes them?",
    });
    expect(given.status).toBe(201);
    const deadline = Date.now() + 90_000;
    for (;;) {
      const tasks = (await call<{ tasks: { status: string }[] }>(`/api/agents/${created.body.lead.id}/tasks`)).body
        .tasks;
      if (tasks.every((task) => task.status === "completed")) break;
      if (Date.now() > deadline)
        throw new Error(`The lead's task did not complete:\n${app.output().split("\n").slice(-30).join("\n")}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }, 400_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page
        ?.screenshot({
          path: path.join(screenshotDir, `failed-stories-${test.task.name.replace(/\W+/g, "-").slice(0, 60)}.png`),
          fullPage: true,
        })
        .catch(() => {});
    }
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await model?.close();
    await tavily?.close();
    await database?.drop();
  }, 60_000);

  it("shows the request with two subordinates as one story that fits one screen, each agent's work in words with duration and cost", async () => {
    await page.goto(`${app.url}/teams/${teamId}/timeline`);
    await settle(page);
    const stories = page.getByRole("list", { name: "Stories, newest first" }).locator(":scope > li");
    expect(await stories.count()).toBe(1);
    const story = page.getByRole("article", { name: "Research solid-state batteries" });
    const text = await story.innerText();
    expect(text).toMatch(/You asked/);
    expect(text).toMatch(/\bDone\b/);
    expect(text).toMatch(/Ada delegated 2 tasks, sent a briefing\./);
    expect(text).toMatch(
      /Scout worked on “Find the latest results”: searched the web twice, read 1 page, saved 1 fact\./,
    );
    expect(text).toMatch(
      /Analyst worked on “Map the manufacturers”: searched the web twice, read 1 page, saved 1 fact\./,
    );
    expect(text.match(/Reported: On solid-state/g)).toHaveLength(2);
    expect(text).toMatch(/Briefing: Solid-state batteries: pilot lines open/);
    // Priced at gpt-4o-mini's list price: the story and each part say what they cost.
    expect(text.match(/\$0\.\d+/g)?.length).toBeGreaterThanOrEqual(4);
    expect(text).toMatch(/Answer: Briefed the person on solid-state batteries\./);
    // Nothing internal: no ids, no tool names.
    expect(text).not.toMatch(UUID);
    expect(text).not.toMatch(/tavilySearch|delegateToAgent|reportToLead|createInboxItem/);
    expect((await story.boundingBox())!.height).toBeLessThan(900 - 320);
    await shoot(page, "story-two-subordinates");

    await story.getByRole("button", { name: "Show steps" }).click();
    const steps = story.getByRole("list", { name: /^Steps of/ }).locator(":scope > li");
    await expect.poll(() => steps.count()).toBeGreaterThan(15);
    expect(new Set(await steps.locator(".tl-agent").allInnerTexts())).toEqual(new Set(["Ada", "Scout", "Analyst"]));
    await shoot(page, "story-two-subordinates-steps");
  });
});
