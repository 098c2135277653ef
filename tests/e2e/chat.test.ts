// Every agent's chat and the history behind it, in a real browser (Debian's Chromium through
// playwright-core) against the production build and a worker with the offline model: a
// subordinate's chat reached from the team page, streaming and Stop (a second web server on
// a slow fake model), a model error said once with Retry, older messages paged in, the work
// log grouped by session with each step's tokens, and search across the team's
// conversations. Screenshots at 1440 and 375 px.
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { appendMessages, getBackgroundConversation, getForegroundConversation } from "@/lib/db/queries";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai";
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
let model: FakeOpenAI;
let app: AppServer;
/** The same database behind a web server whose model is the fake one: slow streams and failures on demand. */
let slow: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let team: { id: string; leadId: string; scoutId: string };
let failuresLeft = 0;

const call = <T>(pathname: string, init?: ApiRequest) => callApi<T>(app.url, pathname, init);

async function waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

type ApiTask = { id: string; title: string; status: string };
const tasksOf = async (agentId: string) =>
  (await call<{ tasks: ApiTask[] }>(`/api/agents/${agentId}/tasks`)).body.tasks;

describe("Every agent's chat and its history, in a browser", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    tavily = await startFakeTavily();
    model = await startFakeOpenAI((request) => {
      const last = request.messages.findLast((message) => message.role === "user");
      const text = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content ?? "");
      if (/fail/i.test(text) && failuresLeft > 0) {
        failuresLeft -= 1;
        return { fault: "status", status: 401 };
      }
      if (/slow/i.test(text))
        return {
          text: `Tidal power is ${"a steady, predictable source of energy that follows the moon. ".repeat(12)}`,
          chunkDelayMs: 250,
        };
      return { text: "Recovered: here is my answer." };
    });
    app = await startApp({ DATABASE_URL: database.url, TAVILY_API_KEY: "tvly-test", TAVILY_BASE_URL: tavily.url });
    slow = await startApp({ DATABASE_URL: database.url, OPENAI_BASE_URL: model.url, OPENAI_API_KEY: "sk-test" }, [
      "--web-only",
    ]);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();

    const created = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
      method: "POST",
      body: { name: "Tide desk", mission: "Follow tidal and wave power.", leadName: "Ada" },
    });
    expect(created.status).toBe(201);
    const scout = await call<{ agent: { id: string } }>(`/api/teams/${created.body.team.id}/agents`, {
      method: "POST",
      body: { name: "Scout", instructions: "You research." },
    });
    expect(scout.status).toBe(201);
    team = { id: created.body.team.id, leadId: created.body.lead.id, scoutId: scout.body.agent.id };

    // Deep history: 260 messages in the scout's chat, and 150 in its work log before any session (ending with its own words, so nothing waits for an answer).
    const chat = await getForegroundConversation(database.db, team.scoutId);
    await appendMessages(
      database.db,
      chat.id,
      Array.from({ length: 260 }, (_, i) => ({
        role: i % 2 ? ("assistant" as const) : ("user" as const),
        content: i % 2 ? `Old answer ${i}` : `Old question ${i} about geothermal`,
      })),
    );
    const log = await getBackgroundConversation(database.db, team.scoutId);
    await appendMessages(
      database.db,
      log.id,
      Array.from({ length: 150 }, (_, i) => ({
        role: i % 2 ? ("assistant" as const) : ("user" as const),
        content: `Old log entry ${i}`,
      })),
    );
    const given = await call(`/api/agents/${team.scoutId}/tasks`, {
      method: "POST",
      body: { title: "Research tidal lagoons" },
    });
    expect(given.status).toBe(201);
    await waitFor("the scout's task to complete", async () =>
      (await tasksOf(team.scoutId)).every((task) => task.status === "completed"),
    );
  }, 400_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page
        ?.screenshot({
          path: path.join(shots, `failed-chat-${test.task.name.replace(/\W+/g, "-").slice(0, 60)}.png`),
          fullPage: true,
        })
        .catch(() => {});
      console.error(app?.output().split("\n").slice(-40).join("\n"));
    }
  });

  afterAll(async () => {
    await browser?.close();
    await slow?.stop();
    await app?.stop();
    await model?.close();
    await tavily?.close();
    await database?.drop();
  }, 60_000);

  it("opens a subordinate's chat from the team page, pages its history back, and takes work for itself", async () => {
    await page.goto(`${app.url}/teams/${team.id}/agents`);
    await settle(page);
    await page.getByRole("link", { name: "Chat with Ada" }).waitFor();
    await shoot(page, "team-agent-chat-links");
    await page.getByRole("link", { name: "Chat with Scout" }).click();
    await page.waitForURL(`**/agents/${team.scoutId}/chat`);
    await settle(page);
    await page.getByRole("heading", { name: "Scout", level: 1 }).waitFor();
    await page.getByText("Reports to").waitFor();
    const log = page.getByRole("log", { name: "Conversation with Scout" });
    expect(await log.getAttribute("aria-live")).toBe("polite");
    const items = log.locator(":scope > li");
    expect(await items.count()).toBe(100);
    expect(await page.getByRole("textbox", { name: "Message" }).getAttribute("placeholder")).toBe("Message Scout…");

    await page.getByRole("button", { name: "Load older messages" }).waitFor();
    await shoot(page, "chat-load-older");
    // Older pages, until the first message; nothing twice.
    for (
      let pages = 0;
      pages < 4 && (await page.getByRole("button", { name: "Load older messages" }).count()) > 0;
      pages++
    ) {
      const before = await items.count();
      const firstShown = await items.first().innerText();
      await page.getByRole("button", { name: "Load older messages" }).click();
      await expect.poll(() => items.count()).toBeGreaterThan(before);
      // what was read stays on screen: the old first message is still where the eye was
      expect(await items.nth((await items.count()) - before).innerText()).toBe(firstShown);
    }
    expect(await page.getByRole("button", { name: "Load older messages" }).count()).toBe(0);
    expect(await items.count()).toBe(260);
    expect(await items.filter({ hasText: "Old question 0 about" }).count()).toBe(1);
    await shoot(page, "chat-subordinate-history");

    // Work for itself: the offline model creates the scout's own task.
    await page.getByRole("textbox", { name: "Message" }).fill("Please research wave energy converters");
    await page.keyboard.press("Enter");
    await items.last().filter({ hasText: "createTask" }).waitFor();
    await items.last().filter({ hasText: "I've created a task" }).waitFor();
    await waitFor("the scout's own task", async () =>
      (await tasksOf(team.scoutId)).some((task) => /wave energy converters/.test(task.title)),
    );
    expect((await tasksOf(team.leadId)).some((task) => /wave energy/.test(task.title))).toBe(false);
    await shoot(page, "chat-subordinate");
  }, 120_000);

  it("keeps the lead's old chat address: /teams/:id/chat opens the lead's chat", async () => {
    await page.goto(`${app.url}/teams/${team.id}/chat`);
    await page.waitForURL(`**/agents/${team.leadId}/chat`);
    await settle(page);
    await page.getByRole("heading", { name: "Ada", level: 1 }).waitFor();
  });

  it("streams a reply and stops it with Stop: the words so far stay, marked once", async () => {
    await page.goto(`${slow.url}/agents/${team.scoutId}/chat`);
    await settle(page);
    const log = page.getByRole("log", { name: "Conversation with Scout" });
    await page.getByRole("textbox", { name: "Message" }).fill("Tell me slowly about tidal power");
    await page.keyboard.press("Enter");
    await log.getByText("Tidal power is").waitFor();
    expect(await log.getAttribute("aria-busy")).toBe("true");
    await page.getByRole("button", { name: "Stop" }).click();
    await page.getByRole("button", { name: "Send" }).waitFor();
    const reply = log.locator(":scope > li").last();
    await reply.getByText("Stopped by you.").waitFor();
    // After the reload from the database the stored marker reads the same, and only once.
    await page.reload();
    await settle(page);
    const stored = page.getByRole("log", { name: "Conversation with Scout" }).locator(":scope > li").last();
    await stored.getByText("Tidal power is").waitFor();
    expect(await stored.getByText("Stopped by you.").count()).toBe(1);
    expect(await stored.innerText()).not.toContain("(stopped");
    await shoot(page, "chat-stopped");
  }, 60_000);

  it("says a model error once, with Retry, and Retry answers", async () => {
    failuresLeft = 1;
    await page.goto(`${slow.url}/agents/${team.scoutId}/chat`);
    await settle(page);
    await page.getByRole("textbox", { name: "Message" }).fill("This will fail the first time");
    await page.keyboard.press("Enter");
    const alert = page.getByRole("alert").filter({ hasText: "refused the credentials" });
    await alert.waitFor();
    // The reload from the database brings the stored error; it is still said once, never as "(error: …)".
    await page.waitForTimeout(1_500);
    expect(await page.getByRole("alert").filter({ hasText: "refused the credentials" }).count()).toBe(1);
    expect(await page.getByText("(error:").count()).toBe(0);
    await page.setViewportSize({ width: 375, height: 812 });
    // Retry and Dismiss stay one line each on a phone.
    const retry = page.getByRole("alert").getByRole("button", { name: "Retry" });
    const box = await retry.boundingBox();
    expect(box!.height).toBeLessThan(30);
    await shoot(page, "chat-model-error-once");
    await retry.click();
    await page
      .getByRole("log", { name: "Conversation with Scout" })
      .getByText("Recovered: here is my answer.")
      .waitFor();
    await expect.poll(() => page.getByRole("alert").filter({ hasText: "refused the credentials" }).count()).toBe(0);
  }, 60_000);

  it("shows the work log grouped by session, each step with its tokens, older entries on request, and Jump to now", async () => {
    await page.goto(`${app.url}/agents/${team.scoutId}`);
    await settle(page);
    const section = page.getByRole("region", { name: "Work log" });
    const sessions = section.getByRole("region", { name: /^Session started/ });
    await expect.poll(() => sessions.count()).toBeGreaterThanOrEqual(1);
    const first = sessions.first();
    await first.getByRole("link", { name: /^Trace of the session/ }).waitFor();
    expect(await first.locator(".log-session-stats").innerText()).toMatch(
      /\d+ steps? · [\d,]+ in · [\d,]+ out · model [\d.]+ s/,
    );
    expect(await first.locator(".log-step").count()).toBeGreaterThan(0);
    expect(await first.locator(".log-step").first().innerText()).toMatch(/[\d,]+ in · [\d,]+ out · [\d.]+ s/);
    // the seeded entries are older than the session: outside any, the oldest behind Load older
    await section.getByRole("region", { name: "Outside a work session" }).first().waitFor();
    expect(await section.getByText("Old log entry 0", { exact: true }).count()).toBe(0);
    await section.getByRole("button", { name: "Load older entries" }).click();
    await section.getByText("Old log entry 0", { exact: true }).waitFor();
    await section.getByText("The beginning of this work log.").waitFor();
    const entries = await section.locator("li.log-entry").evaluateAll((items) => items.map((item) => item.id));
    expect(new Set(entries).size).toBe(entries.length);
    await shoot(page, "work-log-sessions");
    await section.getByRole("link", { name: "Jump to now" }).click();
    await page.waitForURL(/#work-log-now$/);
    expect(await page.locator("#work-log-now").isVisible()).toBe(true);
  }, 60_000);

  it("finds words across the team's chats and work logs and opens where they were said", async () => {
    await page.goto(`${app.url}/teams/${team.id}/timeline`);
    await settle(page);
    const search = page.getByRole("search", { name: "Search this team's conversations" });
    await search.getByRole("searchbox").fill("geothermal");
    await search.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/\/search\?q=geothermal/);
    await settle(page);
    const hits = page.getByRole("list", { name: "Matches for “geothermal”, newest first" }).locator(":scope > li");
    // Polled: settle gives a streamed page 3 s, which a loaded CI run can exceed.
    await expect.poll(() => hits.count(), { timeout: 20_000 }).toBe(20);
    expect(await hits.first().locator("mark").innerText()).toBe("geothermal");
    await page.getByRole("button", { name: "Load older matches" }).click();
    await expect.poll(() => hits.count()).toBe(40);
    await shoot(page, "search");

    // a word of the work log, and a word too common to search for
    await page.goto(`${app.url}/teams/${team.id}/search?q=lagoons`);
    await settle(page);
    const found = page.getByRole("list", { name: /Matches for “lagoons”/ }).locator(":scope > li");
    await expect.poll(() => found.count(), { timeout: 20_000 }).toBeGreaterThan(0);
    await found.first().getByRole("link", { name: "Open Scout's work log" }).click();
    await page.waitForURL(`**/agents/${team.scoutId}#work-log`);
    await page.goto(`${app.url}/teams/${team.id}/search?q=the`);
    await settle(page);
    await page.getByRole("alert").filter({ hasText: "too common to search for" }).waitFor();
    await shoot(page, "search-common-word");
  }, 60_000);
});
