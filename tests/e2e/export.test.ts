// The team page's Export section in a real browser (Debian's Chromium through playwright-core)
// against the production build and a worker with the offline model: the person downloads the
// team's record and a digest, and a backwards range is refused on the page. Screenshots at
// 1440 and 375 px.
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
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
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let teamId = "";
let taskId = "";

const call = <T>(pathname: string, init?: ApiRequest) => callApi<T>(app.url, pathname, init);

function section(): Locator {
  return page.getByRole("region", { name: "Export" });
}

const today = () => new Date().toISOString().slice(0, 10);
const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);

describe("exporting a team from its page", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    app = await startApp({ DATABASE_URL: database.url });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 }, acceptDownloads: true });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();

    const team = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
      method: "POST",
      body: { name: "Launch desk", mission: "Follow the launch.", leadName: "Ada" },
    });
    expect(team.status).toBe(201);
    teamId = team.body.team.id;
    // Real work for the record and the digest: the worker runs the task with the offline model.
    const task = await call<{ task: { id: string } }>(`/api/agents/${team.body.lead.id}/tasks`, {
      method: "POST",
      body: { title: "Find the launch date" },
    });
    expect(task.status).toBe(201);
    taskId = task.body.task.id;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { body } = await call<{ tasks: { id: string; status: string }[] }>(
        `/api/agents/${team.body.lead.id}/tasks`,
      );
      if (body.tasks.find((candidate) => candidate.id === taskId)?.status === "completed") break;
      if (Date.now() > deadline)
        throw new Error(
          `The task did not finish: ${JSON.stringify(body.tasks)}\n${app.output().split("\n").slice(-30).join("\n")}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }, 300_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page
        ?.screenshot({
          path: path.join(shots, `failed-export-${test.task.name.replace(/\W+/g, "-").slice(0, 60)}.png`),
          fullPage: true,
        })
        .catch(() => {});
      console.error(app?.output().split("\n").slice(-40).join("\n"));
    }
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await database?.drop();
  }, 60_000);

  it("downloads the team's record as JSON from the team page", async () => {
    await page.goto(`${app.url}/teams/${teamId}/settings`);
    await settle(page);
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      section().getByRole("link", { name: "Download record (JSON)" }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`cadre-launch-desk-${today()}.json`);
    const record = JSON.parse(await readFile((await download.path())!, "utf8")) as {
      team: { name: string };
      tasks: { id: string; status: string }[];
      conversations: { mode: string; messages: unknown[] }[];
    };
    expect(record.team.name).toBe("Launch desk");
    expect(record.tasks.find((task) => task.id === taskId)?.status).toBe("completed");
    expect(
      record.conversations.find((conversation) => conversation.mode === "background")!.messages.length,
    ).toBeGreaterThan(1);
    // Still on the team page: a download, not a navigation.
    expect(new URL(page.url()).pathname).toBe(`/teams/${teamId}/settings`);
  }, 60_000);

  it("refuses a backwards range on the page, then downloads the digest of the last 7 days", async () => {
    const from = section().getByLabel("From", { exact: true });
    const to = section().getByLabel("To", { exact: true });
    // The last 7 days unless changed.
    expect(await from.inputValue()).toBe(daysAgo(6));
    expect(await to.inputValue()).toBe(today());

    await from.fill(today());
    await to.fill(daysAgo(3));
    let downloaded = false;
    page.once("download", () => (downloaded = true));
    await section().getByRole("button", { name: "Download digest (Markdown)" }).click();
    await section().getByRole("alert").getByText("The first day must be on or before the last day.").waitFor();
    await section().scrollIntoViewIfNeeded();
    await section().screenshot({ path: path.join(shots, "team-export-refused-section.png") });
    expect(downloaded).toBe(false);

    await from.fill(daysAgo(6));
    await to.fill(today());
    await expect(section().getByRole("alert").count()).resolves.toBe(0);
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      section().getByRole("button", { name: "Download digest (Markdown)" }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`cadre-launch-desk-digest-${daysAgo(6)}-to-${today()}.md`);
    const markdown = await readFile((await download.path())!, "utf8");
    expect(markdown).toContain(`# Launch desk: digest for ${daysAgo(6)} to ${today()}`);
    expect(markdown).toContain("### Tasks finished");
    expect(markdown).toContain("**Find the launch date** — Ada");
    expect(new URL(page.url()).pathname).toBe(`/teams/${teamId}/settings`);

    await section().scrollIntoViewIfNeeded();
    await section().screenshot({ path: path.join(shots, "team-export-section.png") });
    await page.setViewportSize({ width: 375, height: 812 });
    await section().scrollIntoViewIfNeeded();
    await section().screenshot({ path: path.join(shots, "team-export-section-375.png") });
    await shoot(page, "team-export");
  }, 60_000);
});
