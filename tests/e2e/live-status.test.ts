// What is happening now, everywhere (issue 14, item 1), in a browser against the production
// build and a worker on the offline model: a lead delegates, its subordinate's web search
// hangs until the test lets it go, and meanwhile the teams list, the team page, the agent
// page and both chat headers say who runs which tool on which task, with a ticking clock, and
// that the lead's subordinate works. After the work ends, the home page lists what finished,
// was briefed and learned since the last visit, and Mark as seen empties it. Screenshots at
// 1440 and 375 px.
import path from "node:path";
import { eq } from "drizzle-orm";
import type { Browser, Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { inboxItems, tasks } from "@/lib/db/schema";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import { buildIfStale, launchChromium, screenshotDir, settle, shoot, startApp, type AppServer } from "./app-server";

let database: TestDatabase;
let tavily: FakeTavily;
let app: AppServer;
let browser: Browser;
let page: Page;
const releaseSearch: (() => void)[] = [];
let team = { id: "", leadId: "", scoutId: "" };

async function call<T>(pathname: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${app.url}${pathname}`, {
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? undefined : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as T };
}

async function waitFor(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The elapsed time shown moves on by itself, with no reload. */
async function expectTicking(clock: Locator): Promise<void> {
  const first = await clock.textContent();
  await expect.poll(() => clock.textContent(), { timeout: 5_000 }).not.toBe(first);
}

async function createTeam(name: string, leadName: string, subordinate?: string) {
  const created = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
    name,
    mission: `${name}: follow ocean energy and brief me.`,
    leadName,
  });
  expect(created.status).toBe(201);
  let subordinateId = "";
  if (subordinate) {
    const added = await call<{ agent: { id: string } }>(`/api/teams/${created.body.team.id}/agents`, {
      name: subordinate,
      instructions: "You research the web.",
    });
    expect(added.status).toBe(201);
    subordinateId = added.body.agent.id;
  }
  return { id: created.body.team.id, leadId: created.body.lead.id, scoutId: subordinateId };
}

describe("What is happening now, everywhere", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    tavily = await startFakeTavily(async ({ query }) => {
      // Held until the test lets it go, so the session is surely mid-tool while the pages are read.
      await new Promise<void>((resolve) => releaseSearch.push(resolve) && setTimeout(resolve, 180_000));
      return {
        results: [
          {
            title: `About ${query}`,
            url: "https://example.com/lagoons",
            content: "Swansea Bay's lagoon would make 320 MW.",
          },
        ],
      };
    });
    app = await startApp({ DATABASE_URL: database.url, TAVILY_API_KEY: "tvly-test", TAVILY_BASE_URL: tavily.url });
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    // A populated list: the running team among quiet ones.
    await createTeam("Wind desk", "Wren");
    team = await createTeam("Tide desk", "Ada", "Scout");
    await createTeam("Solar desk", "Sol", "Ray");
  }, 400_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page
        ?.screenshot({
          path: path.join(screenshotDir, `failed-live-status-${test.task.name.replace(/\W+/g, "-").slice(0, 60)}.png`),
          fullPage: true,
        })
        .catch(() => {});
      console.error(app?.output().split("\n").slice(-40).join("\n"));
    }
  });

  afterAll(async () => {
    for (const release of releaseSearch.splice(0)) release();
    await browser?.close();
    await app?.stop();
    await tavily?.close();
    await database?.drop();
  }, 60_000);

  it("shows the running tool, its task and a ticking clock on the teams list, team page, agent page and chat headers", async () => {
    const given = await call(`/api/agents/${team.leadId}/tasks`, { title: "Research tidal lagoon sites" });
    expect(given.status).toBe(201);
    await waitFor("Scout's web search", () => tavily.requests.length > 0);

    await page.goto(`${app.url}/teams`);
    await settle(page);
    const card = page.locator("li.team-card", { has: page.getByRole("link", { name: "Tide desk", exact: true }) });
    const scout = card.getByTestId(`activity-${team.scoutId}`);
    await scout.getByText(/Searching the web for “/).waitFor();
    await expect.poll(() => scout.textContent()).toMatch(/Scoutworking.*for \d+ s · step 1 · session/);
    await card.getByTestId(`activity-${team.leadId}`).getByText("1 subordinate working").waitFor();
    await card.getByRole("link", { name: "Research tidal lagoon sites" }).first().waitFor();
    await page
      .locator("li.team-card", { has: page.getByRole("link", { name: "Wind desk", exact: true }) })
      .getByText("All idle")
      .waitFor();
    await expectTicking(scout.locator("time.elapsed").first());
    await shoot(page, "live-teams-running");

    await page.goto(`${app.url}/teams/${team.id}/agents`);
    await settle(page);
    const scoutCard = page.getByRole("article", { name: "Scout" });
    await scoutCard.getByText(/Searching the web for “/).waitFor();
    await page.getByRole("article", { name: "Ada" }).getByText("1 subordinate working").waitFor();
    await expectTicking(scoutCard.locator("time.elapsed").first());
    await shoot(page, "live-team-running");

    await page.goto(`${app.url}/agents/${team.scoutId}`);
    await settle(page);
    await page
      .locator(".page-header")
      .getByText(/step 1/)
      .waitFor();
    expect(await page.locator(".page-header").textContent()).not.toContain("0 steps");

    await page.goto(`${app.url}/agents/${team.scoutId}/chat`);
    await settle(page);
    const header = page.locator("header.chat-header");
    await header.getByText(/Searching the web for “/).waitFor();
    await expectTicking(header.locator("time.elapsed").first());
    await shoot(page, "live-chat-subordinate-running");

    await page.goto(`${app.url}/agents/${team.leadId}/chat`);
    await settle(page);
    await page.locator("header.chat-header").getByText("1 subordinate working").waitFor();
    expect(await page.locator("header.chat-header").textContent()).not.toMatch(/\bidle\b/);
    await shoot(page, "live-chat-lead-waiting");

    // The search comes back: the page follows the work to its end by itself (live events).
    for (const release of releaseSearch.splice(0)) release();
    await waitFor(
      "the lead's briefing",
      async () => (await database.db.select().from(inboxItems).where(eq(inboxItems.type, "briefing"))).length > 0,
    );
    await waitFor(
      "the lead's task to end",
      async () =>
        (await database.db.select().from(tasks).where(eq(tasks.agentId, team.leadId)))[0]?.status === "completed",
    );
    await page.locator("header.chat-header").getByText("idle", { exact: true }).waitFor({ timeout: 30_000 });
  }, 240_000);

  it("opens on what finished, was briefed and learned since the last visit, and Mark as seen empties it", async () => {
    await page.goto(`${app.url}/`);
    await settle(page);
    await page.getByRole("heading", { level: 1, name: "Since you were last here" }).waitFor();
    const news = page.getByRole("article", { name: "Tide desk" });
    await news.getByRole("link", { name: "Research tidal lagoon sites" }).first().waitFor();
    await news.getByText("Briefings").waitFor();
    await news.getByText(/^Learned/).waitFor();
    expect(await page.getByRole("article", { name: "Wind desk" }).count()).toBe(0);
    await page.getByText("No one is working right now.").waitFor();
    await shoot(page, "live-home-news");

    await page.getByRole("button", { name: "Mark as seen" }).click();
    await page.getByText("Nothing new since you last looked").waitFor();
    await shoot(page, "live-home-empty");
    // Kept across visits.
    await page.reload();
    await settle(page);
    await page.getByText("Nothing new since you last looked").waitFor();
  }, 60_000);
});
