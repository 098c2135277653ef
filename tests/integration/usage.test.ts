// Usage and cost (issue 13, item 4): the per-day × team × agent report on real Postgres (UTC
// days, empty days, unknown models, cached tokens), the price table's API and the team budgets'.
import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { recordUsage } from "@/lib/db/queries/usage";
import { getTeam } from "@/lib/db/queries/teams";
import { BUILT_IN_PRICES, PriceTable } from "@/lib/usage/prices";
import { usageReport, NO_TEAM_KEY, type UsageReport } from "@/lib/usage/report";
import { teamSpendToday } from "@/lib/usage/spend";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

const ORIGIN = "http://localhost:3000";

async function loadRoutes() {
  return {
    usage: await import("@/app/api/usage/route"),
    prices: await import("@/app/api/model-prices/route"),
    price: await import("@/app/api/model-prices/[...model]/route"),
    team: await import("@/app/api/teams/[teamId]/route"),
    agent: await import("@/app/api/agents/[agentId]/route"),
  };
}

let database: TestDatabase;
let api: Awaited<ReturnType<typeof loadRoutes>>;

beforeAll(async () => {
  delete process.env.APP_PASSWORD;
  database = await createWebTestDatabase();
  api = await loadRoutes();
});

afterAll(async () => {
  await closeWebTestDatabase(database);
});

beforeEach(async () => {
  await database.db.execute(sql`delete from usage`);
  await database.db.execute(sql`delete from model_prices`);
});

/** A usage row at a moment given as SQL relative to the start of today (UTC), e.g. `- interval '1 second'`. */
async function usageAt(moment: string, row: Parameters<typeof recordUsage>[1]): Promise<void> {
  const recorded = await recordUsage(database.db, row);
  await database.db.execute(
    sql`update usage set created_at = (date_trunc('day', now() at time zone 'utc') at time zone 'utc') ${sql.raw(moment)} where id = ${recorded!.id}`,
  );
}

const utcDay = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
const dayOf = (report: UsageReport, day: string) => report.series.find((entry) => entry.day === day)!;

function request(method: string, path: string, body?: unknown): Request {
  return new Request(ORIGIN + path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
}
const modelParams = (model: string) => ({ params: Promise.resolve({ model: model.split("/") }) });
const teamParams = (teamId: string) => ({ params: Promise.resolve({ teamId }) });
const agentParams = (agentId: string) => ({ params: Promise.resolve({ agentId }) });
async function errorOf(response: Response): Promise<{ status: number; code: string; message: string }> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, ...body.error };
}

describe("usage report", () => {
  it("has every one of the last 30 UTC days, oldest first, today last, with zeros where nothing was spent", async () => {
    const report = await usageReport(database.db, { days: 30 });
    expect(report.series).toHaveLength(30);
    expect(report.to).toBe(utcDay(0));
    expect(report.from).toBe(utcDay(29));
    expect(report.series.every((day) => day.tokens === 0 && day.costUsd === 0)).toBe(true);
    expect(report.teams).toEqual([]);
    expect(report.totals).toMatchObject({ calls: 0, tokens: 0, costUsd: 0 });
  });

  it("puts a call on the UTC day it was made: a second before midnight is yesterday, midnight is today, 30 days ago is out", async () => {
    const { lead } = await createTeamFixture(database.db);
    await usageAt("- interval '1 second'", {
      agentId: lead.id,
      purpose: "work",
      model: "gpt-4.1",
      inputTokens: 100,
      outputTokens: 10,
    });
    await usageAt("+ interval '0 seconds'", {
      agentId: lead.id,
      purpose: "work",
      model: "gpt-4.1",
      inputTokens: 200,
      outputTokens: 20,
    });
    await usageAt("- interval '29 days'", {
      agentId: lead.id,
      purpose: "work",
      model: "gpt-4.1",
      inputTokens: 400,
      outputTokens: 40,
    });
    await usageAt("- interval '29 days 1 second'", {
      agentId: lead.id,
      purpose: "work",
      model: "gpt-4.1",
      inputTokens: 800,
      outputTokens: 80,
    });
    const report = await usageReport(database.db, { days: 30 });
    expect(dayOf(report, utcDay(1)).tokens).toBe(110);
    expect(dayOf(report, utcDay(0)).tokens).toBe(220);
    expect(dayOf(report, utcDay(29)).tokens).toBe(440);
    expect(report.totals.tokens).toBe(770);
    expect((await usageReport(database.db, { days: 1 })).totals.tokens).toBe(220);
  });

  it("sums per day, team and agent, prices cached input at the cached rate, and flags models without a price", async () => {
    const solar = await createTeamFixture(database.db, { name: "Solar", subordinates: ["Scout"] });
    const chips = await createTeamFixture(database.db, { name: "Chips" });
    const scout = solar.subordinates[0]!;
    // 1M input of which 400k cached, 100k output on gpt-4.1 ($2 / $0.50 cached / $8): $1.20 + $0.20 + $0.80.
    await usageAt("+ interval '1 hour'", {
      agentId: solar.lead.id,
      purpose: "work",
      model: "gpt-4.1",
      inputTokens: 1_000_000,
      cachedTokens: 400_000,
      outputTokens: 100_000,
    });
    await usageAt("+ interval '2 hours'", {
      agentId: scout.id,
      purpose: "work",
      model: "gpt-4o-mini-2024-07-18",
      inputTokens: 1_000_000,
      outputTokens: 0,
    });
    await usageAt("+ interval '3 hours'", {
      agentId: scout.id,
      purpose: "work",
      model: "llama3.1:8b",
      inputTokens: 5_000,
      outputTokens: 500,
    });
    await usageAt("- interval '2 days'", {
      agentId: chips.lead.id,
      purpose: "chat",
      model: "gpt-5-nano",
      inputTokens: 2_000_000,
      outputTokens: 1_000_000,
    });
    await usageAt("- interval '3 days'", {
      agentId: null,
      purpose: "draft",
      model: "gpt-4.1-mini",
      inputTokens: 1_000_000,
      outputTokens: 0,
    });

    const report = await usageReport(database.db, { days: 30 });
    const solarUsage = report.teams.find((team) => team.teamId === solar.team.id)!;
    expect(solarUsage.figures).toMatchObject({
      calls: 3,
      inputTokens: 2_005_000,
      outputTokens: 100_500,
      cachedTokens: 400_000,
      unpricedTokens: 5_500,
      unpricedModels: ["llama3.1:8b"],
    });
    expect(solarUsage.figures.costUsd).toBeCloseTo(2.2 + 0.15, 10);
    // The cache: 400k of 2,005k input, which saved 400k × ($2 − $0.50) per million on gpt-4.1.
    expect(solarUsage.figures.cachedShare).toBeCloseTo(400_000 / 2_005_000, 10);
    expect(solarUsage.figures.savedUsd).toBeCloseTo(0.6, 10);
    expect(solarUsage.agents.find((agent) => agent.agentId === scout.id)!.figures).toMatchObject({
      cachedTokens: 0,
      cachedShare: 0,
      savedUsd: 0,
    });
    expect(dayOf(report, utcDay(0))).toMatchObject({ inputTokens: 2_005_000, cachedTokens: 400_000 });
    expect(dayOf(report, utcDay(0)).savedUsd).toBeCloseTo(0.6, 10);
    expect(solarUsage.agents.find((agent) => agent.agentId === solar.lead.id)!.figures.costUsd).toBeCloseTo(2.2, 10);
    expect(solarUsage.agents.find((agent) => agent.agentId === scout.id)!.figures).toMatchObject({
      calls: 2,
      unpricedModels: ["llama3.1:8b"],
    });
    expect(solarUsage.models.find((model) => model.model === "gpt-4o-mini-2024-07-18")!.price).toEqual({
      matched: "gpt-4o-mini",
      source: "built-in",
    });
    expect(solarUsage.models.find((model) => model.model === "llama3.1:8b")!.price).toBeNull();

    const chipsDay = dayOf(report, utcDay(2));
    expect(chipsDay.byTeam[chips.team.id]!.costUsd).toBeCloseTo(0.1 + 0.4, 10);
    expect(dayOf(report, utcDay(3)).byTeam[NO_TEAM_KEY]).toMatchObject({ tokens: 1_000_000 });
    expect(report.rows.filter((row) => row.day === utcDay(0))).toHaveLength(2); // lead and scout, today
    expect(report.totals.costUsd).toBeCloseTo(2.35 + 0.5 + 0.4, 10);
    expect(report.totals.unpricedModels).toEqual(["llama3.1:8b"]);

    // One team: the others and the drafting calls are left out; the person's price for a model that had none prices its calls.
    const price = await api.price.PUT(
      request("PUT", "/api/model-prices/llama3.1:8b", { inputUsdPerMtok: 1, outputUsdPerMtok: 2 }),
      modelParams("llama3.1:8b"),
    );
    expect(price.status).toBe(200);
    const onlySolar = await usageReport(database.db, { days: 30, teamId: solar.team.id });
    expect(onlySolar.teams.map((team) => team.teamId)).toEqual([solar.team.id]);
    expect(onlySolar.totals.unpricedModels).toEqual([]);
    expect(onlySolar.totals.costUsd).toBeCloseTo(2.35 + 0.005 + 0.001, 10);
  });

  it("counts today's spending of a team for its budgets (UTC day, priced)", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await usageAt("- interval '1 second'", {
      agentId: lead.id,
      purpose: "work",
      model: "gpt-4.1",
      inputTokens: 1_000_000,
      outputTokens: 0,
    });
    await usageAt("+ interval '1 second'", {
      agentId: lead.id,
      purpose: "work",
      model: "gpt-4.1",
      inputTokens: 500_000,
      outputTokens: 0,
    });
    await usageAt("+ interval '2 seconds'", {
      agentId: lead.id,
      purpose: "work",
      model: "mystery",
      inputTokens: 7,
      outputTokens: 0,
    });
    expect(await teamSpendToday(database.db, team.id)).toEqual({
      calls: 2,
      estimatedCalls: 0,
      tokens: 500_007,
      costUsd: 1,
      unpricedModels: ["mystery"],
      inputTokens: 500_007,
      cachedTokens: 0,
      cachedShare: 0,
      savedUsd: 0,
    });
  });

  it("prices a call at the price in force when it was made: a price edited later applies to the calls after it", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    // gpt-4.1 is $2 per million input tokens (built in).
    await recordUsage(database.db, { agentId: lead.id, purpose: "work", model: "gpt-4.1", inputTokens: 1_000_000 });
    const put = await api.price.PUT(
      request("PUT", "/x", { inputUsdPerMtok: 5, outputUsdPerMtok: 20 }),
      modelParams("gpt-4.1"),
    );
    expect(put.status).toBe(200);
    expect((await usageReport(database.db, { days: 1 })).totals.costUsd).toBe(2);
    expect((await teamSpendToday(database.db, team.id)).costUsd).toBe(2);

    // The call after the edit costs the new price; the one before still costs the old one.
    await recordUsage(database.db, { agentId: lead.id, purpose: "work", model: "gpt-4.1", inputTokens: 1_000_000 });
    const report = await usageReport(database.db, { days: 1 });
    expect(report.totals).toMatchObject({ calls: 2, costUsd: 7 });
    expect(report.models).toHaveLength(1); // one model, whatever prices its calls kept
    expect((await teamSpendToday(database.db, team.id)).costUsd).toBe(7);

    // A row written before rows kept their price is priced with today's table.
    await database.db.execute(
      sql`update usage set input_usd_per_mtok = null, cached_input_usd_per_mtok = null, output_usd_per_mtok = null where input_usd_per_mtok = 2`,
    );
    expect((await usageReport(database.db, { days: 1 })).totals.costUsd).toBe(10);
  });

  it("keeps the price the price table gives at the time of the call: the person's over the built-in, most specific id first", async () => {
    const { lead } = await createTeamFixture(database.db);
    const custom = [
      { model: "gpt-4o", inputUsdPerMtok: 3, cachedInputUsdPerMtok: 1.5, outputUsdPerMtok: 12 },
      { model: "gpt-4o-mini-2024-07-18", inputUsdPerMtok: 0.2, cachedInputUsdPerMtok: null, outputUsdPerMtok: 0.7 },
      { model: "openrouter/meta/llama-3", inputUsdPerMtok: 0.05, cachedInputUsdPerMtok: null, outputUsdPerMtok: 0.1 },
    ];
    for (const { model, ...price } of custom) {
      expect((await api.price.PUT(request("PUT", "/x", price), modelParams(model))).status).toBe(200);
    }
    const table = new PriceTable(custom);
    const models = [
      "gpt-4o",
      "openai/gpt-4o-2024-08-06",
      "gpt-4o-mini",
      "openai/gpt-4o-mini-2024-07-18",
      "GPT-4.1-nano",
      "openrouter/meta/llama-3",
      "meta/llama-3",
      "mystery",
    ];
    for (const model of models) {
      const row = await recordUsage(database.db, { agentId: lead.id, purpose: "work", model, inputTokens: 1 });
      const kept =
        row.inputUsdPerMtok === null
          ? null
          : {
              inputUsdPerMtok: row.inputUsdPerMtok,
              cachedInputUsdPerMtok: row.cachedInputUsdPerMtok,
              outputUsdPerMtok: row.outputUsdPerMtok,
            };
      expect(kept, model).toEqual(table.priceOf(model)?.price ?? null);
    }
  });

  it("serves costs rounded to the micro-dollar, without float noise", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    // Unrounded, these add up to 0.00033339999999999997 dollars.
    await recordUsage(database.db, {
      agentId: lead.id,
      purpose: "work",
      model: "gpt-4.1-nano",
      inputTokens: 123,
      outputTokens: 7,
    });
    await recordUsage(database.db, {
      agentId: lead.id,
      purpose: "work",
      model: "gpt-4.1-mini",
      inputTokens: 1234,
      cachedTokens: 1000,
      outputTokens: 77,
    });
    await recordUsage(database.db, {
      agentId: lead.id,
      purpose: "work",
      model: "gpt-4.1-nano",
      inputTokens: 3,
      outputTokens: 3,
    });
    const body = await (await api.usage.GET(request("GET", `/api/usage?teamId=${team.id}&days=2`))).text();
    const dollars: number[] = [];
    JSON.parse(body, (key, value: unknown) => {
      if (/usd$/i.test(key) && typeof value === "number") dollars.push(value);
      return value;
    });
    expect(dollars.length).toBeGreaterThan(10);
    expect(dollars.filter((value) => !/^-?\d+(\.\d{1,6})?$/.test(String(value)))).toEqual([]);
    expect(JSON.parse(body).report.totals.costUsd).toBe(0.000333);
    expect((await teamSpendToday(database.db, team.id)).costUsd).toBe(0.000333);
  });

  it("keeps what a removed agent and a deleted team spent: the team's budget still counts it, and so do the totals", async () => {
    const solar = await createTeamFixture(database.db, { name: "Solar", subordinates: ["Scout", "Digger"] });
    const [scout, digger] = solar.subordinates as [(typeof solar.subordinates)[0], (typeof solar.subordinates)[0]];
    // gpt-4.1 input is $2 per million tokens.
    await usageAt("+ interval '1 second'", {
      agentId: solar.lead.id,
      purpose: "work",
      model: "gpt-4.1",
      inputTokens: 500_000,
    });
    await usageAt("+ interval '2 seconds'", {
      agentId: scout.id,
      purpose: "work",
      model: "gpt-4.1",
      inputTokens: 1_000_000,
    });
    await usageAt("+ interval '3 seconds'", {
      agentId: digger.id,
      purpose: "work",
      model: "gpt-4.1",
      inputTokens: 250_000,
    });
    expect((await teamSpendToday(database.db, solar.team.id)).costUsd).toBeCloseTo(3.5, 10);

    expect((await api.agent.DELETE(request("DELETE", `/api/agents/${scout.id}`), agentParams(scout.id))).status).toBe(
      204,
    );
    expect((await api.agent.DELETE(request("DELETE", `/api/agents/${digger.id}`), agentParams(digger.id))).status).toBe(
      204,
    );
    expect(await teamSpendToday(database.db, solar.team.id)).toMatchObject({ calls: 3, tokens: 1_750_000 });
    const solarUsage = (await usageReport(database.db, { days: 1, teamId: solar.team.id })).teams[0]!;
    expect(solarUsage.figures.costUsd).toBeCloseTo(3.5, 10);
    // The removed agents are one entry, with no page to link to.
    expect(solarUsage.agents.map((agent) => [agent.agentName, agent.agentId, agent.figures.calls])).toEqual([
      ["Removed agents", null, 2],
      [solar.lead.name, solar.lead.id, 1],
    ]);

    // Deleting the team keeps the day's total; its calls show as one entry too, with no link.
    const chips = await createTeamFixture(database.db, { name: "Chips" });
    await usageAt("+ interval '4 seconds'", {
      agentId: chips.lead.id,
      purpose: "chat",
      model: "gpt-4.1",
      inputTokens: 100_000,
    });
    expect(
      (await api.team.DELETE(request("DELETE", `/api/teams/${solar.team.id}`), teamParams(solar.team.id))).status,
    ).toBe(204);
    const report = await usageReport(database.db, { days: 1 });
    expect(report.totals.costUsd).toBeCloseTo(3.7, 10);
    expect(report.teams.map((team) => [team.teamName, team.teamId, team.figures.calls])).toEqual([
      ["Deleted teams", null, 3],
      ["Chips", chips.team.id, 1],
    ]);
    expect(report.teams[0]!.agents.map((agent) => [agent.agentName, agent.agentId])).toEqual([
      ["Removed agents", null],
    ]);
  });
});

describe("usage and price API", () => {
  it("GET /api/usage answers the report, 404 for an unknown team, 400 for bad days", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    await recordUsage(database.db, {
      agentId: lead.id,
      purpose: "work",
      model: "gpt-4.1",
      inputTokens: 10,
      outputTokens: 5,
    });
    const ok = await api.usage.GET(request("GET", `/api/usage?teamId=${team.id}&days=7`));
    expect(ok.status).toBe(200);
    const { report } = (await ok.json()) as { report: UsageReport };
    expect(report.series).toHaveLength(7);
    expect(report.totals.tokens).toBe(15);
    expect((await api.usage.GET(request("GET", "/api/usage"))).status).toBe(200);
    expect(await errorOf(await api.usage.GET(request("GET", `/api/usage?teamId=${randomUUID()}`)))).toMatchObject({
      status: 404,
      code: "not_found:team",
    });
    expect(await errorOf(await api.usage.GET(request("GET", "/api/usage?teamId=nope")))).toMatchObject({
      status: 404,
      code: "not_found:team",
    });
    for (const days of ["0", "-3", "2.5", "abc", "367"]) {
      expect(await errorOf(await api.usage.GET(request("GET", `/api/usage?days=${days}`))), days).toMatchObject({
        status: 400,
        message: expect.stringMatching(/days/),
      });
    }
    expect((await api.usage.GET(request("GET", "/api/usage?color=red"))).status).toBe(400);
  });

  it("PUT sets a price over the built-in one, GET lists both, DELETE goes back to the built-in one", async () => {
    const put = await api.price.PUT(
      request("PUT", "/x", { inputUsdPerMtok: 3, cachedInputUsdPerMtok: 1.5, outputUsdPerMtok: 12 }),
      modelParams("GPT-4o"),
    );
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({
      price: {
        model: "gpt-4o",
        builtIn: BUILT_IN_PRICES["gpt-4o"],
        custom: { inputUsdPerMtok: 3, cachedInputUsdPerMtok: 1.5, outputUsdPerMtok: 12 },
      },
    });
    const added = await api.price.PUT(
      request("PUT", "/x", { inputUsdPerMtok: 0.5, outputUsdPerMtok: 1.5 }),
      modelParams("openrouter/mistralai/mistral-large"),
    );
    expect(((await added.json()) as { price: unknown }).price).toMatchObject({
      model: "openrouter/mistralai/mistral-large",
      builtIn: null,
      custom: { cachedInputUsdPerMtok: null },
    });

    const { prices } = (await (await api.prices.GET()).json()) as { prices: { model: string; custom: unknown }[] };
    expect(prices.find((entry) => entry.model === "gpt-4o")!.custom).toMatchObject({ inputUsdPerMtok: 3 });
    expect(prices.find((entry) => entry.model === "gpt-5")!.custom).toBeNull();
    expect(prices.some((entry) => entry.model === "openrouter/mistralai/mistral-large")).toBe(true);

    expect((await api.price.DELETE(request("DELETE", "/x"), modelParams("gpt-4o"))).status).toBe(204);
    expect(await errorOf(await api.price.DELETE(request("DELETE", "/x"), modelParams("gpt-4o")))).toMatchObject({
      status: 404,
      code: "not_found:model_price",
    });
    const after = (await (await api.prices.GET()).json()) as { prices: { model: string; custom: unknown }[] };
    expect(after.prices.find((entry) => entry.model === "gpt-4o")!.custom).toBeNull();
  });

  it("PUT refuses bad prices and model ids with a 400 that says why", async () => {
    const cases: [string, string, unknown, RegExp][] = [
      ["a negative input price", "gpt-4o", { inputUsdPerMtok: -1, outputUsdPerMtok: 1 }, /cannot be negative/],
      [
        "a price finer than the column keeps",
        "gpt-4o",
        { inputUsdPerMtok: 0.00001, outputUsdPerMtok: 1 },
        /at most 4 decimals/,
      ],
      ["a price as a string", "gpt-4o", { inputUsdPerMtok: "2", outputUsdPerMtok: 1 }, /must be a number/],
      ["no output price", "gpt-4o", { inputUsdPerMtok: 2 }, /outputUsdPerMtok/],
      ["a huge price", "gpt-4o", { inputUsdPerMtok: 1e12, outputUsdPerMtok: 1 }, /at most/],
      ["an unknown field", "gpt-4o", { inputUsdPerMtok: 1, outputUsdPerMtok: 1, currency: "EUR" }, /currency/],
      ["a space in the id", "gpt 4o", { inputUsdPerMtok: 1, outputUsdPerMtok: 1 }, /not a model id/],
      ["an empty segment", "openai//gpt-4o", { inputUsdPerMtok: 1, outputUsdPerMtok: 1 }, /not a model id/],
      ["a 201-character id", "m".repeat(201), { inputUsdPerMtok: 1, outputUsdPerMtok: 1 }, /not a model id/],
      ["SQL as the id", "'; drop table usage; --", { inputUsdPerMtok: 1, outputUsdPerMtok: 1 }, /not a model id/],
    ];
    for (const [what, model, body, message] of cases) {
      const response = await api.price.PUT(request("PUT", "/x", body), modelParams(model));
      expect(await errorOf(response), what).toMatchObject({ status: 400, message: expect.stringMatching(message) });
    }
    const [{ count }] = (await database.db.execute<{ count: number }>(
      sql`select count(*)::int as count from model_prices`,
    )) as unknown as [{ count: number }];
    expect(count).toBe(0);
  });

  it("PATCH /api/teams/:id sets and clears the team's daily budgets, with 400s for zero, negative and non-numbers", async () => {
    const { team } = await createTeamFixture(database.db);
    const set = await api.team.PATCH(
      request("PATCH", "/x", { dailyTokenBudget: 250_000, dailyCostBudgetUsd: 2.5 }),
      teamParams(team.id),
    );
    expect(set.status).toBe(200);
    expect(await getTeam(database.db, team.id)).toMatchObject({ dailyTokenBudget: 250_000, dailyCostBudgetUsd: 2.5 });
    const bad: [unknown, RegExp][] = [
      [{ dailyTokenBudget: 0 }, /more than 0/],
      [{ dailyTokenBudget: -5 }, /more than 0/],
      [{ dailyTokenBudget: 1.5 }, /whole number/],
      [{ dailyTokenBudget: "1000" }, /whole number of tokens, or null/],
      [{ dailyTokenBudget: 3e9 }, /at most/],
      [{ dailyCostBudgetUsd: 0 }, /at least 0.01/],
      [{ dailyCostBudgetUsd: -1 }, /at least 0.01/],
      [{ dailyCostBudgetUsd: 0.00001 }, /at least 0.01/],
      [{ dailyCostBudgetUsd: "5" }, /US dollars, or null/],
    ];
    for (const [body, message] of bad) {
      expect(
        await errorOf(await api.team.PATCH(request("PATCH", "/x", body), teamParams(team.id))),
        JSON.stringify(body),
      ).toMatchObject({ status: 400, message: expect.stringMatching(message) });
    }
    expect(await getTeam(database.db, team.id)).toMatchObject({ dailyTokenBudget: 250_000, dailyCostBudgetUsd: 2.5 });
    const cleared = await api.team.PATCH(
      request("PATCH", "/x", { dailyTokenBudget: null, dailyCostBudgetUsd: null }),
      teamParams(team.id),
    );
    expect(cleared.status).toBe(200);
    expect(await getTeam(database.db, team.id)).toMatchObject({ dailyTokenBudget: null, dailyCostBudgetUsd: null });
    expect(
      await errorOf(await api.team.PATCH(request("PATCH", "/x", { dailyTokenBudget: 10 }), teamParams(randomUUID()))),
    ).toMatchObject({ status: 404, code: "not_found:team" });
  });
});
