import { and, eq } from "drizzle-orm";
import { runScheduledLeadCheckIn } from "../../src/lib/domain/schedules";
import { assignTask } from "../../src/lib/domain/tasks";
import { tasks, type Usage } from "../../src/lib/db/schema";
import type { JobQueue } from "../../src/lib/jobs/job-queue";
import { waitFor } from "../../tests/support/worker-process";
import type { BenchDatabase } from "../lib/postgres";
import {
  briefingsOf,
  chatScript,
  chatWith,
  createResearchTeam,
  leadScript,
  researcherScript,
  researchRequest,
  SIZES,
  startResearchRig,
  untilCompleted,
  workAndChat,
} from "../lib/research";
import type { FigureResult, Row } from "../lib/table";
import {
  bill,
  byPurpose,
  formatTokens,
  formatUsd,
  LIST_PRICE,
  ofTeam,
  PRICED_AS,
  usageReader,
} from "../lib/usage-rows";

const CHAT_QUESTION = "Quick one: what did module prices in Europe do last month, and is it likely to last?";

/**
 * What one outcome costs the person, from the usage rows the engine writes (what a provider
 * bills), on a team run as users run it: a worker process, the model behind OpenAI's prompt
 * cache rule, a web whose answers are the size real ones are.
 *  1. a research briefing in the standard flow (the person asks the lead; the lead delegates to
 *     two researchers; each searches, reads a page, records a fact and reports; the lead briefs);
 *  2. the scheduled check-in of that team, idle now (the scheduler's own call);
 *  3. a chat reply with one web search.
 */
export async function costFigure(
  database: BenchDatabase,
  jobs: JobQueue,
  log: (line: string) => void,
): Promise<FigureResult> {
  const rig = await startResearchRig(database, jobs);
  try {
    const { team, lead, subordinates } = await createResearchTeam(database.db, {
      team: "Cost",
      lead: "Ada",
      subordinates: ["Scout", "Reader"],
    });
    const lookUp = [{ name: "tavilySearch", args: () => ({ query: "Europe solar module prices last month" }) }];
    rig.model.script(
      lead.name,
      workAndChat(
        leadScript({ db: database.db, lead, subordinates }),
        chatScript(() => lookUp),
      ),
    );
    for (const subordinate of subordinates) rig.model.script(subordinate.name, researcherScript());
    const newRows = usageReader(database);
    const research = await assignTask(database.db, jobs, {
      agentId: lead.id,
      source: "user",
      ...researchRequest("solar module prices in Europe"),
    });
    await untilCompleted(database, rig, [research.id], "the research briefing");
    if ((await briefingsOf(database, team.id)) !== 1)
      throw new Error("The research did not end in one briefing in the inbox.");
    const briefingRows = await newRows(ofTeam(team.id));

    if ((await runScheduledLeadCheckIn(rig.deps, lead.id)) !== "started")
      throw new Error("The scheduled check-in did not start: the lead was not idle.");
    const [checkIn] = await database.db
      .select()
      .from(tasks)
      .where(and(eq(tasks.agentId, lead.id), eq(tasks.source, "schedule")));
    await untilCompleted(database, rig, [checkIn!.id], "the scheduled check-in");
    const checkInRows = await newRows(ofTeam(team.id));

    const callsBefore = rig.model.fake.requests.length;
    await chatWith(rig.deps, lead.id, CHAT_QUESTION);
    const chatCalls = rig.model.callsSince(callsBefore).filter((call) => call.kind === "chat").length;
    // The reply's last usage row is written as its stream ends: wait for it rather than race it.
    const chatRows: Usage[] = [];
    await waitFor(
      async () => {
        chatRows.push(...(await newRows(ofTeam(team.id))));
        return chatRows.length >= chatCalls;
      },
      { timeoutMs: 10_000, what: "the chat reply's usage" },
    );

    const outcomes: [string, Usage[]][] = [
      ["one research briefing (lead + 2 researchers)", briefingRows],
      ["one scheduled check-in, team idle", checkInRows],
      ["one chat reply with a web search", chatRows],
    ];
    const rows: Row[] = outcomes.map(([measure, usageRows]) => {
      const total = bill(usageRows);
      log(
        `cost: ${measure}: ${total.calls} calls (${byPurpose(usageRows)}), in ${total.inputTokens} (${total.cachedTokens} cached), out ${total.outputTokens}, ${formatUsd(total.usd)} (${formatUsd(total.usdWithoutCache)} without the cache)`,
      );
      return {
        figure: "cost",
        measure,
        p50: "",
        p95: "",
        ratio: `${formatUsd(total.usd)} at ${PRICED_AS} list price; in ${formatTokens(total.inputTokens)} (${formatTokens(total.cachedTokens)} cached), out ${formatTokens(total.outputTokens)}; ${total.calls} calls`,
        goal: "",
        pass: null,
      };
    });
    const describe = ([measure, usageRows]: [string, Usage[]]) => {
      const total = bill(usageRows);
      return `${measure}: ${byPurpose(usageRows)}; ${formatTokens(total.inputTokens - total.cachedTokens)} uncached + ${formatTokens(total.cachedTokens)} cached in, ${formatTokens(total.outputTokens)} out; ${formatUsd(total.usdWithoutCache)} without the cache`;
    };
    return {
      rows,
      notes: [
        `cost: tokens from the usage rows the engine wrote (what the person is billed), priced at ${PRICED_AS}'s list price ($${LIST_PRICE.inputUsdPerMtok}/M in, $${LIST_PRICE.cachedInputUsdPerMtok}/M cached, $${LIST_PRICE.outputUsdPerMtok}/M out; src/lib/usage/prices.ts). One worker process with default settings; the fake model counts cached tokens by OpenAI's prefix rule (tests/support/prompt-cache.ts: 1,024-token minimum, 128-token blocks, 4 characters a token). Sizes: a search returns ${SIZES.searchResults} results of ${SIZES.searchExcerptChars} characters (the tool keeps 800 of each: ~4.5 KB), a page read is ${SIZES.pageChars[0] / 1000}–${SIZES.pageChars[1] / 1000} KB, a fact ${SIZES.factChars} characters, a researcher's report ${SIZES.reportChars / 1000} KB, the briefing ~${SIZES.briefingChars / 1000} KB, a chat answer ${SIZES.chatAnswerChars[0]}–${SIZES.chatAnswerChars[1]} characters; knowledge extraction finds nothing new.`,
        `cost, calls per outcome: ${outcomes.map(describe).join(". ")}. The check-in runs on the same team after the briefing (its log holds that work) and is started as the scheduler starts it (runScheduledLeadCheckIn); the lead looks at its team (getTeamStatus) and finds nothing to do. The chat reply is the first message of the lead's chat.`,
      ],
    };
  } finally {
    await rig.close();
  }
}
