// The web app in a real browser (Debian's Chromium through playwright-core) against the
// production build and a worker, with the offline model and a local fake Tavily: a person
// creates a team, chats, asks for research, watches it arrive live, reads the briefing,
// searches knowledge, reads the work log and stops a running session.
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createInboxItemOnce } from "@/lib/db/queries/inbox-items";
import { getTeamLead } from "@/lib/db/queries/agents";
import { getRunningSession } from "@/lib/db/queries/work-sessions";
import { signedWebhookHeaders } from "@/lib/http/webhook-signature";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeOpenAI } from "../support/fake-openai";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import {
  buildIfStale,
  launchChromium,
  screenshotDir as shots,
  settle,
  shoot,
  startApp,
  type AppServer,
} from "./app-server";

const XSS = "<img src=x onerror=alert(1)>";
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

async function noInjectedImages(target: Page): Promise<void> {
  expect(await target.locator('img[src="x"]').count()).toBe(0);
  expect(dialogs).toEqual([]);
}

describe("Cadre in a browser", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    tavily = await startFakeTavily(
      async ({ query }) => {
        // A search that hangs until the test lets it go: the work session is surely still running
        // when the person stops it, however loaded the machine (the engine stops a session at once,
        // even inside a web search). The cap only keeps a forgotten request from hanging forever.
        if (/slow/i.test(query))
          await new Promise<void>((resolve) => releaseSlowSearch.push(resolve) && setTimeout(resolve, 180_000));
        return {
          results: [
            {
              title: `About ${query}`,
              url: "https://example.com/about",
              content: `Solid-state cells reached 500 Wh/kg in lab tests. ${XSS}`,
            },
          ],
        };
      },
      // The offline model reads the first result's page and records what it says.
      {
        extract: ({ urls }) => ({
          pages: urls.map((url) => ({
            url,
            title: "Solid-state batteries",
            content: `Solid-state cells reached 500 Wh/kg in lab tests. ${XSS}`,
          })),
        }),
      },
    );
    app = await startApp({ DATABASE_URL: database.url, TAVILY_API_KEY: "tvly-test", TAVILY_BASE_URL: tavily.url });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    context.on("page", (opened) =>
      opened.on("dialog", (dialog) => void (dialog.type() === "confirm" ? dialog.accept() : dialog.dismiss())),
    );
    page.on("dialog", (dialog) => {
      if (dialog.type() === "confirm") return void dialog.accept();
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
  }, 300_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page
        ?.screenshot({
          path: path.join(shots, `failed-${test.task.name.replace(/\W+/g, "-").slice(0, 60)}.png`),
          fullPage: true,
        })
        .catch(() => {});
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
    // A new team opens on its Overview; the subordinates are one section along.
    await page.getByRole("navigation", { name: "Team sections" }).getByRole("link", { name: "Agents" }).click();
    await page.waitForURL(`**/teams/${teamId}/agents`);
    await settle(page);
    await page.getByLabel("Subordinate name").fill("Scout");
    await page.getByLabel("Subordinate instructions").fill("You search the web and report findings with sources.");
    await page.getByRole("button", { name: "Add subordinate" }).click();
    await page.getByRole("link", { name: "Scout", exact: true }).waitFor();

    await page.getByLabel("Subordinate name").fill("Temp");
    await page.getByRole("button", { name: "Add subordinate" }).click();
    await page.getByRole("link", { name: "Temp", exact: true }).waitFor();
    await page.getByRole("button", { name: "Edit Temp" }).click();
    await page.getByRole("form", { name: "Edit Temp" }).getByLabel("Name").fill("Temporary");
    await page.getByRole("form", { name: "Edit Temp" }).getByRole("button", { name: "Save", exact: true }).click();
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

  it("makes a webhook secret on the team page, shows it once, rotates and removes it", async () => {
    await page.goto(`${app.url}/teams/${teamId}/settings`);
    await settle(page);
    const hooks = page.getByRole("region", { name: "Webhooks" });
    await hooks.getByText("No secret yet").waitFor();
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: app.url });
    await hooks.getByRole("button", { name: "Create webhook secret" }).click();
    const field = hooks.getByRole("textbox", { name: "New webhook secret" });
    await field.waitFor();
    const secret = await field.inputValue();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(await field.getAttribute("readonly")).not.toBeNull();
    await hooks.getByText("you will not see it again").waitFor();
    expect(await hooks.getByRole("textbox", { name: "Endpoint URL" }).inputValue()).toBe(
      `${app.url}/api/hooks/${teamId}`,
    );
    await hooks.getByRole("button", { name: "Copy secret" }).click();
    await hooks.getByText("Copied to the clipboard.").waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await hooks.getByText("How to sign a delivery").waitFor();
    expect(await hooks.locator("pre").textContent()).toContain(`x-cadre-signature: sha256=$SIG`);
    await shoot(page, "team-webhooks");

    // The secret on the page is the one the endpoint checks: a delivery signed with it reaches the lead.
    const deliver = (key: string, body: string) =>
      fetch(`${app.url}/api/hooks/${teamId}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...signedWebhookHeaders(key, body) },
        body,
      });
    expect((await deliver(secret, JSON.stringify({ name: "deploy", status: "failed", service: "api" }))).status).toBe(
      202,
    );

    // Shown once: after a reload only "configured" is left.
    await page.reload();
    await settle(page);
    await hooks.getByText("A secret is configured").waitFor();
    expect(await hooks.getByRole("textbox", { name: "New webhook secret" }).count()).toBe(0);
    expect(await page.content()).not.toContain(secret);

    await hooks.getByRole("button", { name: "Rotate secret" }).click(); // the confirm is accepted
    const rotated = await hooks.getByRole("textbox", { name: "New webhook secret" }).inputValue();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    expect((await deliver(secret, JSON.stringify({ name: "old" }))).status).toBe(401);
    await hooks.getByRole("button", { name: "I have saved it" }).click();
    expect(await hooks.getByRole("textbox", { name: "New webhook secret" }).count()).toBe(0);

    await hooks.getByRole("button", { name: "Remove secret" }).click();
    await hooks.getByText("No secret yet").waitFor();
    expect((await deliver(rotated, JSON.stringify({ name: "gone" }))).status).toBe(401);
    expect((await (await fetch(`${app.url}/api/teams/${teamId}/webhook-secret`)).json()) as unknown).toEqual({
      configured: false,
      createdAt: null,
    });

    // The accepted delivery is in the lead's work log.
    const { agents } = (await (await fetch(`${app.url}/api/teams/${teamId}`)).json()) as {
      agents: { id: string; role: string }[];
    };
    await page.goto(`${app.url}/agents/${agents.find((agent) => agent.role === "lead")!.id}`);
    await settle(page);
    await page.getByText("Webhook “deploy”", { exact: false }).first().waitFor({ timeout: LIVE });
    await page.goto(`${app.url}/teams/${teamId}`);
    await settle(page);
  }, 60_000);

  it("chats: Enter sends, Shift+Enter breaks the line, the reply streams and survives a reload", async () => {
    await page.getByRole("link", { name: "Chat with the lead" }).click();
    await page.waitForURL(/\/agents\/[0-9a-f-]{36}\/chat$/); // the lead's chat
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

    // The lead delegates to Scout, Scout searches, reads the page, records, reports; the lead briefs.
    await scoutPage.locator(".task", { hasText: "solid-state" }).first().waitFor({ timeout: LIVE });
    await scoutPage.locator("details.tool", { hasText: "tavilySearch" }).first().waitFor({ timeout: LIVE });
    await scoutPage.locator("details.tool", { hasText: "readWebPage" }).first().waitFor({ timeout: LIVE });
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
    await page.waitForURL(/\/agents\/[0-9a-f-]{36}\/chat$/); // the lead's chat
    await settle(page);
    await page.locator(".message-briefing").first().waitFor();

    await page.goto(`${app.url}/inbox`);
    await settle(page);
    await page.getByText("You're all caught up.").waitFor();
  }, 60_000);

  it("shows an alert about failed work in the inbox with its own look and a link to the work log", async () => {
    const lead = (await getTeamLead(database.db, teamId))!;
    await createInboxItemOnce(database.db, {
      teamId,
      agentId: lead.id,
      type: "alert",
      dedupeKey: `e2e-alert:${lead.id}`,
      title: `${lead.name} could not finish "Price check"`,
      summary: "The model server refused the credentials (HTTP 401). Check OPENAI_API_KEY.",
      content: "The agent's work log shows what happened up to that point.",
    });
    await page.goto(`${app.url}/inbox`);
    await settle(page);
    const alert = page.locator(".inbox-item.inbox-alert.unread").first();
    await alert.waitFor();
    expect(await alert.locator(".pill-alert").textContent()).toBe("alert");
    await shoot(page, "inbox-alert");
    await alert.getByRole("link", { name: `Open ${lead.name}'s work log` }).click();
    await page.waitForURL(`**/agents/${lead.id}`);
    await page.goto(`${app.url}/inbox`);
    await settle(page);
    await page.locator(".inbox-item.inbox-alert a.inbox-title").first().click();
    await page.waitForURL(/\/inbox\/[0-9a-f-]{36}$/);
    await settle(page);
    await page.getByRole("link", { name: "Open work log" }).waitFor();
    await shoot(page, "alert");
  }, 60_000);

  it("searches knowledge, filters it, links to the source and deletes", async () => {
    await page.getByRole("link", { name: "Knowledge", exact: true }).click();
    await page.waitForURL("**/knowledge");
    await settle(page);
    await page.getByRole("searchbox", { name: "Search knowledge" }).fill("Wh/kg");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/q=Wh/);
    await settle(page);
    const item = page.locator(".knowledge-row:visible").first();
    await item.getByText("500 Wh/kg", { exact: false }).waitFor();
    await page.locator("select[name=agentId]:visible").selectOption(scoutId);
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/agentId=/);
    await settle(page);
    await page.locator(".knowledge-row:visible").first().waitFor();
    await noInjectedImages(page);
    await shoot(page, "knowledge");

    await page.getByRole("searchbox", { name: "Search knowledge" }).fill("zebra unicorn");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByText("Nothing matches").filter({ visible: true }).waitFor();
    await page.getByRole("link", { name: "Clear" }).click();
    await page.waitForURL(/\/knowledge$/);
    await settle(page);
    const first = page.locator(".knowledge-row:visible").first();
    // The source opens the work log at the message that saved the fact, highlighted.
    await first
      .getByRole("link", { name: /^Source message/ })
      .first()
      .click();
    await page.waitForURL(/\/agents\/[0-9a-f-]{36}\?message=[0-9a-f-]{36}#m-[0-9a-f-]{36}$/);
    await settle(page);
    await page.getByRole("heading", { name: "Work log" }).waitFor();
    await page.locator(".log-linked").getByText("Linked message").waitFor();

    await page.goto(`${app.url}/knowledge`);
    await settle(page);
    // Counted only once the list is there: counted before it rendered, "one fewer" would be -1.
    await page.locator(".knowledge-row:visible").first().waitFor();
    const before = await page.locator(".knowledge-row:visible").count();
    await page
      .locator(".knowledge-row:visible")
      .first()
      .getByRole("button", { name: /^Delete “/ })
      .click();
    await expect.poll(() => page.locator(".knowledge-row:visible").count()).toBe(before - 1);
  }, 60_000);

  it("stops a running work session from the agent page", async () => {
    await page.goto(`${app.url}/teams/${teamId}/chat`);
    await settle(page);
    await page.getByRole("textbox", { name: "Message" }).fill("Please research slow sodium-ion news");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByText("I've created a task for the team: Please research slow").waitFor();

    // Lead → delegation → Scout's session → its search: slow on a loaded machine. Wait until the
    // search has reached the fake Tavily (where it hangs) and the database has Scout's session
    // running, so the page below must show the button; no race with a session that ended first.
    const slowSearches = () => tavily.requests.filter((request) => /slow/i.test(request.body.query)).length;
    await expect.poll(slowSearches, { timeout: 90_000, interval: 200 }).toBeGreaterThan(0);
    await expect
      .poll(async () => (await getRunningSession(database.db, scoutId))?.status, { timeout: 10_000 })
      .toBe("running");

    await page.goto(`${app.url}/agents/${scoutId}`);
    await settle(page);
    const stop = page.getByRole("button", { name: "Stop session" });
    await stop.waitFor({ timeout: 30_000 });
    await shoot(page, "agent-running");
    await stop.click();
    await page.locator(".log-stopped").first().waitFor({ timeout: 30_000 });
    await page.getByText("Idle: no work session is running.").waitFor({ timeout: 20_000 });
    await page.locator(".task[data-status=cancelled]").first().waitFor({ timeout: 20_000 });
    // Stopped while the search still hangs: the session did not wait for the tool.
    expect(slowSearches()).toBe(1);
    expect(await getRunningSession(database.db, scoutId)).toBeNull();
    for (const release of releaseSlowSearch.splice(0)) release();
    await shoot(page, "agent-stopped");
  }, 180_000);

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

  it("asks for the password when APP_PASSWORD is set, shows no navigation until then, and signs out", async () => {
    // A second web server (no worker) on the same database, with sign-in on; a fresh browser context (no cookie).
    const guarded = await startApp({ DATABASE_URL: database.url, APP_PASSWORD: "correct horse battery" }, [
      "--web-only",
    ]);
    const visitor = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    visitor.setDefaultTimeout(10_000);
    const tab = await visitor.newPage();
    try {
      await tab.goto(`${guarded.url}/teams/${teamId}/settings`);
      await tab.waitForURL(`**/sign-in?next=${encodeURIComponent(`/teams/${teamId}/settings`)}`);
      await settle(tab);
      await tab.getByRole("heading", { name: "Sign in", level: 1 }).waitFor();
      expect(await tab.getByRole("navigation", { name: "Main" }).count()).toBe(0);
      expect(await tab.getByRole("button", { name: "Sign out" }).count()).toBe(0);
      expect(await tab.title()).toBe("Sign in · Cadre");
      await shoot(tab, "sign-in");

      await tab.getByLabel("Password").fill("wrong");
      await tab.getByRole("button", { name: "Sign in" }).click();
      await tab
        .getByRole("alert")
        .filter({ hasText: /password/i })
        .waitFor();
      await tab.getByLabel("Password").fill("correct horse battery");
      await tab.getByRole("button", { name: "Sign in" }).click();
      await tab.waitForURL(`**/teams/${teamId}/settings`);
      await settle(tab);
      await tab.getByRole("region", { name: "Webhooks" }).waitFor();
      await tab.getByRole("navigation", { name: "Main" }).waitFor();
      const signOut = tab.getByRole("button", { name: "Sign out" });
      await signOut.waitFor();
      await shoot(tab, "team-signed-in");

      await signOut.click();
      await tab.waitForURL("**/sign-in");
      await settle(tab);
      await tab.getByRole("heading", { name: "Sign in", level: 1 }).waitFor();
      // The session is gone from the server, not just the cookie from this tab.
      await tab.goto(`${guarded.url}/knowledge`);
      await tab.waitForURL(/\/sign-in\?next=%2Fknowledge$/);
      expect(await tab.getByRole("navigation", { name: "Main" }).count()).toBe(0);
      expect((await fetch(`${guarded.url}/api/teams`)).status).toBe(401);
    } finally {
      await visitor.close();
      await guarded.stop();
    }
  }, 90_000);

  it("says what to do when the model server fails, instead of a bare error", async () => {
    // A second web server (no worker) on the same database, whose model server refuses the key.
    const model = await startFakeOpenAI(() => ({ fault: "status", status: 401 }));
    const failing = await startApp(
      { DATABASE_URL: database.url, OPENAI_BASE_URL: model.url, OPENAI_API_KEY: "sk-wrong" },
      ["--web-only"],
    );
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
