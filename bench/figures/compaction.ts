import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult } from "@ai-sdk/provider";
import { MockLanguageModelV4 } from "ai/test";
import { runWorkSession } from "../../src/lib/engine/agent";
import { assignTask } from "../../src/lib/domain/tasks";
import { createSubordinate } from "../../src/lib/db/queries/agents";
import { createTeamWithLead } from "../../src/lib/db/queries/teams";
import { createTestEngine } from "../../tests/support/engine";
import { startFakeTavily } from "../../tests/support/fake-tavily";
import type { BenchDatabase } from "../lib/postgres";
import { formatCount } from "../lib/stats";
import type { FigureResult } from "../lib/table";

const COMPACTION_STEPS = 500;
const BUDGET = 24_000;
const UNLIMITED = Number.MAX_SAFE_INTEGER;

/** Tokens as the budget counts them (~4 characters each), of what the model was actually sent. */
const promptTokens = (options: LanguageModelV4CallOptions) => Math.ceil(JSON.stringify(options.prompt).length / 4);

const reply = (
  options: LanguageModelV4CallOptions,
  content: LanguageModelV4GenerateResult["content"],
  finish: "stop" | "tool-calls",
): LanguageModelV4GenerateResult => {
  const input = promptTokens(options);
  return {
    content,
    finishReason: { unified: finish, raw: undefined },
    usage: {
      inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: undefined },
      outputTokens: { total: 20, text: 20, reasoning: undefined },
    },
    warnings: [],
  };
};

/** The prompt tokens of each call, and how many summaries the model answered with a tool call instead. */
type Run = { workCalls: number[]; compactionCalls: number[]; toolCallsForSummary: number };

/**
 * One scripted session of 500 tool rounds (a web search each, ~2 kB of results), run
 * twice: with the default budget of 24k tokens, and with a budget so large compaction
 * never happens. Counts the prompt tokens of every call the model receives.
 */
async function scriptedSession(
  database: BenchDatabase,
  budget: number,
  search: { tavilyApiKey: string; tavilyBaseUrl: string },
): Promise<Run> {
  const run: Run = { workCalls: [], compactionCalls: [], toolCallsForSummary: 0 };
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      if (options.responseFormat?.type === "json")
        return reply(options, [{ type: "text", text: '{"items":[]}' }], "stop");
      if (!options.tools?.length) {
        run.compactionCalls.push(promptTokens(options));
        const text = `Tasks: the survey (in progress, round ${run.workCalls.length} of ${COMPACTION_STEPS}). Facts so far, with sources: ${"a finding with its URL; ".repeat(50)}`;
        return reply(options, [{ type: "text", text }], "stop");
      }
      // The summary asked as the log's next request, none of its tools callable: this model calls
      // one all the same (as models behind servers that ignore tool_choice do), and the engine
      // asks again without tools. Its tokens count as the compaction's.
      if (options.toolChoice?.type === "none") {
        run.compactionCalls.push(promptTokens(options));
        run.toolCallsForSummary += 1;
        const input = JSON.stringify({ query: "one more round instead" });
        return reply(
          options,
          [{ type: "tool-call", toolCallId: `instead_${run.toolCallsForSummary}`, toolName: "tavilySearch", input }],
          "tool-calls",
        );
      }
      const round = run.workCalls.length;
      run.workCalls.push(promptTokens(options));
      if (round >= COMPACTION_STEPS - 1) return reply(options, [{ type: "text", text: "Survey done." }], "stop");
      const input = JSON.stringify({ query: `survey round ${round}` });
      return reply(
        options,
        [{ type: "tool-call", toolCallId: `survey_${round}`, toolName: "tavilySearch", input }],
        "tool-calls",
      );
    },
  });
  const engine = await createTestEngine(database, {
    model,
    // Above the rounds: a session that reached the limit hands over to a new one after its turn.
    config: {
      contextTokenBudget: budget,
      maxStepsPerSession: COMPACTION_STEPS + 10,
      sessionTokenBudget: UNLIMITED,
      teamDailyTokenBudget: UNLIMITED,
      search,
    },
  });
  try {
    const { team } = await createTeamWithLead(database.db, { name: `Survey ${budget}`, mission: "Survey the field." });
    const agent = await createSubordinate(database.db, team.id, {
      name: "Surveyor",
      instructions: "Search, round after round.",
    });
    await assignTask(database.db, engine.jobs, {
      agentId: agent.id,
      source: "lead",
      title: "Survey the field in 500 searches",
    });
    const outcome = await runWorkSession(engine.deps, agent.id);
    if (outcome.status !== "completed" || run.workCalls.length !== COMPACTION_STEPS) {
      throw new Error(
        `The scripted session ended ${outcome.status} after ${run.workCalls.length} calls: ${outcome.error ?? ""}`,
      );
    }
  } finally {
    await engine.close();
  }
  return run;
}

export async function compactionFigure(database: BenchDatabase): Promise<FigureResult> {
  const tavily = await startFakeTavily(({ query }) => ({
    results: Array.from({ length: 5 }, (_, i) => ({
      title: `${query}: source ${i + 1}`,
      url: `https://example.com/${encodeURIComponent(query)}/${i}`,
      content: `What source ${i + 1} says about ${query}. ${"A sentence of the page, as the search API excerpts it. ".repeat(5)}`,
    })),
  }));
  try {
    const search = { tavilyApiKey: "tvly-bench", tavilyBaseUrl: tavily.url };
    const compacted = await scriptedSession(database, BUDGET, search);
    const unbounded = await scriptedSession(database, UNLIMITED, search);
    const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
    const compactedTotal = sum(compacted.workCalls) + sum(compacted.compactionCalls);
    const unboundedTotal = sum(unbounded.workCalls);
    const largest = Math.max(...compacted.workCalls, ...compacted.compactionCalls);
    const sorted = [...compacted.workCalls].sort((a, b) => a - b);
    const p = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
    const factor = unboundedTotal / compactedTotal;
    return {
      rows: [
        {
          figure: "compaction",
          measure: `prompt tokens per call, ${COMPACTION_STEPS} steps, budget ${formatCount(BUDGET)}`,
          p50: formatCount(p(0.5)),
          p95: formatCount(p(0.95)),
          ratio: `max ${formatCount(largest)} / ${formatCount(BUDGET)}`,
          goal: "every call ≤ budget",
          pass: largest <= BUDGET,
        },
        {
          figure: "compaction",
          measure: "input tokens in total, with vs without",
          p50: "",
          p95: "",
          ratio: `${(compactedTotal / 1e6).toFixed(2)}M vs ${(unboundedTotal / 1e6).toFixed(1)}M = ${factor.toFixed(1)}× fewer`,
          goal: "≥ 5× fewer",
          pass: factor >= 5,
        },
      ],
      notes: [
        `compaction: ${compacted.compactionCalls.length - compacted.toolCallsForSummary} compactions in the ${COMPACTION_STEPS}-step session, each asked first as the log's next request and answered with a tool call (${compacted.toolCallsForSummary} such answers), then without tools (all their prompts, ${formatCount(sum(compacted.compactionCalls))} tokens, are in the total); without compaction the last call carries ${formatCount(unbounded.workCalls.at(-1)!)} tokens. Tokens are counted as the budget counts them (characters / 4) on the prompt the model received.`,
      ],
    };
  } finally {
    await tavily.close();
  }
}
