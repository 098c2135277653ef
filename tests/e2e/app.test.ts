// The web app in a real browser (Debian's Chromium through playwright-core) against the
// production build and a worker, with the offline model and a local fake Tavily: a person
// creates a team, chats, asks for research, watches it arrive live, reads the briefing,
// searches knowledge, reads the work log and stops a running session.
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeOpenAI } from "../support/fake-openai";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import { buildIfStale, startApp, type AppServer } from "./app-server";

const XSS = "<img src=x onerror=alert(1)>";
const shots = path.resolve(import.meta.dirname, "../../test-results");
const LIVE = 10_000; // live updates must beat this easily; the product promises ~1 s after the write

let database: TestDatabase;
let tavily: FakeTavily;
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const dialogs: string[] = [];
const releaseSlowSearch: (() => void)[] = [];

let teamId = "";
let scoutId = "";

async function shoot(target: Page, name: string): Promise<void> {
  await target.setViewportSize({ width: 1440, height: 900 });
  await target.screenshot({ path: path.join(shots, `${name}-1440.png`), fullPage: true });
  await target.setViewportSize({ width: 375, height: 812 });
  await target.waitForTimeout(100);
  await target.screenshot({ path: path.join(shots, `${name}-375.png`), fullPage: true });
  // Nothing may stick out sideways on a phone.
  const overflow = await target.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(overflow, `${name} scrolls sideways at 375 px`).toBeLessThanOrEqual(0);
  await target.setViewportSize({ width: 1440, height: 900 });
}

/** Waits until React has revealed the streamed page (its hidden copy is gone). */
async function settle(target: Page): Promise<void> {
  // A not-found page keeps its unused copy; don't wait forever for it.
  await target.waitForFunction(() => !document.querySelector('div[hidden][id^="S:"]'), undefined, { timeout: 3_000 }).catch(() => {});
}

async function noInjectedImages(target: Page): Promise<void> {
  expect(await target.locator('img[src="x"]').count()).toBe(0);
  expect(dialogs).toEqual([]);
}

describe("Cadre in a browser", () => {
  beforeAll(async () => {
    mkdirSync(shots, { recursive: true });
    buildIfStale();
    database = await createTestDatabase();
    tavily = await startFakeTavily(async ({ query }) => {
      // A slow search: the work session is still running when the person stops it. (The search tool
      // cannot be interrupted mid-request, so the session stops when this answers: keep it short.)
      if (/slow/i.test(query)) await new Promise<void>((resolve) => releaseSlowSearch.push(resolve) && setTimeout(resolve, 8_000));
      return {
        results: [
          { title: `About ${query}`, url: "https://example.com/about", content: `Solid-state cells reached 500 Wh/kg in lab tests. ${XSS}` },
        ],
      };
    });
    app = await startApp({ DATABASE_URL: database.url, TAVILY_API_KEY: "tvly-test", TAVILY_BASE_URL: tavily.url });
    browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    context.on("page", (opened) => opened.on("dialog", (dialog) => void (dialog.type() === "confirm" ? dialog.accept() : dialog.dismiss())));
    page.on("dialog", (dialog) => {
      if (dialog.type() === "confirm") return void dialog.accept();
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
  }, 300_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page?.screenshot({ path: path.join(shots, `failed-${test.task.name.replace(/\W+/g, "-").slice(0, 60)}.png`), fullPage: true }).catch(() => {});
      console.error(app?.output().split("\n").slice(-40).join("\n"));
    }
  });

  afterAll(async () => {
    for (const release of releaseSlowSearch) release();
    await browser?.close();
    await app?.stop();
    await tavily?.close();
    await database?.drop();
  }, 60_000);

  it("starts empty, says the model is offline, and creates a team from a drafted prompt", async () => {
    await page.goto(`${app.url}/`);
    await settle(page);
    await page.waitForURL("**/teams");
    await settle(page);
    await page.getByRole("heading", { name: "Teams", level: 1 }).waitFor();
    await page.getByText("No teams yet").waitFor();
    await page.getByText("offline model", { exact: true }).waitFor();
    for (const name of ["Teams", "Inbox", "Knowledge"]) await page.getByRole("link", { name, exact: true }).waitFor();
    await shoot(page, "teams-empty");

    await page.getByLabel("Name", { exact: true }).fill(`Battery ${XSS} Lab`);
    await page.getByLabel("Mission").fill("Track solid-state battery research and tell me what matters.");
    await page.getByRole("button", { name: "Draft instructions" }).click();
    const instructions = page.getByLabel("Lead instructions");
    await instructions.waitFor();
    await expect.poll(() => instructions.inputValue()).toContain("solid-state battery research");
    await instructions.fill(`${await instructions.inputValue()}\n- Keep briefings short.`);
    await shoot(page, "teams-create");
    await page.getByRole("button", { name: "Create team" }).click();
    await page.waitForURL(/\/teams\/[0-9a-f-]{36}$/);
    await settle(page);
    teamId = page.url().split("/").at(-1)!;
    await page.getByRole("heading", { level: 1, name: `Battery ${XSS} Lab` }).waitFor();
    await page.getByText("Keep briefings short.", { exact: false }).count();
    await noInjectedImages(page);
  }, 60_000);

  it("adds, edits and removes subordinates, and pauses and resumes the team", async () => {
    await page.getByLabel("Subordinate name").fill("Scout");
    await page.getByLabel("Subordinate instructions").fill("You search the web and report findings with sources.");
    await page.getByRole("button", { name: "Add subordinate" }).click();
    await page.getByRole("link", { name: "Scout", exact: true }).waitFor();

    await page.getByLabel("Subordinate name").fill("Temp");
    await page.getByRole("button", { name: "Add subordinate" }).click();
    await page.getByRole("link", { name: "Temp", exact: true }).waitFor();
    await page.getByRole("button", { name: "Edit Temp" }).click();
    await page.getByRole("form", { name: "Edit Temp" }).getByLabel("Name").fill("Temporary");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("link", { name: "Temporary", exact: true }).waitFor();
    await page.getByRole("button", { name: "Remove Temporary" }).click();
    await page.getByRole("link", { name: "Temporary", exact: true }).waitFor({ state: "detached" });

    await page.getByRole("button", { name: "Pause team" }).click();
    await page.getByText("This team is paused").waitFor();
    await page.getByRole("button", { name: "Resume team" }).click();
    await page.getByRole("button", { name: "Pause team" }).waitFor();
    scoutId = (await page.getByRole("link", { name: "Scout", exact: true }).getAttribute("href"))!.split("/").at(-1)!;
    await shoot(page, "team");
  }, 60_000);

  it("chats: Enter sends, Shift+Enter breaks the line, the reply streams and survives a reload", async () => {
    await page.getByRole("link", { name: "Chat with the lead" }).click();
    await page.waitForURL(`**/teams/${teamId}/chat`);
    await settle(page);
    const box = page.getByRole("textbox", { name: "Message" });
    await box.waitFor();
    await shoot(page, "chat-empty");
    await box.click();
    await page.keyboard.type("first line");
    await page.keyboard.press("Shift+Enter");
    await page.keyboard.type("second line");
    expect(await box.inputValue()).toBe("first line\nsecond line");
    await box.fill(`Hello there ${XSS}`);
    await page.keyboard.press("Enter");
    await expect.poll(() => box.inputValue()).toBe("");
    await page.getByText("built-in offline model").first().waitFor();
    await page.getByRole("button", { name: "Send" }).waitFor();
    await page.reload();
    await settle(page);
    await page.getByText("built-in offline model").first().waitFor();
    await page.getByText(`Hello there ${XSS}`).filter({ visible: true }).waitFor();
    await noInjectedImages(page);
  }, 60_000);

  it("asks for research and watches the task, the work log and the briefing arrive live", async () => {
    // A second tab on the subordinate's page: its task and work log must appear there without a reload.
    const scoutPage = await context.newPage();
    await scoutPage.goto(`${app.url}/agents/${scoutId}`);
    await settle(scoutPage);
    await scoutPage.getByText("No tasks").waitFor();
    await scoutPage.getByText("No background work yet").waitFor();

    await expect(page.getByTestId("inbox-badge").count()).resolves.toBe(0);
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill(`Please research solid-state batteries ${XSS}`);
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByText("I've created a task for the team").waitFor();
    const toolCall = page.locator("details.tool", { hasText: "createTask" }).first();
    await toolCall.locator("summary").click();
    await toolCall.getByText("Input").waitFor();
    await toolCall.getByText("Output").waitFor();

    // The lead delegates to Scout, Scout searches, records, reports; the lead briefs.
    await scoutPage.locator(".task", { hasText: "solid-state" }).first().waitFor({ timeout: LIVE });
    await scoutPage.locator("details.tool", { hasText: "tavilySearch" }).first().waitFor({ timeout: LIVE });
    await scoutPage.locator(".task[data-status=completed]").first().waitFor({ timeout: 20_000 });
    await page.locator(".message-briefing").first().waitFor({ timeout: 30_000 });
    await page.getByTestId("inbox-badge").filter({ hasText: "1" }).waitFor({ timeout: LIVE });
    await noInjectedImages(page);
    await shoot(page, "chat");

    const search = scoutPage.locator("details.tool", { hasText: "tavilySearch" }).first();
    await search.locator("summary").click();
    await search.getByText("500 Wh/kg", { exact: false }).first().waitFor();
    expect(await scoutPage.locator('img[src="x"]').count()).toBe(0);
    await shoot(scoutPage, "agent-work-log");
    await scoutPage.close();
  }, 90_000);

  it("shows the briefing in the inbox, opens it, and links back to the chat", async () => {
    await page.getByRole("link", { name: "Inbox", exact: true }).click();
    await page.waitForURL("**/inbox");
    await settle(page);
    const item = page.locator(".inbox-item.unread").first();
    await item.waitFor();
    await shoot(page, "inbox");
    await item.locator("a.inbox-title").click();
    await page.waitForURL(/\/inbox\/[0-9a-f-]{36}$/);
    await settle(page);
    await page.getByText("What the team found").waitFor();
    await page.getByTestId("inbox-badge").waitFor({ state: "detached", timeout: LIVE });
    await shoot(page, "briefing");
    await page.getByRole("link", { name: "Open in chat" }).click();
    await page.waitForURL(`**/teams/${teamId}/chat`);
    await settle(page);
    await page.locator(".message-briefing").first().waitFor();

    await page.goto(`${app.url}/inbox`);
    await settle(page);
    await page.getByText("You're all caught up.").waitFor();
  }, 60_000);

  it("searches knowledge, filters it, links to the source and deletes", async () => {
    await page.getByRole("link", { name: "Knowledge", exact: true }).click();
    await page.waitForURL("**/knowledge");
    await settle(page);
    await page.getByRole("searchbox", { name: "Search knowledge" }).fill("Wh/kg");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/q=Wh/);
    await settle(page);
    const item = page.locator(".knowledge-item:visible").first();
    await item.getByText("500 Wh/kg", { exact: false }).waitFor();
    await page.locator("select[name=agentId]:visible").selectOption(scoutId);
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/agentId=/);
    await settle(page);
    await page.locator(".knowledge-item:visible").first().waitFor();
    await noInjectedImages(page);
    await shoot(page, "knowledge");

    await page.getByRole("searchbox", { name: "Search knowledge" }).fill("zebra unicorn");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByText("Nothing matches").filter({ visible: true }).waitFor();
    await page.getByRole("link", { name: "Clear" }).click();
    await page.waitForURL(/\/knowledge$/);
    await settle(page);
    const first = page.locator(".knowledge-item:visible").first();
    await first.getByRole("link", { name: "Source conversation" }).click();
    await page.waitForURL(/\/agents\/[0-9a-f-]{36}#work-log$/);
    await settle(page);
    await page.getByRole("heading", { name: "Work log" }).waitFor();

    await page.goto(`${app.url}/knowledge`);
    await settle(page);
    const before = await page.locator(".knowledge-item:visible").count();
    await page.locator(".knowledge-item:visible").first().getByRole("button", { name: "Delete" }).click();
    await expect.poll(() => page.locator(".knowledge-item:visible").count()).toBe(before - 1);
  }, 60_000);

  it("stops a running work session from the agent page", async () => {
    await page.goto(`${app.url}/teams/${teamId}/chat`);
    await settle(page);
    await page.getByRole("textbox", { name: "Message" }).fill("Please research slow sodium-ion news");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByText("I've created a task for the team: Please research slow").waitFor();

    await page.goto(`${app.url}/agents/${scoutId}`);
    await settle(page);
    const stop = page.getByRole("button", { name: "Stop session" });
    await stop.waitFor({ timeout: 30_000 }); // appears live once Scout's session is in its (hanging) search
    await shoot(page, "agent-running");
    await stop.click();
    await page.locator(".log-stopped").first().waitFor({ timeout: 20_000 });
    await page.getByText("Idle: no work session is running.").waitFor({ timeout: LIVE });
    await page.locator(".task[data-status=cancelled]").first().waitFor({ timeout: LIVE });
    await shoot(page, "agent-stopped");
  }, 60_000);

  it("stops a streaming chat reply with the Stop button", async () => {
    await page.goto(`${app.url}/teams/${teamId}/chat`);
    await settle(page);
    // Hold the request so the reply is still pending when Stop is pressed.
    await page.route("**/api/agents/*/chat", async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      await route.continue().catch(() => {});
    });
    await page.getByRole("textbox", { name: "Message" }).fill("Are you there?");
    await page.keyboard.press("Enter");
    const stop = page.getByRole("button", { name: "Stop" });
    await stop.waitFor();
    await stop.click();
    await page.getByRole("button", { name: "Send" }).waitFor();
    await page.getByText("Are you there?").waitFor();
    await page.unroute("**/api/agents/*/chat");
  }, 30_000);

  it("shows honest empty and not-found states", async () => {
    await page.goto(`${app.url}/agents/00000000-0000-4000-8000-000000000000`);
    await settle(page);
    await page.getByText("Not found").first().waitFor();
    await page.goto(`${app.url}/teams/not-a-uuid`);
    await settle(page);
    await page.getByText("Not found").first().waitFor();
    await shoot(page, "not-found");
    await noInjectedImages(page);
  }, 30_000);

  it("says what to do when the model server fails, instead of a bare error", async () => {
    // A second web server (no worker) on the same database, whose model server refuses the key.
    const model = await startFakeOpenAI(() => ({ fault: "status", status: 401 }));
    const failing = await startApp({ DATABASE_URL: database.url, OPENAI_BASE_URL: model.url, OPENAI_API_KEY: "sk-wrong" }, ["--web-only"]);
    try {
      await page.goto(`${failing.url}/teams/${teamId}/chat`);
      await settle(page);
      await page.getByRole("textbox", { name: "Message" }).fill("Hello?");
      await page.keyboard.press("Enter");
      const alert = page.getByRole("alert").filter({ hasText: "refused the credentials" });
      await alert.waitFor();
      expect(await alert.textContent()).toContain("Check OPENAI_API_KEY");
      expect(await page.getByText("offline model", { exact: true }).count()).toBe(0);
      await shoot(page, "chat-model-error");
    } finally {
      await failing.stop();
      await model.close();
    }
  }, 60_000);
});
