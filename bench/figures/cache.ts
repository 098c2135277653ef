import { and, eq } from "drizzle-orm";
import { parseLogInput } from "../../src/lib/core/formats";
import { runScheduledLeadCheckIn } from "../../src/lib/domain/schedules";
import { assignTask } from "../../src/lib/domain/tasks";
import { plural } from "../../src/lib/util/plural";
import { tasks, type Usage } from "../../src/lib/db/schema";
import type { JobQueue } from "../../src/lib/jobs/job-queue";
import { separatedMessages } from "../../tests/support/fake-openai";
import { waitFor } from "../../tests/support/worker-process";
import type { MeasuredCall } from "../lib/model-server";
import type { BenchDatabase } from "../lib/postgres";
import { describeDivergences, measurePrefixes, type PrefixReport } from "../lib/prompt-prefix";
import {
  chatScript,
  chatWith,
  createResearchTeam,
  leadScript,
  longResearchScript,
  researcherScript,
  researchRequest,
  searchAndRead,
  SIZES,
  startResearchRig,
  type ChatPlan,
  type ResearchRig,
  untilCompleted,
  briefingsOf,
} from "../lib/research";
import type { FigureResult, Row } from "../lib/table";
import { byPurpose, formatTokens, ofAgent, percent, usageReader } from "../lib/usage-rows";

export type CacheSizes = { rounds: number; leadTasks: number; chatMessages: number };

const TOPICS = [
  "solar module prices in Europe",
  "polysilicon supply from China",
  "US tariffs on imported cells",
  "perovskite cells nearing production",
  "India's module manufacturing push",
  "grid battery storage prices",
  "residential solar demand in Germany",
  "inverter makers' margins",
  "utility-scale auctions in Brazil",
  "recycling of end-of-life panels",
];

const CHAT_QUESTIONS = [
  "Morning! What are you keeping an eye on this week?",
  "What did module prices do last month?",
  "Why did they move that way?",
  "Find me the latest on polysilicon supply and read the best source.",
  "Is that a one-off or a trend?",
  "How is the team doing: anything still open?",
  "What do we already know about tariffs?",
  "Which of those facts would you double-check?",
  "Any news on perovskite production lines?",
  "Thanks: sum up in three lines what I should remember.",
];

/** The tools each chat reply uses before answering: some none, some a search, one a search and a read. */
const CHAT_PLAN: ChatPlan = (n) => {
  switch (n) {
    case 2:
      return [{ name: "tavilySearch", args: () => ({ query: "solar module prices last month" }) }];
    case 4:
      return searchAndRead("polysilicon supply latest");
    case 6:
      return [{ name: "getTeamStatus", args: () => ({}) }];
    case 7:
      return [{ name: "searchKnowledge", args: () => ({ query: "tariffs" }) }];
    case 9:
      return [{ name: "tavilySearch", args: () => ({ query: "perovskite production line news" }) }];
    default:
      return [];
  }
};

type Case = {
  measure: string;
  /** The least share of input tokens to be cached; null: no goal. */
  goal: number | null;
  /** The usage rows of the agent the case is about (every purpose): what it was billed. */
  rows: Usage[];
  /** The model calls of its conversations (work log, chat), as the server received them. */
  calls: MeasuredCall[];
  /** Its conversation, in words: "work log", "chat". */
  conversation: string;
  /** What else the log line should say about the case. */
  detail?: string;
};

type Measured = Case & { prefix: PrefixReport; input: number; cached: number; limit: number; split: string };

function measure(c: Case, log: (line: string) => void, listDivergences: boolean): Measured {
  const prefix = measurePrefixes(c.calls);
  const input = c.rows.reduce((sum, row) => sum + row.inputTokens, 0);
  const cached = c.rows.reduce((sum, row) => sum + row.cachedTokens, 0);
  // Side calls (compaction, extraction) are conversations of their own: their best is what they got.
  const side = c.rows.filter((row) => row.purpose !== "work" && row.purpose !== "briefing" && row.purpose !== "chat");
  const limit = prefix.limitTokens + side.reduce((sum, row) => sum + row.cachedTokens, 0);
  const conversationRows = c.rows.filter((row) => !side.includes(row));
  const conversationInput = conversationRows.reduce((sum, row) => sum + row.inputTokens, 0);
  if (conversationInput !== prefix.promptTokens) {
    log(
      `cache: ${c.measure}: the usage rows count ${conversationInput} input tokens of its conversations, the model server ${prefix.promptTokens}: the limit is off by the difference`,
    );
  }
  const sideInput = side.reduce((sum, row) => sum + row.inputTokens, 0);
  const sideCached = side.reduce((sum, row) => sum + row.cachedTokens, 0);
  const split =
    `its ${c.conversation} ${percent(prefix.cachedTokens, prefix.promptTokens)} of ${formatTokens(prefix.promptTokens)} (limit ${percent(prefix.limitTokens, prefix.promptTokens)})` +
    (side.length
      ? `, its compaction and extraction calls ${percent(sideCached, sideInput)} of ${formatTokens(sideInput)}`
      : "");
  log(
    `cache: ${c.measure}: ${c.rows.length} calls (${byPurpose(c.rows)}), ${formatTokens(input)} in, ${percent(cached, input)} cached, limit ${percent(limit, input)}; ` +
      `${split}; ${c.detail ? `${c.detail}; ` : ""}${describeDivergences(prefix.divergences)}`,
  );
  if (listDivergences)
    for (const d of prefix.divergences)
      log(`  ${d.conversation}, request ${d.request}${d.afterCompaction ? " (after compaction)" : ""}: ${d.where}`);
  return { ...c, prefix, input, cached, limit, split: `${c.measure}: ${split}` };
}

function row(m: Measured): Row {
  const share = m.input ? m.cached / m.input : 0;
  const divergences = m.prefix.divergences.filter((divergence) => !divergence.afterCompaction).length;
  return {
    figure: "cache",
    measure: m.measure,
    p50: "",
    p95: "",
    ratio: `${percent(m.cached, m.input)} of ${formatTokens(m.input)} in, ${m.rows.length} calls; limit ${percent(m.limit, m.input)} (${percent(m.cached, m.limit)} of it); ${divergences} divergence${divergences === 1 ? "" : "s"}`,
    goal: m.goal === null ? "" : `≥ ${(m.goal * 100).toFixed(0)}% cached`,
    pass: m.goal === null ? null : share >= m.goal,
  };
}

/**
 * The share of input tokens that repeat the start of an earlier request (OpenAI's prompt cache
 * rule), against the most that could: every request of a conversation extending the one before
 * it. Three cases on a worker process, one after another: a researcher's long session, a lead
 * across many tasks with reports arriving (some mid-turn), and a chat.
 */
export async function cacheFigure(
  database: BenchDatabase,
  jobs: JobQueue,
  sizes: CacheSizes,
  log: (line: string) => void,
  /** Log every divergence, not only the first of each case. */
  listDivergences = false,
): Promise<FigureResult> {
  // The long session's tool rounds are one turn: the worker allows them (default 25).
  const maxSteps = sizes.rounds + 10;
  const rig = await startResearchRig(database, jobs, { MAX_STEPS_PER_SESSION: String(maxSteps) });
  try {
    const cases = [
      measure(await longSession(database, jobs, rig, sizes.rounds), log, listDivergences),
      measure(await leadAcrossTasks(database, jobs, rig, sizes.leadTasks), log, listDivergences),
      measure(await chat(database, rig, sizes.chatMessages), log, listDivergences),
    ];
    const overall = {
      input: cases.reduce((sum, c) => sum + c.input, 0),
      cached: cases.reduce((sum, c) => sum + c.cached, 0),
      limit: cases.reduce((sum, c) => sum + c.limit, 0),
      calls: cases.reduce((sum, c) => sum + c.rows.length, 0),
      divergences: cases.reduce(
        (sum, c) => sum + c.prefix.divergences.filter((divergence) => !divergence.afterCompaction).length,
        0,
      ),
    };
    const compactions = cases.reduce((sum, c) => sum + c.rows.filter((r) => r.purpose === "compaction").length, 0);
    return {
      rows: [
        ...cases.map(row),
        {
          figure: "cache",
          measure: "overall (the three above)",
          p50: "",
          p95: "",
          ratio: `${percent(overall.cached, overall.input)} of ${formatTokens(overall.input)} in, ${overall.calls} calls; limit ${percent(overall.limit, overall.input)} (${percent(overall.cached, overall.limit)} of it); ${overall.divergences} divergences`,
          goal: "≥ 90% cached",
          pass: overall.input > 0 && overall.cached / overall.input >= 0.9,
        },
      ],
      notes: [
        `cache: cached share = cached_tokens / input_tokens of the usage rows of the case's agent (every purpose: its work, briefing decisions, compaction, knowledge extraction), as the fake model reports them by OpenAI's prefix rule (tests/support/prompt-cache.ts). ` +
          `Limit: the share cached if every request of a conversation (an agent's work log with its briefing decisions, or its chat) extended the one before it byte for byte: all of the previous request in whole 128-token blocks from 1,024 tokens on; a conversation's first request nothing; the first request after a compaction only what precedes the summary; compaction and extraction calls, conversations of their own, what they got. ` +
          `A divergence: a request that does not extend the previous one of its conversation (requests after a compaction are counted apart, they start anew by design); the log lines name the first one. ` +
          `One worker, default settings but MAX_STEPS_PER_SESSION=${maxSteps} (so ${sizes.rounds} rounds fit one turn); CONTEXT_TOKEN_BUDGET is the default 24,000, so long logs compact (${compactions} compaction${compactions === 1 ? "" : "s"} here). Sizes as in the cost figure (a search ~4.5 KB, a page 6–10 KB, a report ${SIZES.reportChars / 1000} KB, a briefing ~2 KB, a summary ${(SIZES.summaryChars / 1000).toFixed(1)} KB).`,
        `cache, by conversation: ${cases.map((c) => c.split).join("; ")}.`,
        `cache, the cases: (1) a researcher given one task by its lead works ${sizes.rounds} tool rounds (search, read, record, search, read, …) and reports; (2) a lead given ${sizes.leadTasks} research requests at once delegates each to two researchers, takes a look of its own (one search, answered once the quicker researcher's report is in, so it lands mid-turn), and briefs when both reports are in; then its schedule checks in with nothing to do (a session ending in the briefing decision); (3) ${sizes.chatMessages} messages to a lead in its chat, ${[...Array(sizes.chatMessages).keys()].filter((i) => CHAT_PLAN(i + 1).length > 0).length} of the replies with tool calls (a search, a search and a read, the team's status, the team's knowledge).`,
      ],
    };
  } finally {
    await rig.close();
  }
}

async function longSession(database: BenchDatabase, jobs: JobQueue, rig: ResearchRig, rounds: number): Promise<Case> {
  const { lead, subordinates } = await createResearchTeam(database.db, {
    team: "Cache: long session",
    lead: "Morgan",
    subordinates: ["Digger"],
  });
  const digger = subordinates[0]!;
  rig.model.script(lead.name, leadScript({ db: database.db, lead, subordinates }));
  rig.model.script(digger.name, longResearchScript(rounds));
  const from = rig.model.fake.requests.length;
  const task = await assignTask(database.db, jobs, {
    agentId: lead.id,
    source: "user",
    ...researchRequest("solar module prices, in depth"),
  });
  await untilCompleted(database, rig, [task.id], "the long session's task");
  return {
    measure: `a researcher: 1 task, ${rounds} tool rounds`,
    goal: 0.9,
    conversation: "work log",
    rows: await usageReader(database)(ofAgent(digger.id)),
    calls: rig.model.callsSince(from).filter((call) => call.agent === digger.name),
  };
}

async function leadAcrossTasks(
  database: BenchDatabase,
  jobs: JobQueue,
  rig: ResearchRig,
  count: number,
): Promise<Case> {
  const { team, lead, subordinates } = await createResearchTeam(database.db, {
    team: "Cache: lead",
    lead: "Quinn",
    subordinates: ["Quick", "Thorough"],
  });
  // The quicker researcher reports first, often while the lead's turn is still under way.
  rig.model.script(subordinates[0]!.name, researcherScript({ quick: true }));
  rig.model.script(subordinates[1]!.name, researcherScript());
  rig.model.script(
    lead.name,
    leadScript({
      db: database.db,
      lead,
      subordinates,
      ownLook: async (leadTaskId) => {
        await waitFor(
          async () =>
            (
              await database.db
                .select({ id: tasks.id })
                .from(tasks)
                .where(and(eq(tasks.parentTaskId, leadTaskId), eq(tasks.status, "completed")))
            ).length > 0,
          { timeoutMs: 30_000, what: "a researcher's report" },
        ).catch(() => {}); // a late report arrives after the turn instead: still a case worth measuring
      },
    }),
  );
  const from = rig.model.fake.requests.length;
  const given = [];
  for (const topic of Array.from({ length: count }, (_, i) => TOPICS[i % TOPICS.length]!)) {
    given.push(await assignTask(database.db, jobs, { agentId: lead.id, source: "user", ...researchRequest(topic) }));
  }
  await untilCompleted(
    database,
    rig,
    given.map((task) => task.id),
    "the lead's tasks",
  );
  const briefings = await briefingsOf(database, team.id);
  if (briefings !== count) throw new Error(`The lead briefed ${briefings} times on ${count} tasks.`);
  // Then its schedule checks in, with nothing left to do: a session that ends in the briefing decision.
  if ((await runScheduledLeadCheckIn(rig.deps, lead.id)) !== "started")
    throw new Error("The scheduled check-in did not start: the lead was not idle.");
  const [checkIn] = await database.db
    .select({ id: tasks.id })
    .from(tasks)
    .where(and(eq(tasks.agentId, lead.id), eq(tasks.source, "schedule")));
  await untilCompleted(database, rig, [checkIn!.id], "the lead's check-in");
  const calls = rig.model.callsSince(from).filter((call) => call.agent === lead.name);
  return {
    measure: `a lead: ${count} tasks, 2 researchers, then a check-in`,
    goal: 0.85,
    conversation: "work log",
    rows: await usageReader(database)(ofAgent(lead.id)),
    calls,
    detail: `${plural(reportsMidTurn(calls), "report")} arrived mid-turn`,
  };
}

/** Requests in which a report follows a tool result: it arrived while the turn was under way. */
function reportsMidTurn(calls: readonly MeasuredCall[]): number {
  return calls.filter(({ request }) => {
    const messages = separatedMessages(request.messages);
    const lastOther = messages.findLastIndex((message) => message.role !== "user");
    const arrived = messages.slice(lastOther + 1);
    return (
      messages[lastOther]?.role === "tool" &&
      arrived.some((message) => parseLogInput(String(message.content ?? ""))?.kind === "report")
    );
  }).length;
}

async function chat(database: BenchDatabase, rig: ResearchRig, count: number): Promise<Case> {
  const { lead, subordinates } = await createResearchTeam(database.db, {
    team: "Cache: chat",
    lead: "Cleo",
    subordinates: ["Finder"],
  });
  rig.model.script(lead.name, chatScript(CHAT_PLAN));
  rig.model.script(subordinates[0]!.name, researcherScript());
  const from = rig.model.fake.requests.length;
  for (const question of CHAT_QUESTIONS.slice(0, count)) await chatWith(rig.deps, lead.id, question);
  const calls = rig.model.callsSince(from).filter((call) => call.agent === lead.name);
  const read = usageReader(database);
  const rows: Usage[] = [];
  // The last reply's usage row is written as its stream ends: wait for it rather than race it.
  await waitFor(
    async () => {
      rows.push(...(await read(ofAgent(lead.id))));
      return rows.length >= calls.length;
    },
    { timeoutMs: 10_000, what: "the chat's usage rows" },
  );
  return { measure: `a chat: ${count} messages, some with tool calls`, goal: null, conversation: "chat", rows, calls };
}
