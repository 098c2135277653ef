// Running a team from the browser (issue 14, items 3 and 4) in Chromium against the production
// build and a fake OpenAI-compatible server: the team's name and mission edited, the lead's
// schedule with a time zone and its preview, a model picked from what the server lists, the
// instructions revised with the model's help, pause and resume, the delete confirmation (what
// goes, focus, Escape), a task assigned by hand, a failed task retried and a delegation tree —
// each checked through the API or the database, with screenshots at 1440 and 375 px.
import { eq } from "drizzle-orm";
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTask, getTask } from "@/lib/db/queries";
import { tasks } from "@/lib/db/schema";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { buildIfStale, launchChromium, screenshotDir, settle, shoot, startApp, type AppServer } from "./app-server";

let database: TestDatabase;
let fake: FakeOpenAI;
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const world = { team: "", lead: "", scout: "" };

async function call<T>(
  pathname: string,
  init: { method?: string; body?: unknown } = {},
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${app.url}${pathname}`, {
    method: init.method ?? "GET",
    headers: init.body === undefined ? undefined : { "content-type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
}

async function open(pathname: string): Promise<void> {
  await page.goto(`${app.url}${pathname}`);
  await settle(page);
}

/** A part of the page alone at both widths, for a closer look than the full-page shots give. */
async function shootRegion(region: Locator, name: string): Promise<void> {
  for (const width of [1440, 375]) {
    await page.setViewportSize({ width, height: width === 1440 ? 900 : 812 });
    await page.waitForTimeout(100);
    await region.screenshot({ path: path.join(screenshotDir, `${name}-section-${width}.png`) });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

describe("team and agent settings in the browser", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    fake = await startFakeOpenAI(
      (request) =>
        // Structured output (the instructions draft) answers JSON; everything else a plain report.
        request.response_format
          ? {
              text: JSON.stringify({
                instructions: "- Brief the person only when prices move by more than 5 %.\n- Cite every source.",
              }),
            }
          : { text: "Prices checked: nothing new." },
      { models: ["llama-3.2-3b", "qwen3-8b"] },
    );
    app = await startApp({ DATABASE_URL: database.url, OPENAI_BASE_URL: fake.url, LLM_MODEL: "qwen3-8b" });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    const team = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
      method: "POST",
      body: {
        name: "Heat desk",
        mission: "Track heat pump prices.",
        leadName: "Heat Lead",
        instructions: "You lead the team.",
      },
    });
    expect(team.status).toBe(201);
    const scout = await call<{ agent: { id: string } }>(`/api/teams/${team.body.team.id}/agents`, {
      method: "POST",
      body: { name: "Scout", instructions: "Searches the web.", parentAgentId: team.body.lead.id },
    });
    Object.assign(world, { team: team.body.team.id, lead: team.body.lead.id, scout: scout.body.agent.id });
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await fake?.close();
    await database?.drop();
  });

  it("edits the team's name and mission", async () => {
    await open(`/teams/${world.team}/settings`);
    const settings = page.getByRole("form", { name: "Team settings" });
    await settings.getByLabel("Team name").fill("Heat pump desk");
    await settings.getByLabel("Mission").fill("Track heat pump prices in Germany.");
    await settings.getByRole("button", { name: "Save team settings" }).click();
    await page.getByRole("heading", { level: 1, name: /Heat pump desk/ }).waitFor();
    const { body } = await call<{ team: { name: string; mission: string } }>(`/api/teams/${world.team}`);
    expect(body.team).toMatchObject({ name: "Heat pump desk", mission: "Track heat pump prices in Germany." });
  });

  it("sets the lead's schedule in a time zone with a readable preview, a listed model and revised instructions", {
    timeout: 60_000,
  }, async () => {
    await open(`/teams/${world.team}/agents`);
    const edit = page.getByRole("button", { name: "Edit Heat Lead" });
    // Escape closes the inline form and gives the focus back to Edit.
    await edit.click();
    const form = page.getByRole("form", { name: "Edit Heat Lead" });
    await form.getByLabel("Name").focus();
    await page.keyboard.press("Escape");
    await form.waitFor({ state: "detached" });
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute("aria-label")))
      .toBe("Edit Heat Lead");
    await edit.click();
    // The model list comes from the server's GET /v1/models.
    await form.getByText("2 models on the configured server; or type any name.").waitFor();
    expect(
      await form
        .locator("datalist option")
        .evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value).slice(0, 2)),
    ).toEqual(["llama-3.2-3b", "qwen3-8b"]);
    await form.getByLabel("Model").fill("llama-3.2-3b");

    await form.getByLabel("Runs").selectOption({ label: "Weekdays (Monday to Friday)" });
    await form.getByLabel("Time", { exact: true }).fill("07:00");
    await form.getByLabel("Time zone").fill("Mars/Base");
    const preview = form.getByLabel("Schedule preview");
    await preview.getByText('"Mars/Base" is not a time zone.', { exact: false }).waitFor();
    expect(await form.getByRole("button", { name: "Save" }).isDisabled()).toBe(true);
    await form.getByLabel("Time zone").fill("Europe/Berlin");
    await preview.getByText("weekdays at 07:00 Europe/Berlin").waitFor();
    expect(
      await preview
        .getByText(/Next three: .*07:00 Europe\/Berlin · .*07:00 Europe\/Berlin · .*07:00 Europe\/Berlin/)
        .isVisible(),
    ).toBe(true);
    expect(await preview.getByText("Last run: none yet").isVisible()).toBe(true);

    await form.getByLabel("What should change? (optional)").fill("Brief me only on big price moves");
    await form.getByRole("button", { name: "Improve with the model" }).click();
    await expect
      .poll(() => form.getByRole("textbox", { name: /^Instructions/ }).inputValue(), { timeout: 20_000 })
      .toContain("more than 5 %")
      .catch(async (error: unknown) => {
        throw new Error(`No revision; the form says: ${await form.innerText()}\n${app.output().slice(-3000)}`, {
          cause: error,
        });
      });
    const draftRequest = fake.requests.find((request) => request.response_format);
    expect(JSON.stringify(draftRequest?.messages)).toContain("Brief me only on big price moves");
    await shoot(page, "settings-agent-editor");
    await shootRegion(form, "settings-agent-editor");

    await form.getByRole("button", { name: "Save" }).click();
    await page.getByRole("button", { name: "Edit Heat Lead" }).waitFor();
    const { body } = await call<{
      agent: { model: string; schedule: string; scheduleTimeZone: string; instructions: string };
    }>(`/api/agents/${world.lead}`);
    expect(body.agent).toMatchObject({
      model: "llama-3.2-3b",
      schedule: "0 7 * * 1-5",
      scheduleTimeZone: "Europe/Berlin",
    });
    expect(body.agent.instructions).toContain("Cite every source.");
    const schedule = page.getByLabel("Schedule", { exact: true });
    // The card shows the saved schedule once the page's data is refreshed.
    await schedule.getByText("weekdays at 07:00 Europe/Berlin").waitFor();
    expect(await schedule.getByText(/^Next: /).isVisible()).toBe(true);
    await shoot(page, "settings-team");
    await shootRegion(page.getByRole("article", { name: "Heat Lead" }), "settings-lead-card");
    await open(`/teams/${world.team}/settings`);
    await shootRegion(page.getByRole("region", { name: "Danger zone" }), "settings-danger-zone");
  });

  it("pauses the team (the schedule says so) and resumes it", async () => {
    await open(`/teams/${world.team}/agents`);
    await page.getByRole("button", { name: "Pause team" }).click();
    await page.getByText("This team is paused", { exact: false }).waitFor();
    expect(
      await page
        .getByLabel("Schedule", { exact: true })
        .getByText("paused (weekdays at 07:00 Europe/Berlin when resumed)")
        .isVisible(),
    ).toBe(true);
    await shoot(page, "settings-team-paused");
    await shootRegion(page.getByRole("article", { name: "Heat Lead" }), "settings-lead-card-paused");
    await page.getByRole("button", { name: "Resume team" }).click();
    await page.getByRole("button", { name: "Pause team" }).waitFor();
  });

  it("assigns a task by hand, retries a failed one and shows a delegation tree", { timeout: 90_000 }, async () => {
    await open(`/agents/${world.scout}`);
    const assign = page.getByRole("form", { name: "Assign a task to Scout" });
    await assign.getByLabel("Task title").fill("Compare three heat pump models");
    await assign.getByLabel("Task description (optional)").fill("Prices in Germany, with sources.");
    await assign.getByRole("button", { name: "Assign task" }).click();
    await page.locator(".task-title", { hasText: "Compare three heat pump models" }).first().waitFor();
    // The worker takes it up with the fake model and completes it.
    await expect
      .poll(
        async () =>
          (await database.db.select().from(tasks).where(eq(tasks.title, "Compare three heat pump models")))[0]?.status,
        { timeout: 30_000 },
      )
      .toBe("completed");

    const failed = await createTask(database.db, {
      agentId: world.scout,
      source: "lead",
      title: "Check the dealer list",
    });
    await database.db
      .update(tasks)
      .set({ status: "failed", result: "The model server failed (HTTP 500)." })
      .where(eq(tasks.id, failed.id));
    const root = await createTask(database.db, { agentId: world.lead, source: "user", title: "Heat pump report" });
    const child = await createTask(database.db, {
      agentId: world.scout,
      source: "lead",
      title: "Find installers",
      parentTaskId: root.id,
    });
    await database.db
      .update(tasks)
      .set({ status: "completed", result: "Twelve installers in Berlin." })
      .where(eq(tasks.id, child.id));
    await database.db.update(tasks).set({ status: "completed", result: "Report sent." }).where(eq(tasks.id, root.id));

    await open(`/agents/${world.scout}`);
    await page.getByRole("button", { name: "Retry task “Check the dealer list”" }).click();
    await expect
      .poll(
        async () => (await database.db.select().from(tasks).where(eq(tasks.title, "Check the dealer list"))).length,
        { timeout: 10_000 },
      )
      .toBe(2);
    expect(await getTask(database.db, failed.id)).toMatchObject({ status: "failed" });
    await shoot(page, "settings-agent-tasks");
    await shootRegion(page.getByRole("region", { name: "Tasks" }), "settings-agent-tasks");

    await open(`/agents/${world.lead}`);
    await page.getByText("Delegation tree").click();
    const tree = page.locator(".task-tree");
    await tree.getByText("Find installers").waitFor();
    expect(await tree.getByRole("link", { name: "Scout" }).isVisible()).toBe(true);
    expect(await tree.getByText("Twelve installers in Berlin.").isVisible()).toBe(true);
    await shoot(page, "settings-delegation-tree");
    await shootRegion(page.locator(".task").filter({ hasText: "Heat pump report" }), "settings-delegation-tree");
  });

  it("asks before deleting the team, says what goes, and deletes it", async () => {
    await open(`/teams/${world.team}/settings`);
    const opener = page.getByRole("button", { name: "Delete team" });
    await opener.click();
    const dialog = page.getByRole("dialog", { name: "Delete Heat pump desk?" });
    await dialog.waitFor();
    expect(await dialog.getByText("2 agents, their instructions and work logs").isVisible()).toBe(true);
    expect(await dialog.getByText(/^\d+ tasks?$/).isVisible()).toBe(true);
    // Focus starts on the safe choice; Escape closes and gives focus back.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Keep the team");
    await shoot(page, "settings-delete-dialog");
    await shootRegion(dialog, "settings-delete-dialog");
    await page.keyboard.press("Escape");
    await expect.poll(() => dialog.isVisible()).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Delete team");
    expect((await call(`/api/teams/${world.team}`)).status).toBe(200);

    await opener.click();
    await dialog.getByRole("button", { name: "Delete Heat pump desk" }).click();
    await page.waitForURL(`${app.url}/teams`);
    expect((await call(`/api/teams/${world.team}`)).status).toBe(404);
  });
});
