// Issue 23's first run, recovery and polish, in Chromium against `npm start` (production build
// + worker) on the offline model with a fake Tavily: the app icon, the offline notice with its
// copyable variables and Check connection, an honest demo briefing, Escape on inline forms, the
// Live label on a phone, and a page that failed while the database refused connections coming
// back by itself. Screenshots `first-run-*` at 1440 and 375 px.
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import postgres from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import {
  buildIfStale,
  callApi,
  launchChromium,
  screenshotDir,
  settle,
  shoot,
  startApp,
  type ApiRequest,
  type AppServer,
} from "./app-server";

let database: TestDatabase;
let tavily: FakeTavily;
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;

const call = <T>(pathname: string, init?: ApiRequest) => callApi<T>(app.url, pathname, init);

/** The page a person is shown while the database does not answer (src/lib/http/page-outage.ts). */
const OUTAGE_HEADING = "The database is not answering; this page tries again by itself";
/**
 * Past the moment a page may trust the database's last answer (one probe a second at most,
 * page-outage.ts): a page asked for within it renders, fails and retries by itself instead.
 */
const pastProbe = () => new Promise((resolve) => setTimeout(resolve, 1_500));
/** Either way a page says it tries again: the outage page, or a failed render's own retry (page-error.tsx). */
const RETRYING = /^(The database is not answering; this page tries again by itself|Couldn.t load this page — retrying)/;

async function waitFor(what: string, check: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function newTeam(name: string, subordinate?: string): Promise<{ teamId: string; leadId: string }> {
  const created = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
    method: "POST",
    body: { name, mission: `Follow ${name}.` },
  });
  expect(created.status).toBe(201);
  if (subordinate) {
    const added = await call(`/api/teams/${created.body.team.id}/agents`, {
      method: "POST",
      body: { name: subordinate, instructions: "You research." },
    });
    expect(added.status).toBe(201);
  }
  return { teamId: created.body.team.id, leadId: created.body.lead.id };
}

/** The visible name of the element that has focus. */
const focusedText = (target: Page) => target.evaluate(() => document.activeElement?.textContent?.trim() ?? "");

describe("first run, recovery and polish", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    tavily = await startFakeTavily();
    app = await startApp({ DATABASE_URL: database.url, TAVILY_API_KEY: "tvly-test", TAVILY_BASE_URL: tavily.url });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: app.url });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
  }, 300_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page
        ?.screenshot({
          path: path.join(screenshotDir, `failed-first-run-${test.task.name.replace(/\W+/g, "-").slice(0, 50)}.png`),
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

  it("has an app icon and a web manifest: a first page load asks for nothing that is missing", async () => {
    const missing: string[] = [];
    page.on("response", (response) => {
      if (response.status() >= 400) missing.push(`${response.status()} ${response.url()}`);
    });
    await page.goto(`${app.url}/teams`);
    await settle(page);
    await page.getByRole("heading", { name: "Teams", level: 1 }).waitFor();
    // The browser asks for the icons the head names (and /favicon.ico on its own).
    await page.waitForTimeout(500);
    expect(missing).toEqual([]);

    const links = await page.evaluate(() =>
      [...document.head.querySelectorAll("link[rel~=icon], link[rel=apple-touch-icon], link[rel=manifest]")].map(
        (link) => `${link.getAttribute("rel")} ${new URL((link as HTMLLinkElement).href).pathname}`,
      ),
    );
    expect(links).toEqual(
      expect.arrayContaining([
        "icon /favicon.ico",
        "icon /icon.svg",
        "apple-touch-icon /apple-icon.png",
        "manifest /manifest.webmanifest",
      ]),
    );
    for (const [pathname, type] of [
      ["/favicon.ico", "image/x-icon"],
      ["/icon.svg", "image/svg+xml"],
      ["/apple-icon.png", "image/png"],
      ["/manifest.webmanifest", "application/manifest+json"],
    ]) {
      const response = await fetch(`${app.url}${pathname}`);
      expect(response.status, pathname).toBe(200);
      expect(response.headers.get("content-type"), pathname).toContain(type);
    }
    const manifest = (await (await fetch(`${app.url}/manifest.webmanifest`)).json()) as {
      name: string;
      icons: { src: string }[];
    };
    expect(manifest.name).toBe("Cadre");
    for (const icon of manifest.icons) expect((await fetch(`${app.url}${icon.src}`)).status, icon.src).toBe(200);
  });

  it("says on the teams list that answers are a demo, shows the variables to copy, and checks the connection", async () => {
    await page.goto(`${app.url}/teams`);
    await settle(page);
    const notice = page.getByRole("region", { name: "Answers are a built-in demo" });
    await notice.waitFor();
    await notice.getByText("Web search is configured, so its findings come from real searches.").waitFor();
    // No team yet: the variables show without a click.
    const fields = notice.getByRole("textbox");
    expect(await fields.evaluateAll((inputs) => inputs.map((input) => (input as HTMLInputElement).value))).toEqual([
      "OPENAI_API_KEY=sk-…",
      "OPENAI_BASE_URL=http://localhost:11434/v1",
      "LLM_MODEL=qwen3:8b",
      "TAVILY_API_KEY=tvly-…",
    ]);
    await notice.getByRole("button", { name: "Copy" }).nth(3).click();
    await notice.getByText("Copied to the clipboard.").waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe("TAVILY_API_KEY=tvly-…");

    await notice.getByRole("button", { name: "Check connection" }).click();
    const results = notice.getByRole("list", { name: "Connection check" });
    await results.waitFor();
    expect(await results.getByRole("listitem").allInnerTexts()).toEqual([
      "Model: Not configured: answers come from the built-in demo model. Set OPENAI_API_KEY, or OPENAI_BASE_URL and LLM_MODEL for a local server, then restart Cadre.",
      `Web search: Reachable: ${tavily.url} answered a test search.`,
    ]);
    expect(tavily.requests.at(-1)?.body.query).toBe("Cadre connection check");
    await shoot(page, "first-run-teams");
  });

  it("briefs as an honest demo, named for the task, and says so on the home page too", async () => {
    const { teamId, leadId } = await newTeam("Battery desk", "Scout");
    const given = await call(`/api/agents/${leadId}/tasks`, {
      method: "POST",
      body: { title: "Research solid-state batteries" },
    });
    expect(given.status).toBe(201);
    type Item = { id: string; title: string; summary: string };
    let briefing: Item | undefined;
    await waitFor("the lead's briefing", async () => {
      briefing = (await call<{ items: Item[] }>(`/api/inbox?teamId=${teamId}&type=briefing`)).body.items[0];
      return briefing !== undefined;
    });
    expect(briefing!.title).toBe("Demo briefing: Research solid-state batteries");

    await page.goto(`${app.url}/`);
    await settle(page);
    const notice = page.getByRole("region", { name: "Answers are a built-in demo" });
    await notice.waitFor();
    // With a team, the variables wait behind their summary.
    expect(await notice.getByRole("textbox").first().isVisible()).toBe(false);
    await page.getByRole("link", { name: "Demo briefing: Research solid-state batteries" }).waitFor();
    expect(await page.locator("main").innerText()).not.toMatch(
      /Briefing: Findings|was not configured when researching/,
    );
    await shoot(page, "first-run-home");

    // The team's Overview says it too; its other sections leave it to the sidebar's badge.
    await page.goto(`${app.url}/teams/${teamId}`);
    await settle(page);
    await page.getByRole("region", { name: "Answers are a built-in demo" }).waitFor();
    await shoot(page, "first-run-team-overview");
    await page.goto(`${app.url}/teams/${teamId}/settings`);
    await settle(page);
    expect(await page.getByRole("region", { name: "Answers are a built-in demo" }).count()).toBe(0);

    await page.goto(`${app.url}/inbox/${briefing!.id}`);
    await settle(page);
    await page.getByRole("heading", { name: "Demo briefing: Research solid-state batteries" }).waitFor();
    await page.getByText("A demo briefing by Cadre's built-in offline model", { exact: false }).waitFor();
    await page.getByText("What the team found").waitFor();
    await shoot(page, "first-run-demo-briefing");
  }, 120_000);

  it("closes Edit and approve and Deny's reason with Escape, focus back on the button that opened them", async () => {
    const { teamId, leadId } = await newTeam("Tidal desk");
    expect(
      (
        await call(`/api/teams/${teamId}/tool-policies`, {
          method: "PUT",
          body: { toolName: "tavilySearch", policy: "ask" },
        })
      ).status,
    ).toBe(200);
    expect(
      (await call(`/api/agents/${leadId}/tasks`, { method: "POST", body: { title: "Research tidal power" } })).status,
    ).toBe(201);
    await waitFor("the search to wait for approval", async () =>
      (await call<{ approvals: { status: string }[] }>(`/api/agents/${leadId}/approvals`)).body.approvals.some(
        (approval) => approval.status === "pending",
      ),
    );

    await page.goto(`${app.url}/inbox`);
    await settle(page);
    const card = page.locator("article.approval").first();
    await card.waitFor();
    await card.getByRole("button", { name: "Edit and approve" }).click();
    const args = card.getByRole("textbox", { name: "Arguments (JSON)" });
    await args.waitFor();
    expect(await args.evaluate((element) => element === document.activeElement)).toBe(true);
    await page.keyboard.press("Escape");
    await args.waitFor({ state: "detached" });
    expect(await focusedText(page)).toBe("Edit and approve");

    await card.getByRole("button", { name: "Deny" }).click();
    const reason = card.getByRole("textbox", { name: "Reason" });
    await reason.fill("Not now");
    await shoot(page, "first-run-deny-open");
    await reason.press("Escape");
    await reason.waitFor({ state: "detached" });
    expect(await focusedText(page)).toBe("Deny");
    // Nothing was decided: the three buttons wait as before.
    expect(await card.getByRole("button").allInnerTexts()).toEqual(["Approve", "Edit and approve", "Deny"]);

    // A price's edit on the usage page closes the same way.
    await page.goto(`${app.url}/usage`);
    await settle(page);
    const edit = page.getByRole("button", { name: /^Edit the price of / }).first();
    const label = await edit.getAttribute("aria-label");
    await edit.click();
    const form = page.getByRole("form", { name: label! });
    await form.getByRole("spinbutton").first().focus();
    await page.keyboard.press("Escape");
    await form.waitFor({ state: "detached" });
    expect(await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))).toBe(label);
  }, 120_000);

  it("labels the live dot in words on a phone", async () => {
    await page.goto(`${app.url}/teams`);
    await settle(page);
    await page.setViewportSize({ width: 375, height: 812 });
    const label = page.getByTestId("live-label");
    await expect.poll(() => label.innerText()).toBe("Live");
    const box = await label.boundingBox();
    expect(box && box.x + box.width <= 375).toBe(true);
    // Screen readers hear the whole state.
    expect(await page.locator(".live-status .visually-hidden").textContent()).toBe("Live updates: connected");
    await page.setViewportSize({ width: 1440, height: 900 });
    await shoot(page, "first-run-nav");
  });

  it("a page that failed while the database refused connections says it retries, and comes back by itself", async () => {
    const admin = postgres(inject("databaseAdminUrl"), { max: 1, onnotice: () => {} });
    const refuse = async () => {
      await admin.unsafe(`alter database ${database.name} allow_connections false`);
      await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${database.name}`;
    };
    try {
      await page.goto(`${app.url}/teams`);
      await settle(page);
      await page.getByRole("heading", { name: "Teams", level: 1 }).waitFor();
      await refuse();
      await pastProbe();
      // A page asked for meanwhile is answered before it renders: 503 and a plain page that loads itself again.
      const response = await page.goto(`${app.url}/teams`);
      expect(response?.status()).toBe(503);
      expect(response?.headers()["retry-after"]).toBe("5");
      const outage = page.getByRole("heading", { level: 1, name: OUTAGE_HEADING });
      await outage.waitFor({ timeout: 15_000 });
      const text = await page.locator("main").innerText();
      expect(text).not.toMatch(/select |Failed query|accepting connections|postgres|at .+\.js|digest/i);
      await shoot(page, "first-run-page-outage");

      // Back by itself, with no reload by the person.
      await admin.unsafe(`alter database ${database.name} allow_connections true`);
      await page.getByRole("heading", { name: "Teams", level: 1 }).waitFor({ timeout: 45_000 });
      await page.getByRole("link", { name: "Battery desk" }).first().waitFor();
      await shoot(page, "first-run-page-recovered");

      // A navigation inside the app (no full load) while it refuses: the page's own retry, or the
      // outage page when the navigation itself was answered by it; either way back by itself.
      await refuse();
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Knowledge" }).click();
      await page.getByRole("heading", { level: 1, name: RETRYING }).waitFor({ timeout: 15_000 });
      expect(await page.locator("body").innerText()).not.toMatch(/select |Failed query|accepting connections/i);
      await admin.unsafe(`alter database ${database.name} allow_connections true`);
      await page.getByRole("heading", { name: "Knowledge", level: 1 }).waitFor({ timeout: 45_000 });
    } finally {
      await admin.unsafe(`alter database ${database.name} allow_connections true`).catch(() => {});
      await admin.end({ timeout: 5 });
    }
  }, 120_000);

  it("with sign-in on, a page whose session could not be checked says it retries, and comes back by itself", async () => {
    // The root layout asks the database for the session: when it cannot, global-error takes the whole page.
    const password = "polish-test-password";
    const guarded = await startApp({ DATABASE_URL: database.url, APP_PASSWORD: password }, ["--web-only"]);
    const admin = postgres(inject("databaseAdminUrl"), { max: 1, onnotice: () => {} });
    const signedIn = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    try {
      const tab = await signedIn.newPage();
      const response = await tab.request.post(`${guarded.url}/api/auth/sign-in`, {
        data: { password },
        headers: { origin: guarded.url },
      });
      expect(response.status()).toBe(200);
      await tab.goto(`${guarded.url}/teams`);
      await settle(tab);
      await tab.getByRole("heading", { name: "Teams", level: 1 }).waitFor();

      await admin.unsafe(`alter database ${database.name} allow_connections false`);
      await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${database.name}`;
      await pastProbe();
      const outage = await tab.goto(`${guarded.url}/teams`);
      expect(outage?.status()).toBe(503);
      await tab.getByRole("heading", { level: 1, name: OUTAGE_HEADING }).waitFor({ timeout: 15_000 });
      expect(await tab.locator("body").innerText()).not.toMatch(
        /select |Failed query|accepting connections|Application error|server-side exception/i,
      );
      await shoot(tab, "first-run-global-error");

      await admin.unsafe(`alter database ${database.name} allow_connections true`);
      await tab.getByRole("heading", { name: "Teams", level: 1 }).waitFor({ timeout: 45_000 });
      await tab.getByRole("navigation", { name: "Main" }).waitFor();
    } finally {
      await admin.unsafe(`alter database ${database.name} allow_connections true`).catch(() => {});
      await admin.end({ timeout: 5 });
      await signedIn.close();
      await guarded.stop();
    }
  }, 150_000);
});
