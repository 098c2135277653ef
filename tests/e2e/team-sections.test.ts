// The team page in sections (issue 23, item 3; schedule presets and Escape from item 7), in
// Chromium against the production build with no worker (nothing moves the seeded state): each
// section at its own address and through the section links, the current one marked; the
// Overview with an open question, a held call and the latest briefing; the lead's schedule as
// presets on Settings, each read back through the API as the cron it stores; Escape closing an
// inline form; every section at 1440 and 375 px.
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInboxItem, getOrCreateConversation } from "@/lib/db/queries";
import { createApproval } from "@/lib/db/queries/approvals";
import { createQuestion, getQuestion } from "@/lib/db/queries/questions";
import { createTestDatabase, type TestDatabase } from "../support/database";
import {
  buildIfStale,
  callApi,
  launchChromium,
  settle,
  shoot,
  startApp,
  type ApiRequest,
  type AppServer,
} from "./app-server";

let database: TestDatabase;
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const world = { team: "", lead: "", scout: "", briefing: "", question: "" };

const call = <T>(pathname: string, init?: ApiRequest) => callApi<T>(app.url, pathname, init);

const SECTIONS = [
  { path: "", label: "Overview", heading: "Waiting for you" },
  { path: "/agents", label: "Agents", heading: "Subordinates" },
  { path: "/tools", label: "Tools", heading: "Tools and MCP servers" },
  { path: "/notifications", label: "Notifications", heading: "Notifications" },
  { path: "/settings", label: "Settings", heading: "Danger zone" },
] as const;

async function open(pathname: string): Promise<void> {
  await page.goto(`${app.url}${pathname}`);
  await settle(page);
}

const tabs = () => page.getByRole("navigation", { name: "Team sections" });
const current = () => tabs().locator('a[aria-current="page"]');

async function leadSettings(): Promise<{
  schedule: string | null;
  scheduleTimeZone: string | null;
  model: string | null;
}> {
  return (
    await call<{ agent: { schedule: string | null; scheduleTimeZone: string | null; model: string | null } }>(
      `/api/agents/${world.lead}`,
    )
  ).body.agent;
}

describe("the team page in sections", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    app = await startApp({ DATABASE_URL: database.url }, ["--web-only"]);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();

    const team = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
      method: "POST",
      body: {
        name: "Sodium desk",
        mission: "Follow **sodium-ion** batteries: prices, plants and the people who build them.",
        leadName: "Ada",
      },
    });
    expect(team.status).toBe(201);
    const scout = await call<{ agent: { id: string } }>(`/api/teams/${team.body.team.id}/agents`, {
      method: "POST",
      body: {
        name: "Scout",
        instructions: "You search the web and report with sources.",
        parentAgentId: team.body.lead.id,
      },
    });
    Object.assign(world, { team: team.body.team.id, lead: team.body.lead.id, scout: scout.body.agent.id });

    // What the Overview gathers: the lead's question, Scout's held search, and a briefing.
    const question = await createQuestion(database.db, {
      agentId: world.lead,
      taskId: null,
      recipientAgentId: null,
      question: "Should I include plants in China?",
    });
    await createInboxItem(database.db, {
      teamId: world.team,
      agentId: world.lead,
      type: "question",
      title: "Ada asks",
      summary: question.question,
      content: question.question,
      questionId: question.id,
    });
    const log = await getOrCreateConversation(database.db, world.scout, "background");
    const approval = await createApproval(database.db, {
      teamId: world.team,
      agentId: world.scout,
      conversationId: log.id,
      taskId: null,
      toolCallId: "call_search_1",
      toolName: "tavilySearch",
      input: { query: "sodium-ion cell prices 2026" },
      reason: "",
    });
    await createInboxItem(database.db, {
      teamId: world.team,
      agentId: world.scout,
      type: "approval",
      title: "Scout wants to search the web",
      summary: "",
      content: "",
      approvalId: approval!.id,
    });
    await createInboxItem(database.db, {
      teamId: world.team,
      agentId: world.lead,
      type: "briefing",
      title: "An older briefing",
      summary: "Old news.",
      content: "Old news.",
    });
    const briefing = await createInboxItem(database.db, {
      teamId: world.team,
      agentId: world.lead,
      type: "briefing",
      title: "Sodium-ion cell prices fell 8 %",
      summary: "Cell prices fell **8 %** this quarter; two new plants were announced.",
      content: "The full briefing.",
    });
    Object.assign(world, { briefing: briefing.id, question: question.id });
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await database?.drop();
  });

  it("opens each section at its own address, titled and marked as the current one", async () => {
    for (const section of SECTIONS) {
      await open(`/teams/${world.team}${section.path}`);
      await page.getByRole("heading", { level: 1, name: "Sodium desk" }).waitFor();
      await page.getByRole("heading", { level: 2, name: section.heading, exact: true }).waitFor();
      expect(await current().count(), section.label).toBe(1);
      expect(await current().textContent()).toBe(section.label);
      expect(await page.title()).toBe(
        section.label === "Overview" ? "Sodium desk · Cadre" : `${section.label} · Sodium desk · Cadre`,
      );
      // The shared header on every section: pause, the lead's chat, the timeline.
      for (const name of ["Chat with the lead", "Timeline"])
        expect(await page.getByRole("link", { name, exact: true }).isVisible(), `${section.label}: ${name}`).toBe(true);
      expect(await page.getByRole("button", { name: "Pause team" }).isVisible()).toBe(true);
    }
  });

  it("moves between the sections by their links, and on to the timeline", async () => {
    await open(`/teams/${world.team}`);
    for (const section of [...SECTIONS.slice(1), SECTIONS[0]]) {
      await tabs().getByRole("link", { name: section.label, exact: true }).click();
      await page.waitForURL(`${app.url}/teams/${world.team}${section.path}`);
      await page.getByRole("heading", { level: 2, name: section.heading, exact: true }).waitFor();
      await expect.poll(() => current().textContent()).toBe(section.label);
    }
    await page.getByRole("link", { name: "Timeline", exact: true }).click();
    await page.waitForURL(`${app.url}/teams/${world.team}/timeline`);
    await page.getByRole("heading", { level: 1, name: "Timeline" }).waitFor();
  });

  it("answers an unknown or malformed team with the not-found page on every section", async () => {
    for (const path of [
      "/teams/not-a-team/settings",
      "/teams/00000000-0000-4000-8000-000000000000/agents",
      "/teams/00000000-0000-4000-8000-000000000000",
    ]) {
      // A 404 (tests/e2e/not-found-status.test.ts); what the person sees is the not-found page, without the team's header.
      await open(path);
      await page.getByRole("heading", { level: 1, name: "Not found" }).waitFor();
      expect(await tabs().count(), path).toBe(0);
    }
  });

  it("shows on the Overview what waits for the person and the latest briefing, and takes an answer there", async () => {
    await open(`/teams/${world.team}`);
    const waiting = page.getByRole("region", { name: "Waiting for you" });
    await waiting.getByText("Should I include plants in China?").waitFor();
    expect(await waiting.getByRole("textbox", { name: "Answer" }).isVisible()).toBe(true);
    const held = waiting.locator("article.approval");
    expect(await held.getByText("sodium-ion cell prices 2026").first().isVisible()).toBe(true);
    for (const name of ["Approve", "Edit and approve", "Deny"])
      expect(await held.getByRole("button", { name, exact: true }).isVisible()).toBe(true);

    const latest = page.getByRole("region", { name: "Latest briefing" });
    expect(await latest.getByText("An older briefing").count()).toBe(0);
    expect(await latest.getByRole("link", { name: "Sodium-ion cell prices fell 8 %" }).getAttribute("href")).toBe(
      `/inbox/${world.briefing}`,
    );
    expect(await latest.getByText("two new plants were announced", { exact: false }).isVisible()).toBe(true);
    expect(
      await page.getByRole("region", { name: "Now" }).getByTestId(`activity-${world.scout}`).textContent(),
    ).toContain("idle");
    expect(await page.getByRole("region", { name: "Spending" }).getByText("Tokens today").isVisible()).toBe(true);
    await shoot(page, "team-section-overview-waiting");

    // "Edit and approve" opens the arguments; Escape closes them, back on the button, nothing decided.
    await held.getByRole("button", { name: "Edit and approve" }).click();
    await held.getByLabel("Arguments (JSON)").waitFor();
    await page.keyboard.press("Escape");
    await held.getByLabel("Arguments (JSON)").waitFor({ state: "detached" });
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe("Edit and approve");

    await waiting.getByRole("textbox", { name: "Answer" }).fill("Yes, include them.");
    await waiting.getByRole("button", { name: "Send answer" }).click();
    await expect.poll(async () => (await getQuestion(database.db, world.question))?.status).toBe("answered");
    // Answered, it leaves the list; the held call still waits.
    await expect.poll(() => waiting.getByRole("textbox", { name: "Answer" }).count()).toBe(0);
    expect(await held.getByRole("button", { name: "Approve", exact: true }).isVisible()).toBe(true);

    // A question that arrives while the Overview is open shows without a reload (live events).
    const next = await createQuestion(database.db, {
      agentId: world.scout,
      taskId: null,
      recipientAgentId: null,
      question: "Euros or dollars?",
    });
    await createInboxItem(database.db, {
      teamId: world.team,
      agentId: world.scout,
      type: "question",
      title: "Scout asks",
      summary: next.question,
      content: next.question,
      questionId: next.id,
    });
    await waiting.getByText("Euros or dollars?").waitFor({ timeout: 20_000 });
  });

  it("saves the lead's schedule from presets as the cron they stand for, read back through the API", {
    timeout: 60_000,
  }, async () => {
    await open(`/teams/${world.team}/settings`);
    const form = page.getByRole("form", { name: "The lead's schedule" });
    const runs = form.getByLabel("Runs");
    const preview = form.getByLabel("Schedule preview");
    const save = form.getByRole("button", { name: "Save schedule" });
    expect(await runs.inputValue()).toBe("default");

    const cases: { pick: string; set: () => Promise<void>; reads: string; cron: string }[] = [
      {
        pick: "Every day",
        set: () => form.getByLabel("Time", { exact: true }).fill("06:30"),
        reads: "every day at 06:30 Europe/Berlin",
        cron: "30 6 * * *",
      },
      {
        pick: "Weekdays (Monday to Friday)",
        set: () => form.getByLabel("Time", { exact: true }).fill("18:00"),
        reads: "weekdays at 18:00 Europe/Berlin",
        cron: "0 18 * * 1-5",
      },
      {
        pick: "Once a week",
        set: async () => {
          await form.getByLabel("Day").selectOption({ label: "Wednesday" });
          await form.getByLabel("Time", { exact: true }).fill("09:15");
        },
        reads: "every Wednesday at 09:15 Europe/Berlin",
        cron: "15 9 * * 3",
      },
      {
        pick: "Every hour",
        set: () => form.getByLabel("Minutes past the hour").fill("0"),
        reads: "every hour on the hour",
        cron: "0 * * * *",
      },
      {
        pick: "Advanced (cron)",
        set: () => form.getByLabel("Cron").fill("*/30 * * * *"),
        reads: "every 30 minutes",
        cron: "*/30 * * * *",
      },
    ];
    await form.getByLabel("Time zone").fill("Europe/Berlin");
    for (const each of cases) {
      await runs.selectOption({ label: each.pick });
      await each.set();
      await preview.getByText(each.reads, { exact: true }).waitFor();
      expect(await preview.getByText(/^Next three: /).isVisible(), each.pick).toBe(true);
      if (each.pick === "Once a week") await shoot(page, "team-section-settings-schedule");
      await save.click();
      await expect.poll(async () => (await leadSettings()).schedule, { message: each.pick }).toBe(each.cron);
      await form.getByText("Saved.").waitFor();
    }
    expect((await leadSettings()).scheduleTimeZone).toBe("Europe/Berlin");

    // A bad cron is said, and not saved.
    await form.getByLabel("Cron").fill("every morning");
    await preview.getByText("Not a cron expression.", { exact: false }).waitFor();
    expect(await save.isDisabled()).toBe(true);

    // A stored cron a preset writes opens as that preset; anything else as advanced.
    expect(
      (await call(`/api/agents/${world.lead}`, { method: "PATCH", body: { schedule: "0 8 * * 1-5" } })).status,
    ).toBe(200);
    await open(`/teams/${world.team}/settings`);
    expect(await runs.inputValue()).toBe("weekdays");
    expect(await form.getByLabel("Time", { exact: true }).inputValue()).toBe("08:00");
    expect((await call(`/api/agents/${world.lead}`, { method: "PATCH", body: { schedule: "0 8 1 * *" } })).status).toBe(
      200,
    );
    await open(`/teams/${world.team}/settings`);
    expect(await runs.inputValue()).toBe("advanced");
    expect(await form.getByLabel("Cron").inputValue()).toBe("0 8 1 * *");

    // Back to the default: the schedule is cleared, not written as a cron.
    await runs.selectOption("default");
    await save.click();
    await expect.poll(async () => (await leadSettings()).schedule).toBeNull();
  });

  it("sets the lead's model on Settings", async () => {
    await open(`/teams/${world.team}/settings`);
    const form = page.getByRole("form", { name: "The lead's model" });
    await form.getByLabel("Model").fill("qwen3-8b");
    await form.getByRole("button", { name: "Save model" }).click();
    await expect.poll(async () => (await leadSettings()).model).toBe("qwen3-8b");
    await form.getByLabel("Model").fill("");
    await form.getByRole("button", { name: "Save model" }).click();
    await expect.poll(async () => (await leadSettings()).model).toBeNull();
  });

  it("closes an agent's Edit form on Escape and gives the focus back to Edit, at 375 px too", async () => {
    for (const width of [1440, 375]) {
      await page.setViewportSize({ width, height: width === 1440 ? 900 : 812 });
      await open(`/teams/${world.team}/agents`);
      await page.getByRole("button", { name: "Edit Scout" }).click();
      const form = page.getByRole("form", { name: "Edit Scout" });
      await form.getByLabel("Name").fill("Scout with a change never saved");
      await page.keyboard.press("Escape");
      await form.waitFor({ state: "detached" });
      await expect
        .poll(() => page.evaluate(() => document.activeElement?.getAttribute("aria-label")))
        .toBe("Edit Scout");
      expect(await page.getByRole("link", { name: "Scout", exact: true }).isVisible()).toBe(true);
    }
    await page.setViewportSize({ width: 1440, height: 900 });
    expect((await call<{ agent: { name: string } }>(`/api/agents/${world.scout}`)).body.agent.name).toBe("Scout");
  });

  it("shows every section at 1440 and 375 px, each within about two screens at 1440 px", async () => {
    for (const section of SECTIONS) {
      await open(`/teams/${world.team}${section.path}`);
      await page.getByRole("heading", { level: 2, name: section.heading, exact: true }).waitFor();
      await shoot(page, `team-section-${section.label.toLowerCase()}`);
      const height = await page.evaluate(() => document.documentElement.scrollHeight);
      expect(height, `${section.label} is ${height} px tall at 1440 px`).toBeLessThanOrEqual(2 * 900 + 300);
    }
  });
});
