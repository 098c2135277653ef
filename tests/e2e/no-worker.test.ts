// The web server alone (`npm run start:web`), no worker: once work waits, every page shows
// the "no worker is running" banner, live, and it goes away when a worker starts.
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startWorkerProcess, type WorkerProcess } from "../support/worker-process";
import { buildIfStale, launchChromium, screenshotDir, settle, shoot, startApp, type AppServer } from "./app-server";

const BANNER = "Background work is waiting: no worker is running. Start one with npm run worker.";

let database: TestDatabase;
let app: AppServer;
let browser: Browser;
let page: Page;
let worker: WorkerProcess | undefined;

describe("no worker running", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    app = await startApp({ DATABASE_URL: database.url }, ["--web-only"]);
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
  }, 300_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page
        ?.screenshot({ path: path.join(screenshotDir, `failed-no-worker.png`), fullPage: true })
        .catch(() => {});
      console.error(app?.output().split("\n").slice(-40).join("\n"));
    }
  });

  afterAll(async () => {
    await worker?.stop("SIGKILL");
    await browser?.close();
    await app?.stop();
    await database?.drop();
  }, 60_000);

  it("shows the banner on every page once work waits, and hides it when a worker starts", async () => {
    await page.goto(`${app.url}/teams`);
    await settle(page);
    await page.getByRole("heading", { name: "Teams", level: 1 }).waitFor();
    // Nothing waits yet: no banner, whether or not a worker runs.
    const banner = page.getByTestId("worker-banner");
    expect(await banner.count()).toBe(0);

    const created = await fetch(`${app.url}/api/teams`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Battery Lab", mission: "Track solid-state battery research." }),
    });
    expect(created.status).toBe(201);
    const { team, lead } = (await created.json()) as { team: { id: string }; lead: { id: string } };
    const assigned = await fetch(`${app.url}/api/agents/${lead.id}/tasks`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ title: "Research solid-state cells" }),
    });
    expect(assigned.status).toBe(201);

    // The open page learns it live (a task was created), without a reload.
    await banner.waitFor();
    expect(await page.getByRole("status").filter({ hasText: BANNER }).count()).toBe(1);
    expect(await banner.locator("code").textContent()).toBe("npm run worker");

    const health = await fetch(`${app.url}/api/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: "degraded", workers: { alive: 0 }, backlog: { agents: 1 } });

    // Rendered by the server on every signed-in page.
    for (const where of [`/teams/${team.id}`, "/inbox", `/agents/${lead.id}`]) {
      await page.goto(`${app.url}${where}`);
      await settle(page);
      expect(await banner.textContent(), where).toBe(BANNER);
    }
    await page.goto(`${app.url}/teams/${team.id}`);
    await settle(page);
    await shoot(page, "no-worker-banner");

    // A worker starts: its row's insert is a live event, and the banner goes.
    worker = startWorkerProcess({ DATABASE_URL: database.url });
    await banner.waitFor({ state: "detached", timeout: 30_000 });
    expect((await (await fetch(`${app.url}/api/health`)).json()).workers.alive).toBe(1);
  }, 120_000);
});
