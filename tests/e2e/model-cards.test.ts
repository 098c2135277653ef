// The models' cards on a team's Settings (issue 33, item 4), on the production build: with a
// server that ignores tool_choice, the lead's model is unchecked until the person checks it, then
// says in words what it does and what Cadre does about it; a subordinate's own model has its own
// card; nothing internal shows. With no model configured, one card says the demo model needs no
// check. Screenshots at 1440 and 375 px.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeOpenAI, type FakeChatRequest, type FakeOpenAI } from "../support/fake-openai";
import { scanPage } from "../support/internal-text";
import { buildIfStale, callApi, launchChromium, settle, shoot, startApp, type AppServer } from "./app-server";

let database: TestDatabase;
let openai: FakeOpenAI;
let browser: Browser;
let page: Page;
const apps: AppServer[] = [];

/** Ollama's way: a forced or required tool gets words, "none" still gets a call. */
function ignoresToolChoice(request: FakeChatRequest) {
  const tool = request.tools?.[0]?.function.name;
  if (tool && (request.tool_choice === "none" || request.tool_choice === "auto"))
    return { toolCalls: [{ name: tool, arguments: { city: "Lyon" } }] };
  return { text: "ready" };
}

/** A team with a lead on the default model and a subordinate, Scout, on llama3.2. */
async function teamOn(app: AppServer): Promise<{ teamId: string }> {
  const { body } = await callApi<{ team: { id: string }; lead: { id: string } }>(app.url, "/api/teams", {
    method: "POST",
    body: { name: "Sodium desk", mission: "Follow sodium-ion batteries.", leadName: "Ada" },
  });
  const scout = await callApi<{ agent: { id: string } }>(app.url, `/api/teams/${body.team.id}/agents`, {
    method: "POST",
    body: { name: "Scout", instructions: "Search.", model: "llama3.2" },
  });
  expect(scout.status).toBe(201);
  return { teamId: body.team.id };
}

async function expectPlainWords(): Promise<void> {
  const findings = await scanPage(page);
  expect(findings, JSON.stringify(findings)).toEqual([]);
}

describe("the models' cards on Settings", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    openai = await startFakeOpenAI(ignoresToolChoice, { models: ["qwen3:8b", "llama3.2"] });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.setDefaultTimeout(15_000);
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    for (const app of apps) await app.stop();
    await openai?.close();
    await database?.drop();
  });

  it("shows each model in use, checks one on request, and says what it does in words", async () => {
    const app = await startApp({ DATABASE_URL: database.url, OPENAI_BASE_URL: openai.url, LLM_MODEL: "qwen3:8b" }, [
      "--web-only",
    ]);
    apps.push(app);
    const { teamId } = await teamOn(app);

    await page.goto(`${app.url}/teams/${teamId}/settings`);
    await settle(page);
    const section = page.locator("#compatibility");
    const lead = section.getByRole("article", { name: "Model qwen3:8b" });
    const scout = section.getByRole("article", { name: "Model llama3.2" });
    await expect.poll(() => lead.textContent()).toMatch(/Used by Ada.*Not checked on this server yet/);
    expect(await scout.textContent()).toMatch(/Used by Scout.*Not checked on this server yet/);

    const before = openai.requests.length;
    await lead.getByRole("button", { name: "Check this model" }).click();
    await expect
      .poll(() => lead.textContent(), { timeout: 15_000 })
      .toContain("This model ignores 'no tools now'; Cadre summarizes without offering tools.");
    expect(openai.requests.length - before).toBe(5);
    expect(await lead.textContent()).toMatch(/Checked just now.*Check again/);
    expect(await scout.textContent()).toContain("Not checked on this server yet");
    await expectPlainWords();
    await shoot(page, "model-cards");
  });

  it("says the built-in demo model needs no check when no model is configured", async () => {
    const app = await startApp({ DATABASE_URL: database.url }, ["--web-only"]);
    apps.push(app);
    const { teamId } = await teamOn(app);
    await page.goto(`${app.url}/teams/${teamId}/settings`);
    await settle(page);
    const card = page.locator("#compatibility").getByRole("article");
    await expect.poll(() => card.count()).toBe(1);
    expect(await card.textContent()).toMatch(/Built-in demo model.*plays every agent.*needs no check/);
    expect(await card.getByRole("button").count()).toBe(0);
    await expectPlainWords();
    await shoot(page, "model-cards-offline");
  });
});
