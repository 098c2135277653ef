// The inbox, knowledge and tool calls, in a real browser against the production build and a worker
// (offline model, fake Tavily): an inbox that scales (team and type filters, archive, paging
// back), knowledge as a compact list that can be edited, tool calls that read as what they did
// with a search's sources linked, the not-found page's h1, and the dark scheme. Screenshots at
// 1440 and 375 px in test-results/polish-*.
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

let database: TestDatabase;
let tavily: FakeTavily;
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const teams: { id: string; leadId: string; scoutId?: string }[] = [];

const call = <T>(pathname: string, init?: ApiRequest) => callApi<T>(app.url, pathname, init);

async function waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe("The inbox, knowledge and tool calls, in a browser", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    tavily = await startFakeTavily();
    app = await startApp({ DATABASE_URL: database.url, TAVILY_API_KEY: "tvly-test", TAVILY_BASE_URL: tavily.url });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    page.on("dialog", (dialog) => void dialog.accept());

    for (const name of ["Grid desk", "Wind desk"]) {
      const created = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
        method: "POST",
        body: { name, mission: `Follow ${name}.`, leadName: "Ada" },
      });
      expect(created.status).toBe(201);
      teams.push({ id: created.body.team.id, leadId: created.body.lead.id });
    }
    const scout = await call<{ agent: { id: string } }>(`/api/teams/${teams[0]!.id}/agents`, {
      method: "POST",
      body: { name: "Scout", instructions: "You research." },
    });
    teams[0]!.scoutId = scout.body.agent.id;
    // Enough of the wind desk's alerts to page: 55 at one instant (ties the cursor must survive).
    for (let index = 0; index < 55; index++) {
      const item = await createInboxItem(database.db, {
        teamId: teams[1]!.id,
        agentId: teams[1]!.leadId,
        type: "alert",
        title: `Wind alert ${index}`,
        summary: "From before.",
        content: "From before.",
      });
      await database.sql`update inbox_items set created_at = '2026-01-01T00:00:00Z', read_at = now() where id = ${item.id}`;
    }
    const given = await call(`/api/agents/${teams[0]!.leadId}/tasks`, {
      method: "POST",
      body: { title: "Research battery storage" },
    });
    expect(given.status).toBe(201);
    await waitFor(
      "a briefing from the grid desk",
      async () =>
        (await call<{ items: unknown[] }>(`/api/inbox?teamId=${teams[0]!.id}&type=briefing`)).body.items.length > 0,
    );
  }, 400_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page
        ?.screenshot({
          path: path.join(shots, `failed-polish-${test.task.name.replace(/\W+/g, "-").slice(0, 60)}.png`),
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

  it("filters the inbox by team and type, pages back without repeats, archives and brings back", async () => {
    await page.goto(`${app.url}/inbox`);
    await settle(page);
    await page.getByRole("heading", { level: 1, name: "Inbox" }).waitFor();
    await shoot(page, "polish-inbox");

    await page.getByRole("combobox", { name: "Filter by team" }).selectOption({ label: "Wind desk" });
    await page.waitForURL(/team=/);
    await settle(page);
    const titles = () => page.locator(".inbox-title").allInnerTexts();
    const first = await titles();
    expect(first).toHaveLength(50);
    expect(first.every((title) => title.startsWith("Wind alert"))).toBe(true);
    await page.getByRole("link", { name: "Older items" }).click();
    await page.waitForURL(/before=/);
    await settle(page);
    const second = await titles();
    expect(second).toHaveLength(5);
    expect(new Set([...first, ...second]).size).toBe(55);
    await page.getByRole("link", { name: "Newest" }).click();
    await page.waitForURL((url) => !url.search.includes("before="));

    await page.getByRole("combobox", { name: "Filter by team" }).selectOption({ label: "Grid desk" });
    await page.waitForURL(new RegExp(`team=${teams[0]!.id}`));
    await settle(page);
    await page.getByRole("navigation", { name: "Filter by type" }).getByRole("link", { name: "Briefings" }).click();
    await page.waitForURL(/type=briefing/);
    await settle(page);
    const briefing = page.locator(".inbox-item").first();
    const title = await briefing.locator(".inbox-title").innerText();
    await briefing.getByRole("button", { name: /^Archive “/ }).click();
    await page.getByText("No briefings yet from Grid desk").waitFor();
    await page.getByRole("link", { name: "Archived" }).click();
    await page.waitForURL(/archived=1/);
    await settle(page);
    await page.getByRole("heading", { level: 1, name: "Archived" }).waitFor();
    await page.locator(".inbox-title", { hasText: title.replace(/\s*\(unread\)\s*$/, "") }).waitFor();
    await shoot(page, "polish-inbox-archived");
    await page.getByRole("button", { name: /^Move back to inbox “/ }).click();
    await page.getByText("Nothing archived from Grid desk").waitFor();
  }, 90_000);

  it("shows knowledge as a compact list with its source, and edits an item in place", async () => {
    await page.goto(`${app.url}/knowledge`);
    await settle(page);
    const row = page.locator(".knowledge-row").first();
    await row.waitFor();
    // The offline scout read a page before recording: the item names it.
    await page.locator(".knowledge-source").first().waitFor();
    await shoot(page, "polish-knowledge");
    await row.getByRole("button", { name: /^Edit “/ }).click();
    const form = page.getByRole("form", { name: /^Edit knowledge item/ });
    await form.getByRole("textbox", { name: "Content" }).fill("Solid-state cells reach 500 Wh/kg in the lab.");
    await form.getByRole("textbox", { name: "Source URL (optional)" }).fill("https://example.org/cells");
    await shoot(page, "polish-knowledge-edit");
    await form.getByRole("button", { name: "Save" }).click();
    const edited = page.locator(".knowledge-row", { hasText: "Solid-state cells reach 500 Wh/kg" });
    await edited.getByText("edited").waitFor();
    expect(await edited.getByRole("link", { name: "example.org" }).getAttribute("href")).toBe(
      "https://example.org/cells",
    );
  }, 60_000);

  it("labels tool calls as what they did, with a search's sources linked; the raw JSON only when opened", async () => {
    await page.goto(`${app.url}/agents/${teams[0]!.scoutId}`);
    await settle(page);
    await page
      .getByText(/^Searched the web for “/)
      .first()
      .waitFor();
    const sources = page.getByRole("list", { name: /^Sources found for/ }).first();
    expect(await sources.getByRole("link").first().getAttribute("href")).toBe("https://example.com/about");
    const search = page.locator("details.tool", { hasText: "Searched the web for" }).first();
    expect(await search.locator(".json").first().isVisible()).toBe(false);
    await search.locator("summary").click();
    expect(await search.locator(".json").first().isVisible()).toBe(true);
    await shoot(page, "polish-work-log");

    // The lead's work log: its delegation names who it went to.
    await page.goto(`${app.url}/agents/${teams[0]!.leadId}`);
    await settle(page);
    await page
      .getByText(/^Delegated to Scout: “/)
      .first()
      .waitFor();
    await shoot(page, "polish-lead-work-log");
    // The chat: the briefing links to its inbox item by id.
    await page.goto(`${app.url}/agents/${teams[0]!.leadId}/chat`);
    await settle(page);
    const { items } = (await call<{ items: { id: string }[] }>(`/api/inbox?teamId=${teams[0]!.id}&type=briefing`)).body;
    expect(
      await page.locator(".message-briefing").getByRole("link", { name: "Open in inbox" }).first().getAttribute("href"),
    ).toBe(`/inbox/${items[0]!.id}`);
  }, 60_000);

  it("gives the not-found page an h1, and reads in the dark scheme", async () => {
    await page.goto(`${app.url}/teams/00000000-0000-4000-8000-000000000000`);
    await settle(page);
    await page.getByRole("heading", { level: 1, name: "Not found" }).waitFor();

    await page.emulateMedia({ colorScheme: "dark" });
    await page.goto(`${app.url}/inbox`);
    await settle(page);
    await shoot(page, "polish-inbox-dark");
    await page.goto(`${app.url}/agents/${teams[0]!.scoutId}`);
    await settle(page);
    await page
      .getByText(/^Searched the web for “/)
      .first()
      .waitFor();
    await shoot(page, "polish-work-log-dark");
    await page.goto(`${app.url}/knowledge`);
    await settle(page);
    await shoot(page, "polish-knowledge-dark");
    await page.emulateMedia({ colorScheme: "light" });
  }, 60_000);
});
