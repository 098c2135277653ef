// Caching visible (issue 24, item 2): a lead's work session through the real provider path
// (@ai-sdk/openai over Chat Completions) against a local server that applies OpenAI's prompt
// cache rule and reports `prompt_tokens_details.cached_tokens` as OpenAI does. Each step of
// the session sends the conversation again, longer; the usage rows must hold the cached tokens
// the server reported, call by call, and the report, the trace, the work log and the API must
// say what share of input was cached and what that saved at the model's price.
import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runWorkSession } from "@/lib/engine/agent";
import { assignTask } from "@/lib/domain/tasks";
import { usage } from "@/lib/db/schema";
import { chooseModel } from "@/lib/llm/provider";
import { getSessionTrace, type SessionTrace } from "@/lib/views/session-trace";
import { BUILT_IN_PRICES } from "@/lib/usage/prices";
import { usageReport, type UsageReport } from "@/lib/usage/report";
import { getWorkLogPage } from "@/lib/views/work-log-page";
import { startFakeOpenAI, type FakeChatRequest, type FakeOpenAI } from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { createTestEngine, type TestEngine } from "../support/engine";
import { PromptCache, type CacheMeasure } from "../support/prompt-cache";
import { toolNames } from "../support/team-play";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

/** The prompt cache, keeping what it told the client about each request, in arrival order. */
class ReportingPromptCache extends PromptCache {
  readonly reported: CacheMeasure[] = [];
  override measure(request: Parameters<PromptCache["measure"]>[0]): CacheMeasure {
    const measure = super.measure(request);
    this.reported.push(measure);
    return measure;
  }
}

/** Steps of the lead's turn that look at the team before it answers: each one resends the conversation. */
const LOOKS = 4;
const MODEL = "gpt-4.1";

let database: TestDatabase;
let engine: TestEngine;
let openai: FakeOpenAI;
const cache = new ReportingPromptCache();

/** The lead looks at its team a few times, then answers; extraction finds nothing; the briefing decision sends none. */
function lead(request: FakeChatRequest) {
  if (request.response_format) return { text: '{"items":[]}' };
  const tools = toolNames(request);
  if (!tools.includes("getTeamStatus")) return { text: "Nothing to brief yet." };
  const looked = request.messages.filter((message) => message.role === "tool").length;
  return looked < LOOKS
    ? { toolCalls: [{ name: "getTeamStatus", arguments: {} }] }
    : { text: "The team is ready to start." };
}

beforeAll(async () => {
  database = await createWebTestDatabase();
  openai = await startFakeOpenAI(lead, { promptCache: cache });
  engine = await createTestEngine(database, { config: { modelTimeoutMs: 8_000 } });
  // The real provider path, named as a priced model: gpt-4.1 ($2 input, $0.50 cached per million).
  engine.deps.chooseModel = (override) =>
    chooseModel(override, { OPENAI_BASE_URL: openai.url, OPENAI_API_KEY: undefined, LLM_MODEL: MODEL });
});
afterAll(async () => {
  await engine?.close();
  await openai?.close();
  await closeWebTestDatabase(database);
});

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

describe("the provider's prompt cache, seen in usage", () => {
  it("stores the cached tokens the server reported, and the report, trace, work log and API show the share cached and what it saved", {
    timeout: 60_000,
  }, async () => {
    const { team, lead: agent } = await createTeamFixture(database.db, { name: "Cache desk" });
    await assignTask(database.db, engine.jobs, { agentId: agent.id, source: "user", title: "Get the team ready" });
    const outcome = await runWorkSession(engine.deps, agent.id);
    expect(outcome.status).toBe("completed");

    // One usage row per request, in order, each with the tokens the server reported for it.
    const rows = await database.db
      .select()
      .from(usage)
      .where(eq(usage.agentId, agent.id))
      .orderBy(asc(usage.createdAt), asc(usage.id));
    expect(rows.map((row) => [row.model, row.inputTokens, row.cachedTokens])).toEqual(
      cache.reported.map((measure) => [MODEL, measure.promptTokens, measure.cachedTokens]),
    );
    // The work steps repeat the conversation, so from the second on most of their input was cached.
    const work = rows.filter((row) => row.purpose === "work");
    expect(work.length).toBe(LOOKS + 1);
    expect(work[0]!.cachedTokens).toBe(0);
    for (const row of work.slice(1))
      expect(row.cachedTokens / row.inputTokens, `${row.cachedTokens} of ${row.inputTokens}`).toBeGreaterThan(0.5);

    const input = sum(rows.map((row) => row.inputTokens));
    const cached = sum(rows.map((row) => row.cachedTokens));
    const price = BUILT_IN_PRICES[MODEL]!;
    const saved = (cached * (price.inputUsdPerMtok - price.cachedInputUsdPerMtok!)) / 1_000_000;
    expect(cached).toBeGreaterThan(0);

    // The report: per team, agent and day.
    const report = await usageReport(database.db, { days: 1, teamId: team.id });
    const figures = report.teams[0]!.figures;
    expect(figures).toMatchObject({ inputTokens: input, cachedTokens: cached });
    expect(figures.cachedShare).toBeCloseTo(cached / input, 12);
    expect(figures.savedUsd).toBeCloseTo(saved, 12);
    expect(report.teams[0]!.agents[0]!.figures.savedUsd).toBeCloseTo(saved, 12);
    expect(report.series.at(-1)!).toMatchObject({ inputTokens: input, cachedTokens: cached });
    expect(report.series.at(-1)!.savedUsd).toBeCloseTo(saved, 12);

    // The trace: every model call with its cached tokens, and the session's share and saving.
    const trace = await getSessionTrace(database.db, outcome.sessionId!);
    const calls = trace.spans.flatMap((span) => (span.type === "model" ? [span] : []));
    expect(calls.map((span) => span.cachedTokens)).toEqual(rows.map((row) => row.cachedTokens));
    expect(calls.at(-1)!.cachedShare).toBeCloseTo(rows.at(-1)!.cachedTokens / rows.at(-1)!.inputTokens, 12);
    expect(trace.totals).toMatchObject({ inputTokens: input, cachedTokens: cached });
    expect(trace.totals.cachedShare).toBeCloseTo(cached / input, 12);
    expect(trace.totals.savedUsd).toBeCloseTo(saved, 12);

    // The work log: each step's model call and the session carry their cached tokens.
    const log = await getWorkLogPage(database.db, agent.id);
    expect(
      Object.values(log.steps)
        .map((step) => step.cachedTokens)
        .sort(),
    ).toEqual(
      rows
        .filter((row) => row.purpose === "work" || row.purpose === "briefing")
        .map((row) => row.cachedTokens)
        .sort(),
    );
    expect(log.sessions[outcome.sessionId!]!.cachedTokens).toBe(cached);

    // The API answers the same figures.
    const api = await import("@/app/api/usage/route");
    const answer = (await (
      await api.GET(new Request(`http://localhost:3000/api/usage?teamId=${team.id}&days=1`))
    ).json()) as { report: UsageReport };
    expect(answer.report.totals).toMatchObject({
      cachedTokens: cached,
      cachedShare: figures.cachedShare,
      savedUsd: figures.savedUsd,
    });
    expect(answer.report.rows[0]!.figures).toMatchObject({ cachedTokens: cached, cachedShare: figures.cachedShare });
    const sessionApi = await import("@/app/api/sessions/[sessionId]/route");
    const traced = (await (
      await sessionApi.GET(new Request("http://localhost:3000/x"), {
        params: Promise.resolve({ sessionId: outcome.sessionId! }),
      })
    ).json()) as { trace: SessionTrace };
    expect(traced.trace.totals).toMatchObject({
      cachedTokens: cached,
      cachedShare: trace.totals.cachedShare,
      savedUsd: trace.totals.savedUsd,
    });
  });
});
