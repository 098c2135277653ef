// The team timeline and the session trace in a real browser (Debian's Chromium through
// playwright-core) against the production build and a worker, with the offline model and a
// local fake Tavily: a lead delegates to a subordinate, which researches and reports; the
// timeline shows it with the delegation linked, filters, pages back and takes new work live;
// the subordinate's session opens as a waterfall. Screenshots at 1440 and 375 px.
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createInboxItem } from "@/lib/db/queries";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import {
  buildIfStale,
  launchChromium,
  screenshotDir as shots,
  settle,
  shoot,
  startApp,
  type AppServer,
  callApi,
  type ApiRequest,
} from "./app-server";

const LIVE = 30_000; // the worker's sessions come first on a loaded machine

let database: TestDatabase;
let tavily: FakeTavily;
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let team: { id: string; leadId: string; scoutId: string };

const call = <T>(pathname: string, init?: ApiRequest) => callApi<T>(app.url, pathname, init);

async function waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

type ApiTask = { id: string; title: string; status: string };
const tasksOf = async (agentId: string) =>
  (await call<{ tasks: ApiTask[] }>(`/api/agents/${agentId}/tasks`)).body.tasks;

describe("The team timeline and the session trace, in a browser", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    tavily = await startFakeTavily();
    app = await startApp({ DATABASE_URL: database.url, TAVILY_API_KEY: "tvly-test", TAVILY_BASE_URL: tavily.url });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();

    const created = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
      method: "POST",
      body: { name: "Grid desk", mission: "Follow grid-scale storage.", leadName: "Ada" },
    });
    expect(created.status).toBe(201);
    const scout = await call<{ agent: { id: string } }>(`/api/teams/${created.body.team.id}/agents`, {
      method: "POST",
      body: { name: "Scout", instructions: "You research." },
    });
    expect(scout.status).toBe(201);
    team = { id: created.body.team.id, leadId: created.body.lead.id, scoutId: scout.body.agent.id };
    // Older history than the work below: what "Load older" has to reach.
    for (let i = 0; i < 60; i++) {
      await createInboxItem(database.db, {
        teamId: team.id,
        agentId: team.leadId,
        type: "alert",
        title: `Old alert ${i}`,
        summary: "From before.",
        content: "From before.",
      });
    }
    const given = await call(`/api/agents/${team.leadId}/tasks`, {
      method: "POST",
      body: { title: "Research battery storage" },
    });
    expect(given.status).toBe(201);
    await waitFor("the lead's task to complete", async () =>
      (await tasksOf(team.leadId)).every((task) => task.status === "completed"),
    );
    await waitFor("the scout's task to complete", async () =>
      (await tasksOf(team.scoutId)).some((task) => task.status === "completed"),
    );
  }, 400_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page
        ?.screenshot({
          path: path.join(shots, `failed-timeline-${test.task.name.replace(/\W+/g, "-").slice(0, 60)}.png`),
          fullPage: true,
        })
        .catch(() => {});
      console.error(app?.output().split("\n").slice(-40).join("\n"));
    }
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await tavily?.close();
    await database?.drop();
  }, 60_000);

  it("opens from the team page and shows the delegation linked: the lead's call → the scout's task and session → the report", async () => {
    await page.goto(`${app.url}/teams/${team.id}`);
    await settle(page);
    await page.getByRole("link", { name: "Timeline", exact: true }).click();
    await page.waitForURL(`**/teams/${team.id}/timeline`);
    await settle(page);
    // Stories first; the engine's record entry by entry is one click away.
    await page.getByRole("navigation", { name: "Timeline view" }).getByRole("link", { name: "Every step" }).click();
    await page.waitForURL(`**/teams/${team.id}/timeline?view=steps`);
    await settle(page);
    const timeline = page.getByRole("list", { name: "Timeline, newest first" });
    const entries = timeline.locator(":scope > li");
    expect(await entries.count()).toBe(50);

    const delegation = timeline.locator(".tl-call").filter({ hasText: "delegateToAgent" });
    await expect.poll(() => delegation.count()).toBe(1);
    expect(await delegation.innerText()).toMatch(/delegated: Scout's task “.+” completed/);
    const report = entries.filter({ hasText: "Report from Scout" });
    expect(await report.count()).toBe(1);
    expect(await report.locator(".tl-agent").innerText()).toBe("Ada");
    expect(await report.innerText()).toMatch(/on Scout's task/);
    // the delegation and the report name the same session: the one the scout worked in
    const sessionOfDelegation = await delegation.getByRole("link", { name: "its session" }).getAttribute("href");
    expect(sessionOfDelegation).toMatch(/^\/sessions\/[0-9a-f-]{36}$/);
    expect(await report.getByRole("link", { name: "its session" }).getAttribute("href")).toBe(sessionOfDelegation);
    const scoutEntry = entries
      .filter({ has: page.locator(".tl-agent", { hasText: "Scout" }) })
      .filter({ hasText: "tavilySearch" });
    expect(await scoutEntry.getByRole("link", { name: "session trace" }).getAttribute("href")).toBe(
      sessionOfDelegation,
    );

    // raw JSON only when a call is opened
    const search = scoutEntry.locator("details.tool").first();
    expect(await search.locator("pre.json").first().isVisible()).toBe(false);
    await search.locator("summary").click();
    expect(await search.locator("pre.json").first().innerText()).toContain('"query"');
    await search.locator("summary").click();
    await shoot(page, "timeline");
  });

  it("pages back with Load older until the beginning, without repeats", async () => {
    await page.goto(`${app.url}/teams/${team.id}/timeline?view=steps`);
    await settle(page);
    const entries = page.getByRole("list", { name: "Timeline, newest first" }).locator(":scope > li");
    for (let pages = 0; pages < 5 && (await page.getByRole("button", { name: "Load older" }).count()) > 0; pages++) {
      const before = await entries.count();
      await page.getByRole("button", { name: "Load older" }).click();
      await expect.poll(() => entries.count()).toBeGreaterThan(before);
    }
    await page.getByText("The beginning of this team's history.").waitFor();
    const ids = await entries.evaluateAll((items) => items.map((item) => item.id));
    expect(new Set(ids).size).toBe(ids.length);
    expect(await entries.filter({ hasText: "Old alert 0" }).count()).toBe(1);
    expect(await entries.filter({ hasText: /Old alert \d+/ }).count()).toBe(60);
  });

  it("filters by kind and by agent, in the URL", async () => {
    await page.goto(`${app.url}/teams/${team.id}/timeline?view=steps`);
    await settle(page);
    const form = page.getByRole("form", { name: "Filter the timeline" });
    await form.getByLabel("Kind").selectOption({ label: "Reports" });
    await form.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/kind=report/);
    await settle(page);
    const entries = page.getByRole("list", { name: "Timeline, newest first" }).locator(":scope > li");
    expect(await entries.count()).toBe(1);
    expect(await entries.first().innerText()).toContain("Report from Scout");

    await page.goto(`${app.url}/teams/${team.id}/timeline?view=steps&agent=${team.scoutId}`);
    await settle(page);
    expect(await page.getByRole("form", { name: "Filter the timeline" }).getByLabel("Agent").inputValue()).toBe(
      team.scoutId,
    );
    const agents = await entries.locator(".tl-agent").allInnerTexts();
    expect(agents.length).toBeGreaterThan(3);
    expect(new Set(agents)).toEqual(new Set(["Scout"]));
    await shoot(page, "timeline-filtered");
    await page.getByRole("link", { name: "Clear" }).click();
    await page.waitForURL(`**/teams/${team.id}/timeline?view=steps`);
  });

  it("tells the request as one story that fits one screen collapsed, with its steps on demand", async () => {
    await page.goto(`${app.url}/teams/${team.id}/timeline`);
    await settle(page);
    const stories = page.getByRole("list", { name: "Stories, newest first" }).locator(":scope > li");
    expect(await stories.count()).toBe(1);
    const story = page.getByRole("article", { name: "Research battery storage" });
    const text = await story.innerText();
    expect(text).toMatch(/You asked/);
    expect(text).toMatch(/Done/);
    expect(text).toMatch(/Scout worked on “.+”: searched the web once, read 1 page, saved 1 fact\./);
    expect(text).toMatch(/Reported: /);
    expect(text).toMatch(/Briefing: /);
    expect(text).toMatch(/under a second|\d+ s|\d+ min/);
    // Collapsed, the whole story fits one screen at 1440 × 900.
    expect((await story.boundingBox())!.height).toBeLessThan(900);
    await shoot(page, "timeline-stories");

    await story.getByRole("button", { name: "Show steps" }).click();
    const steps = story.getByRole("list", { name: /^Steps of/ }).locator(":scope > li");
    await expect.poll(() => steps.count()).toBeGreaterThan(8);
    const agents = new Set(await steps.locator(".tl-agent").allInnerTexts());
    expect(agents).toEqual(new Set(["Ada", "Scout"]));
    // each step links to its session's trace
    expect(await steps.getByRole("link", { name: "session trace" }).count()).toBeGreaterThan(3);
    await shoot(page, "timeline-story-steps");
    await story.getByRole("button", { name: "Hide steps" }).click();

    // A story is found from any of its tasks: the scout's opens the same story with its steps.
    const scoutTask = (await tasksOf(team.scoutId))[0]!;
    await page.goto(`${app.url}/teams/${team.id}/timeline?story=${scoutTask.id}`);
    await settle(page);
    await page
      .getByRole("article", { name: "Research battery storage" })
      .getByRole("list", { name: /^Steps of/ })
      .waitFor();
    // A story that is not the team's says so, and the stories still show.
    await page.goto(`${app.url}/teams/${team.id}/timeline?story=00000000-0000-4000-8000-000000000000`);
    await settle(page);
    await page.getByText("That story is not in this team's timeline").waitFor();
    expect(await page.getByRole("list", { name: "Stories, newest first" }).locator(":scope > li").count()).toBe(1);
  });

  it("shows new work at the top as it happens, without a reload", async () => {
    await page.goto(`${app.url}/teams/${team.id}/timeline?view=steps`);
    await settle(page);
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    const given = await call(`/api/agents/${team.leadId}/tasks`, {
      method: "POST",
      body: { title: "Research pumped hydro" },
    });
    expect(given.status).toBe(201);
    const first = page
      .getByRole("list", { name: "Timeline, newest first" })
      .locator(":scope > li")
      .filter({ hasText: "Research pumped hydro" })
      .first();
    await first.waitFor({ timeout: LIVE });
    // the work goes on and keeps arriving: the scout's report on the new task
    await page.locator(".tl-entry", { hasText: "Report from Scout" }).nth(1).waitFor({ timeout: LIVE });
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
  });

  it("opens a session's trace from the timeline: its model and tool calls as a waterfall, its outcome", async () => {
    await page.goto(`${app.url}/teams/${team.id}/timeline?view=steps&agent=${team.scoutId}&kind=work`);
    await settle(page);
    await page
      .locator(".tl-entry", { hasText: "tavilySearch" })
      .last()
      .getByRole("link", { name: "session trace" })
      .click();
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
    await settle(page);
    await page.getByRole("heading", { name: /Work session of Scout/ }).waitFor();
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toContain("completed");
    const outcome = page.getByRole("region", { name: "Outcome" });
    expect(await outcome.getByText("Tool calls").locator("xpath=..").innerText()).toMatch(/Tool calls\s*4/);
    const rows = page
      .getByRole("list", { name: "Model calls, tool calls and events in time order" })
      .locator(":scope > li");
    const names = await rows.locator(".wf-title").allInnerTexts();
    // Tool calls read as what they did; the technical name opens with the call.
    const calls = names.filter((name) => !name.includes("offline"));
    expect(calls).toHaveLength(4);
    expect(calls[0]).toMatch(/^Searched the web for “/);
    expect(calls[1]).toMatch(/^Read example\.com/);
    expect(calls[2]).toMatch(/^Saved fact: “/);
    expect(calls[3]).toMatch(/^Reported to the lead: “/);
    expect(names.filter((name) => name === "offline").length).toBeGreaterThanOrEqual(5);
    expect(await rows.filter({ hasText: "Extraction" }).count()).toBe(1);
    expect(await rows.filter({ hasText: "Task taken up" }).count()).toBe(1);
    // every bar says where it sits for a screen reader
    const labels = await rows
      .locator(".wf-track")
      .evaluateAll((tracks) => tracks.map((track) => track.getAttribute("aria-label") ?? ""));
    expect(labels.every((label) => /\+\d/.test(label))).toBe(true);
    // a model call opens to its tokens and finish reason; a tool call to its arguments and result
    const model = rows.filter({ hasText: "Model call" }).first();
    await model.locator("summary").click();
    expect(await model.locator(".wf-facts").innerText()).toMatch(/Finish reason\s*tool-calls/);
    const tool = rows.filter({ hasText: "tavilySearch" });
    await tool.locator("summary").click();
    expect(await tool.locator("pre.json").first().innerText()).toContain('"query"');
    await shoot(page, "session-trace");

    // and from the agent page's sessions
    await page.goto(`${app.url}/agents/${team.scoutId}`);
    await settle(page);
    const trace = page.getByRole("region", { name: "Recent sessions" }).getByRole("link", { name: "Trace" }).first();
    expect(await trace.getAttribute("href")).toMatch(/^\/sessions\/[0-9a-f-]{36}$/);
  });
});
