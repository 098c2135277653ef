// Usage and cost in a real browser (Debian's Chromium through playwright-core) against the
// production build: /usage empty and with 30 days of usage (chart, tables per team, agent, day
// and model, the "no price — tokens only" note), the price table edited (a price added for an
// unpriced model, a built-in one overridden and reset), the team filter, and the team page's
// "Usage and budget" section with its budgets set and cleared — each checked through the API or
// the database, with screenshots at 1440 and 375 px. The cache (issue 24, item 2): the share of
// input cached and what it saved on the usage page and the team's Overview, and on a session's
// trace after a real work session against a local OpenAI-compatible server with a prompt cache.
import path from "node:path";
import { sql } from "drizzle-orm";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getTeam } from "@/lib/db/queries/teams";
import { recordUsage } from "@/lib/db/queries/usage";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeOpenAI, type FakeChatRequest, type FakeOpenAI, type FakeReply } from "../support/fake-openai";
import { PromptCache } from "../support/prompt-cache";
import { toolNames } from "../support/team-play";
import {
  buildIfStale,
  launchChromium,
  screenshotDir as shots,
  settle,
  shoot,
  startApp,
  type AppServer,
} from "./app-server";

let database: TestDatabase;
let model: FakeOpenAI;
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const teams = { solar: { id: "", lead: "", scout: "" }, chips: { id: "", lead: "" } };

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

async function createTeam(name: string, mission: string, subordinate?: string) {
  const team = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
    method: "POST",
    body: { name, mission, leadName: `${name} Lead` },
  });
  expect(team.status).toBe(201);
  let scout = "";
  if (subordinate) {
    const created = await call<{ agent: { id: string } }>(`/api/teams/${team.body.team.id}/agents`, {
      method: "POST",
      body: { name: subordinate, instructions: "Searches the web.", parentAgentId: team.body.lead.id },
    });
    expect(created.status).toBe(201);
    scout = created.body.agent.id;
  }
  return { id: team.body.team.id, lead: team.body.lead.id, scout };
}

/** A usage row `daysAgo` UTC days back, at `hour` o'clock UTC of that day (today: at most an hour ago). */
async function usage(
  agentId: string,
  daysAgo: number,
  model: string,
  tokens: { input: number; output: number; cached?: number },
): Promise<void> {
  const row = await recordUsage(database.db, {
    agentId,
    purpose: "work",
    model,
    inputTokens: tokens.input,
    outputTokens: tokens.output,
    cachedTokens: tokens.cached ?? 0,
  });
  await database.db.execute(
    daysAgo === 0
      ? sql`update usage set created_at = greatest(date_trunc('day', now() at time zone 'utc') at time zone 'utc', now() - interval '1 hour') where id = ${row!.id}`
      : sql`update usage set created_at = (date_trunc('day', now() at time zone 'utc') at time zone 'utc') - ${daysAgo}::int * interval '1 day' + interval '13 hours' where id = ${row!.id}`,
  );
}

/** 30 days of a working team: more on weekdays, a quiet stretch, two models and an unpriced local one. */
async function seedUsage(): Promise<void> {
  for (let daysAgo = 29; daysAgo >= 0; daysAgo--) {
    if (daysAgo >= 18 && daysAgo <= 20) continue; // nothing happened on these days
    const scale = 1 + ((daysAgo * 7) % 5);
    await usage(teams.solar.lead, daysAgo, "gpt-4.1-mini", {
      input: 40_000 * scale,
      output: 4_000 * scale,
      cached: 12_000 * scale,
    });
    await usage(teams.solar.scout, daysAgo, "gpt-4o-2024-08-06", { input: 25_000 * scale, output: 3_000 * scale });
    if (daysAgo % 3 === 0) await usage(teams.solar.scout, daysAgo, "llama3.1:8b", { input: 30_000, output: 6_000 });
    if (daysAgo % 2 === 0)
      await usage(teams.chips.lead, daysAgo, "gpt-4.1", {
        input: 20_000 * scale,
        output: 2_500 * scale,
        cached: 5_000,
      });
  }
}

/** A lead that looks at its team a few times before it answers: each step resends the conversation, so the server's cache serves most of it. */
function leadWhoLooksFirst(request: FakeChatRequest): FakeReply {
  if (request.response_format) return { text: '{"items":[]}' };
  const tools = toolNames(request);
  if (tools.length === 0) return { text: "Summary of the work so far." };
  if (!tools.includes("getTeamStatus")) return { text: "Nothing to brief yet." };
  const looked = request.messages.filter((message) => message.role === "tool").length;
  return looked < 4
    ? { toolCalls: [{ name: "getTeamStatus", arguments: {} }] }
    : { text: "The team is ready to start." };
}

/** "62%" as the pages round a share. */
const percent = (share: number) => `${Math.round(share * 100)}%`;

async function open(pathname: string): Promise<void> {
  await page.goto(`${app.url}${pathname}`);
  await settle(page);
}

function budgetSection(): Locator {
  return page.getByRole("region", { name: "Usage and budget" });
}

/** A region alone at both widths, for a closer look than the full-page shots give. */
async function shootRegion(region: Locator, name: string): Promise<void> {
  for (const width of [1440, 375]) {
    await page.setViewportSize({ width, height: width === 1440 ? 900 : 812 });
    await page.waitForTimeout(150); // the chart follows its container's width
    await region.screenshot({ path: path.join(shots, `${name}-section-${width}.png`) });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

describe("usage and cost in the browser", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    // Work sessions call a priced model (gpt-4.1) on a local server that caches prompts as OpenAI does.
    model = await startFakeOpenAI(leadWhoLooksFirst, { promptCache: new PromptCache() });
    app = await startApp({
      DATABASE_URL: database.url,
      TEAM_DAILY_TOKEN_BUDGET: "2000000",
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: "sk-test",
      LLM_MODEL: "gpt-4.1",
    });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    teams.solar = await createTeam("Solar desk", "Track solar panel prices and what moves them.", "Scout");
    teams.chips = await createTeam("Chip watch", "Follow the chip supply chain.");
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await model?.close();
    await database?.drop();
  });

  it("shows an empty state before any model call, with the price table already there", async () => {
    await open("/usage");
    await expect.poll(() => page.getByRole("heading", { name: "Usage and cost" }).isVisible()).toBe(true);
    expect(await page.getByText("No usage yet").isVisible()).toBe(true);
    expect(await page.getByRole("listitem", { name: "Price of gpt-4.1-mini" }).getByText("in $0.40").isVisible()).toBe(
      true,
    );
    expect(await page.getByRole("link", { name: "Usage", exact: true }).getAttribute("aria-current")).toBe("page");
    await shoot(page, "usage-empty");
  });

  it("shows 30 days per team, agent, day and model, and says which model has no price", async () => {
    await seedUsage();
    await open("/usage");
    await page.locator(".recharts-bar-rectangle").first().waitFor();
    // Every day is a slot on the axis; the quiet days are there, empty.
    const { body } = await call<{
      report: { series: { day: string; tokens: number }[]; totals: { costUsd: number; unpricedModels: string[] } };
    }>("/api/usage?days=30");
    expect(body.report.series).toHaveLength(30);
    expect(body.report.series.filter((day) => day.tokens === 0)).toHaveLength(3);
    expect(body.report.totals.unpricedModels).toEqual(["llama3.1:8b"]);

    const solar = page.getByRole("region", { name: "Solar desk" });
    expect(await solar.getByRole("row", { name: /Scout/ }).isVisible()).toBe(true);
    expect(await solar.getByRole("row", { name: /Solar desk Lead/ }).isVisible()).toBe(true);
    expect(await solar.getByText("No price for model llama3.1:8b — tokens only.").isVisible()).toBe(true);
    expect(await page.getByRole("region", { name: "Chip watch" }).getByText("No price for model").count()).toBe(0);
    const models = page.getByRole("region", { name: "Per model" });
    expect(await models.getByRole("row", { name: /gpt-4o-2024-08-06 gpt-4o \(built-in\)/ }).isVisible()).toBe(true);
    expect(await models.getByRole("row", { name: /llama3\.1:8b no price — tokens only/ }).isVisible()).toBe(true);
    expect(
      await page
        .getByRole("definition")
        .filter({ hasText: /^\$[\d,.]+$/ })
        .count(),
    ).toBe(1);
    // The cache per team, per agent (a column) and in total, with what it saved; an agent with none says so quietly.
    type Figures = { cachedShare: number; savedUsd: number };
    const report = (
      await call<{ report: { totals: Figures; teams: { teamName: string; figures: Figures }[] } }>("/api/usage?days=30")
    ).body.report;
    const solarFigures = report.teams.find((team) => team.teamName === "Solar desk")!.figures;
    expect(solarFigures.cachedShare).toBeGreaterThan(0);
    expect(solarFigures.savedUsd).toBeGreaterThan(0);
    expect(await solar.locator(".usage-team-cache").innerText()).toMatch(
      new RegExp(`^${percent(solarFigures.cachedShare)} of input cached · saved \\$[\\d.]+$`),
    );
    expect(await solar.getByRole("columnheader", { name: "Input cached" }).isVisible()).toBe(true);
    expect(
      await solar.getByRole("row", { name: /Scout/ }).getByRole("cell", { name: "none", exact: true }).isVisible(),
    ).toBe(true);
    const tile = page.locator('dl[aria-label="Totals"] > div').filter({ hasText: "Input cached" });
    expect(await tile.getByRole("definition").innerText()).toMatch(
      new RegExp(`^${percent(report.totals.cachedShare)}\\s*saved \\$[\\d.]+$`),
    );
    expect(await page.getByText(/Cached input is input the provider had already seen/).isVisible()).toBe(true);
    // Per day too.
    await page.getByText(/^Per day \(/).click();
    expect(
      await page
        .getByRole("region", { name: "Per day" })
        .getByRole("columnheader", { name: "Input cached" })
        .isVisible(),
    ).toBe(true);
    await shoot(page, "usage");

    await page.getByRole("button", { name: "Cost" }).click();
    expect(await page.getByRole("button", { name: "Cost" }).getAttribute("aria-pressed")).toBe("true");
    await page.getByText(/Cost leaves out [\d,]+ tokens of models without a price/).waitFor();
    await shootRegion(page.getByRole("region", { name: "Per day" }), "usage-chart-cost");
  });

  it("prices an unpriced model, overrides a built-in price and resets it, in the price table", async () => {
    await open("/usage");
    const add = page.getByRole("form", { name: "Add a model's price" });
    await add.getByRole("button", { name: "llama3.1:8b" }).click();
    expect(await add.getByLabel("Model id").inputValue()).toBe("llama3.1:8b");
    await add.getByLabel("Input $ / 1M tokens").fill("0.1");
    await add.getByLabel("Output $ / 1M tokens").fill("0.2");
    await add.getByRole("button", { name: "Add price" }).click();
    const llama = page.getByRole("listitem", { name: "Price of llama3.1:8b" });
    await llama.getByText("yours", { exact: true }).waitFor();
    await expect.poll(() => page.getByText("No price for model llama3.1:8b").count()).toBe(0);
    const prices = await call<{ prices: { model: string; custom: { inputUsdPerMtok: number } | null }[] }>(
      "/api/model-prices",
    );
    expect(prices.body.prices.find((entry) => entry.model === "llama3.1:8b")!.custom).toMatchObject({
      inputUsdPerMtok: 0.1,
      outputUsdPerMtok: 0.2,
    });

    const mini = page.getByRole("listitem", { name: "Price of gpt-4.1-mini" });
    await mini.getByRole("button", { name: "Edit the price of gpt-4.1-mini" }).click();
    await mini.getByLabel("Input $ / 1M tokens").fill("0.5");
    await mini.getByRole("button", { name: "Save price" }).click();
    await mini.getByText("yours, over the built-in price").waitFor();
    expect(await mini.getByText("in $0.50").isVisible()).toBe(true);
    await shootRegion(page.getByRole("region", { name: "Price table" }), "usage-prices");
    await mini.getByRole("button", { name: "Reset gpt-4.1-mini to the built-in price" }).click();
    await mini.getByText("built-in", { exact: true }).waitFor();
    expect(await mini.getByText("in $0.40").isVisible()).toBe(true);

    // A price the server refuses says why, in the form.
    await add.getByLabel("Model id").fill("my model");
    await add.getByLabel("Input $ / 1M tokens").fill("1");
    await add.getByLabel("Output $ / 1M tokens").fill("1");
    await add.getByRole("button", { name: "Add price" }).click();
    await add
      .getByRole("alert")
      .getByText(/is not a model id/)
      .waitFor();
  });

  it("filters by team", async () => {
    await open("/usage");
    await page.getByRole("combobox", { name: "Team" }).selectOption({ label: "Chip watch" });
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/teamId=/);
    await settle(page);
    expect(new URL(page.url()).searchParams.get("teamId")).toBe(teams.chips.id);
    await page.getByRole("region", { name: "Chip watch" }).waitFor();
    expect(await page.getByRole("region", { name: "Solar desk" }).count()).toBe(0);
    expect(await page.getByText("Chip watch, last 30 days").isVisible()).toBe(true);
  });

  it("shows each model call's cached input on a real session's trace, and the session's share cached", async () => {
    const desk = await createTeam("Cache desk", "Watch what the prompt cache saves.");
    const task = await call<{ task: { id: string } }>(`/api/agents/${desk.lead}/tasks`, {
      method: "POST",
      body: { title: "Get the team ready" },
    });
    expect(task.status).toBe(201);
    type Task = { id: string; status: string };
    await expect
      .poll(
        async () =>
          (await call<{ tasks: Task[] }>(`/api/agents/${desk.lead}/tasks`)).body.tasks.find(
            (each) => each.id === task.body.task.id,
          )?.status,
        { timeout: 60_000, interval: 500 },
      )
      .toBe("completed");

    // The trace as the API has it: every model call's cached tokens, as the server reported them.
    const sessionId = (
      await database.db.execute<{ id: string }>(
        sql`select id from work_sessions where agent_id = ${desk.lead} order by started_at limit 1`,
      )
    )[0]!.id;
    // The task completes before its session's wrap-up (knowledge, the briefing decision) makes its calls: the trace is read once the session has ended.
    await expect
      .poll(
        async () =>
          (
            await database.db.execute<{ status: string }>(sql`select status from work_sessions where id = ${sessionId}`)
          )[0]?.status,
        { timeout: 60_000, interval: 250 },
      )
      .not.toBe("running");
    type Span = { type: string; inputTokens: number; cachedTokens: number; outputTokens: number };
    const { body } = await call<{
      trace: { spans: Span[]; totals: { cachedShare: number; savedUsd: number; cachedTokens: number } };
    }>(`/api/sessions/${sessionId}`);
    const cachedCalls = body.trace.spans.filter((span) => span.type === "model" && span.cachedTokens > 0);
    expect(cachedCalls.length).toBeGreaterThanOrEqual(3);
    expect(body.trace.totals.savedUsd).toBeGreaterThan(0);

    await page.setViewportSize({ width: 1440, height: 900 });
    await open(`/sessions/${sessionId}`);
    const outcome = page.getByRole("region", { name: "Outcome" });
    const tile = outcome.locator("dl.stats > div").filter({ hasText: "Input cached" });
    expect(await tile.getByRole("definition").innerText()).toMatch(
      new RegExp(`^${percent(body.trace.totals.cachedShare)}\\s*saved \\$[\\d.]+$`),
    );
    const number = (value: number) => value.toLocaleString("en-US");
    for (const span of cachedCalls) {
      const words = `${number(span.inputTokens)} in (${number(span.cachedTokens)} cached) · ${number(span.outputTokens)} out`;
      expect(
        await page
          .getByRole("list", { name: /Model calls, tool calls and events/ })
          .getByText(words)
          .first()
          .isVisible(),
        words,
      ).toBe(true);
    }
    await shoot(page, "session-trace-cached");

    // The usage page counts the session: the desk's line says how much of its input was cached.
    await page.setViewportSize({ width: 1440, height: 900 });
    await open("/usage");
    const deskUsage = page.getByRole("region", { name: "Cache desk" });
    expect(await deskUsage.locator(".usage-team-cache").innerText()).toMatch(/^\d+% of input cached · saved \$[\d.]+$/);
  });

  it("shows the team's spending against its budgets on the team page, and sets and clears them", async () => {
    // The last 30 days as a chart on the Overview, the budgets on Settings.
    await open(`/teams/${teams.solar.id}`);
    const spending = page.getByRole("region", { name: "Spending" });
    await spending.locator(".recharts-bar-rectangle").first().waitFor();
    expect(await spending.getByText("of 2,000,000").isVisible()).toBe(true);
    // Beside the cost: today's share of input cached and what it saved, and the 30 days' in the chart's caption.
    expect(await spending.locator(".budget-meter-cache").innerText()).toMatch(
      /^\d+% of input cached · saved \$[\d.]+$/,
    );
    expect(
      await spending
        .getByText(/^Last 30 days \(UTC\): [\d,]+ tokens, \$[\d,.]+, \d+% of input cached · saved \$[\d.]+$/)
        .isVisible(),
    ).toBe(true);
    await shootRegion(spending, "team-spending");
    await open(`/teams/${teams.solar.id}/settings`);
    const section = budgetSection();
    expect(await section.getByText("The default daily budget (TEAM_DAILY_TOKEN_BUDGET).").isVisible()).toBe(true);
    expect(await section.getByText("of 2,000,000").isVisible()).toBe(true);
    expect(await section.getByText("No cost cap.", { exact: true }).isVisible()).toBe(true);
    await shoot(page, "team-usage");
    await shootRegion(section, "team-usage");

    const form = section.getByRole("form", { name: "Daily budgets" });
    await form.getByLabel("Daily token budget").fill("100000");
    await form.getByLabel("Daily cost budget (US$)").fill("0.05");
    await form.getByRole("button", { name: "Save budgets" }).click();
    await section.getByText("The team's own daily budget.").waitFor();
    expect(await getTeam(database.db, teams.solar.id)).toMatchObject({
      dailyTokenBudget: 100_000,
      dailyCostBudgetUsd: 0.05,
    });
    // Today's usage is over both: the section says the agents stop.
    await section.getByText(/This team has spent today.s budget/).waitFor();
    expect(await section.getByText("of $0.05").isVisible()).toBe(true);
    await shootRegion(section, "team-usage-over-budget");

    await form.getByLabel("Daily token budget").fill("");
    await form.getByLabel("Daily cost budget (US$)").fill("");
    await form.getByRole("button", { name: "Save budgets" }).click();
    await section.getByText("No cost cap.", { exact: true }).waitFor();
    expect(await getTeam(database.db, teams.solar.id)).toMatchObject({
      dailyTokenBudget: null,
      dailyCostBudgetUsd: null,
    });
  });

  it("shows the team page's section with no usage yet, and an agent's cost on its page", async () => {
    const quiet = await createTeam("Quiet team", "Nothing yet.");
    await open(`/teams/${quiet.id}`);
    await page
      .getByRole("region", { name: "Spending" })
      .getByText(/No model calls in the last 30 days yet/)
      .waitFor();
    await open(`/teams/${quiet.id}/settings`);
    expect(await budgetSection().getByText("Tokens today").isVisible()).toBe(true);
    await shootRegion(budgetSection(), "team-usage-empty");

    await open(`/agents/${teams.solar.scout}`);
    const usageRegion = page.getByRole("region", { name: "Usage" });
    expect(
      await usageRegion
        .getByRole("definition")
        .filter({ hasText: /^\$[\d,.]+$/ })
        .count(),
    ).toBe(1);
  });

  it("keeps what a removed agent and a deleted team spent, each as one entry with no link", async () => {
    type Totals = { report: { totals: { calls: number; costUsd: number } } };
    const before = (await call<Totals>("/api/usage?days=30")).body.report.totals;
    expect((await call(`/api/agents/${teams.solar.scout}`, { method: "DELETE" })).status).toBe(204);
    expect((await call(`/api/teams/${teams.chips.id}`, { method: "DELETE" })).status).toBe(204);
    expect((await call<Totals>("/api/usage?days=30")).body.report.totals).toEqual(before);

    await open("/usage");
    const removed = page.getByRole("region", { name: "Solar desk" }).getByRole("row", { name: /Removed agents/ });
    await removed.waitFor();
    expect(await removed.getByRole("link").count()).toBe(0);
    const deleted = page.getByRole("region", { name: "Deleted teams" });
    expect(await deleted.getByRole("heading", { name: "Deleted teams" }).getByRole("link").count()).toBe(0);
    expect(await deleted.getByRole("row", { name: /Removed agents/ }).isVisible()).toBe(true);
    await shootRegion(deleted, "usage-deleted-team");
  });

  it("keeps the navigation, with Usage and Sign out, within a phone's width when sign-in is on", async () => {
    const guarded = await startApp({ DATABASE_URL: database.url, APP_PASSWORD: "correct horse battery" }, [
      "--web-only",
    ]);
    const visitor = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    visitor.setDefaultTimeout(10_000);
    const tab = await visitor.newPage();
    try {
      await tab.goto(`${guarded.url}/usage`);
      await tab.waitForURL("**/sign-in?next=%2Fusage");
      await tab.getByLabel("Password").fill("correct horse battery");
      await tab.getByRole("button", { name: "Sign in" }).click();
      await tab.waitForURL("**/usage");
      await settle(tab);
      await tab.getByRole("button", { name: "Sign out" }).waitFor();
      await shoot(tab, "usage-signed-in");
      await tab.setViewportSize({ width: 375, height: 812 });
      // Every link can still be reached on the phone (the links scroll within the bar if need be).
      await tab.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Usage" }).click();
      await tab.waitForURL("**/usage");
    } finally {
      await visitor.close();
      await guarded.stop();
    }
  });
});
