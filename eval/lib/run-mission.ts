// One mission, end to end, as a person would run it: a team (a lead and two researchers) in a
// database of its own, a real worker process, the person's message in the lead's chat; then
// wait until a briefing is in the inbox and the team is idle, and read what it cost.
import { randomBytes } from "node:crypto";
import { and, asc, eq, inArray, isNull, sql } from "drizzle-orm";
import postgres from "postgres";
import { copyDatabase, withDatabase } from "../../scripts/lib/postgres-server";
import { startWorkerProcess, waitFor, type WorkerProcess } from "../../tests/support/worker-process";
import { streamChatReply } from "../../src/lib/engine/chat";
import { engineConfigFromEnv, engineDeps, type EngineDeps } from "../../src/lib/core/engine-config";
import { errorMarkerMessage, isFailedToolResult, splitMarker } from "../../src/lib/core/formats";
import { answerQuestionFromPerson } from "../../src/lib/domain/questions";
import { createTeam } from "../../src/lib/domain/teams";
import { createDatabase } from "../../src/lib/db/client";
import { createSubordinate } from "../../src/lib/db/queries/agents";
import { getForegroundConversation } from "../../src/lib/db/queries/conversations";
import { getLastMessage } from "../../src/lib/db/queries/messages";
import { taskStatusIn } from "../../src/lib/db/queries/tasks";
import { writeUnderTeam } from "../../src/lib/db/queries/teams";
import { keptPrice } from "../../src/lib/db/queries/usage";
import { agents, conversations, inboxItems, messages, questions, usage } from "../../src/lib/db/schema";
import { activeTaskStatuses } from "../../src/lib/db/task-statuses";
import { JobQueue } from "../../src/lib/jobs/job-queue";
import { loadPriceTable, spendOf } from "../../src/lib/usage/spend";
import type { Judgement } from "./judge";
import type { Mission } from "./missions";
import { scoreMission, type Briefing, type MissionScore } from "./score";
import { EVAL_TAVILY_KEY, type EvalWeb } from "./web";

/** How a team is broken on purpose, to show the eval can tell: the second researcher's reports lose their findings. */
export const BREAKS = ["drop-reports"] as const;
export type Break = (typeof BREAKS)[number];

const LEAD_NAME = "Mara";
const RESEARCHERS = ["Scout", "Rowan"] as const;

const RESEARCHER_INSTRUCTIONS = [
  "Research what your lead asks: search the web, read the pages that matter, record each durable fact with its source url,",
  "and report back with the findings, the numbers and the address of the page each comes from. Prefer primary sources",
  "(regulators, official statistics, the company itself) over forums and blogs; say when sources disagree.",
].join(" ");

/** What the eval answers when the team asks the person something. */
const PERSON_ANSWER =
  "Use your judgement: the questions in my message are what I need answered, with numbers and their sources.";

export type MissionRun = {
  mission: string;
  /**
   * briefed: a briefing arrived and the team went idle; no-briefing: the team went idle with
   * nothing open and no briefing (the lead answered in chat only, or its model failed);
   * timed-out: not within the time allowed; failed: the eval's run broke.
   */
  status: "briefed" | "no-briefing" | "timed-out" | "failed";
  error?: string;
  model: string;
  wallSeconds: number;
  briefings: Briefing[];
  score: MissionScore;
  usage: {
    calls: number;
    inputTokens: number;
    cachedTokens: number;
    outputTokens: number;
    costUsd: number;
    unpricedModels: string[];
  };
  toolCalls: number;
  toolErrors: number;
  /** Questions the team's agents asked: of the person (answered by the eval) or of their lead. */
  questionsAsked: number;
  /** The configured model's grade of the briefings (judge.ts); null with the offline model or --no-judge. */
  judge: Judgement | null;
};

export type MissionOptions = {
  /** A Postgres connection that may create databases, and the migrated database to copy for each mission. */
  adminUrl: string;
  template: string;
  web: EvalWeb;
  timeoutMs: number;
  break?: Break;
  leadInstructions?: string;
  researcherInstructions?: string;
  /** Added to the worker's environment: the model settings (OPENAI_BASE_URL …). */
  workerEnv: Record<string, string>;
  /** The same model for the lead's chat, which runs in this process as it runs in the web server. */
  chooseModel: EngineDeps["chooseModel"];
  /** Keep the mission's database afterwards, to look at the team in the app. */
  keepDatabase?: boolean;
  log: (line: string) => void;
};

export async function runMission(mission: Mission, options: MissionOptions): Promise<MissionRun> {
  const name = `cadre_eval_${mission.id.replace(/-/g, "_")}_${randomBytes(3).toString("hex")}`;
  await copyDatabase(options.adminUrl, options.template, name);
  const url = withDatabase(options.adminUrl, name);
  const database = createDatabase(url, { max: 4 });
  const { db } = database;
  const jobs = await JobQueue.start(url, "web", { quiet: true });
  const search = { tavilyApiKey: EVAL_TAVILY_KEY, tavilyBaseUrl: options.web.tavily.url };
  const deps = engineDeps(db, jobs, {
    config: { ...engineConfigFromEnv(), search },
    chooseModel: options.chooseModel,
    log: (message, error) => options.log(`[${mission.id}] ${message}${error ? `: ${String(error)}` : ""}`),
  });
  const model = deps.chooseModel().modelId;
  let worker: WorkerProcess | undefined;
  const started = performance.now();
  let status: MissionRun["status"] = "briefed";
  let error: string | undefined;
  let teamId: string | undefined;
  try {
    // As the person does it on the Teams page: the team with its lead, then its researchers.
    const { team, lead } = await createTeam(deps, {
      name: mission.team,
      mission: mission.mission,
      leadName: LEAD_NAME,
      instructions: options.leadInstructions,
    });
    teamId = team.id;
    for (const researcher of RESEARCHERS)
      await writeUnderTeam(db, team.id, (tx) =>
        createSubordinate(tx, team.id, {
          name: researcher,
          instructions: options.researcherInstructions ?? RESEARCHER_INSTRUCTIONS,
        }),
      );
    if (options.break === "drop-reports") await dropReportsOf(database.sql, RESEARCHERS[1]);

    worker = startWorkerProcess({
      DATABASE_URL: url,
      TAVILY_API_KEY: EVAL_TAVILY_KEY,
      TAVILY_BASE_URL: options.web.tavily.url,
      ...options.workerEnv,
    });
    const running = worker;
    await waitFor(async () => running.output.join("").includes("[worker] ready") || running.child.exitCode !== null, {
      timeoutMs: 60_000,
      what: "the worker to start",
    });
    if (running.child.exitCode !== null) throw new Error(`The worker exited at start:\n${running.output.join("")}`);

    const startedWork = performance.now();
    // The person's message in the lead's chat, the reply read to its end as the page does.
    await (await streamChatReply(deps, lead.id, mission.message, new AbortController().signal)).text();
    status = await untilBriefedAndIdle(db, jobs, team.id, startedWork + options.timeoutMs);
    // A chat reply that failed says so in the chat, as the person would read it.
    const reply = await getLastMessage(db, (await getForegroundConversation(db, lead.id)).id);
    const failure = reply?.role === "assistant" ? errorMarkerMessage(splitMarker(reply.content)?.marker ?? "") : null;
    if (failure) error = `the lead's chat reply failed: ${failure}`;
  } catch (caught) {
    status = "failed";
    error = caught instanceof Error ? caught.message : String(caught);
    options.log(`[${mission.id}] failed: ${error}`);
  } finally {
    await worker?.stop("SIGTERM");
  }
  const wallSeconds = (performance.now() - started) / 1000;
  try {
    const briefings = teamId ? await briefingsOf(db, teamId) : [];
    return {
      mission: mission.id,
      status,
      ...(error ? { error } : {}),
      model,
      wallSeconds: Math.round(wallSeconds * 10) / 10,
      briefings,
      score: scoreMission(mission, briefings),
      usage: teamId ? await usageOf(db, teamId) : emptyUsage(),
      ...(teamId ? await toolCallsOf(db, teamId) : { toolCalls: 0, toolErrors: 0 }),
      questionsAsked: teamId ? await questionsOf(db, teamId) : 0,
      judge: null,
    };
  } finally {
    await jobs.stop({ graceful: false, timeoutMs: 1000 }).catch(() => {});
    await database.close().catch(() => {});
    if (options.keepDatabase) options.log(`[${mission.id}] kept its database: ${url}`);
    else await dropDatabase(options.adminUrl, name);
  }
}

/**
 * Done when a briefing is in the inbox and nothing runs, is queued or is pending, twice in a
 * row (a report that wakes the lead lands between two looks at most once); or when nothing
 * has happened for a second with no task open and no briefing: nobody is working on it.
 * Questions to the person are answered on the way, as a person would.
 */
async function untilBriefedAndIdle(
  db: ReturnType<typeof createDatabase>["db"],
  jobs: JobQueue,
  teamId: string,
  deadline: number,
): Promise<"briefed" | "no-briefing" | "timed-out"> {
  let quietLooks = 0;
  let idleLooks = 0;
  while (performance.now() < deadline) {
    await answerOpenQuestions(db, jobs, teamId);
    const [row] = await db.execute<{ busy: number; open: number; briefings: number }>(sql`
      select (select count(*) from work_sessions s join agents a on a.id = s.agent_id
               where a.team_id = ${teamId} and s.status = 'running')
           + (select count(*) from pgboss.job where name = 'agent-wake' and state in ('created', 'retry', 'active'))
           + (select count(*) from agent_inputs i join agents a on a.id = i.agent_id where a.team_id = ${teamId})
           + (select count(*) from tasks t join agents a on a.id = t.agent_id
               where a.team_id = ${teamId} and ${taskStatusIn(sql`t.status`, ["pending"])}) as busy,
             (select count(*) from tasks t join agents a on a.id = t.agent_id
               where a.team_id = ${teamId} and ${taskStatusIn(sql`t.status`, activeTaskStatuses)}) as open,
             (select count(*) from inbox_items where team_id = ${teamId} and type = 'briefing') as briefings`);
    const idle = Number(row?.busy ?? 1) === 0;
    const briefed = Number(row?.briefings ?? 0) > 0;
    quietLooks = idle && briefed ? quietLooks + 1 : 0;
    idleLooks = idle && !briefed && Number(row?.open ?? 1) === 0 ? idleLooks + 1 : 0;
    if (quietLooks >= 2) return "briefed";
    if (idleLooks >= 4) return "no-briefing";
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return "timed-out";
}

async function answerOpenQuestions(db: ReturnType<typeof createDatabase>["db"], jobs: JobQueue, teamId: string) {
  const open = await db
    .select({ id: questions.id })
    .from(questions)
    .innerJoin(agents, eq(agents.id, questions.agentId))
    .where(and(eq(agents.teamId, teamId), eq(questions.status, "open"), isNull(questions.recipientAgentId)));
  for (const question of open) await answerQuestionFromPerson(db, jobs, question.id, PERSON_ANSWER);
}

/**
 * The broken team: a trigger in its database keeps the researcher's reports but empties them
 * on their way to the lead, as a lost message would. The lead still hears that the work ended
 * (the engine's flow is unchanged); it only never learns what was found.
 */
async function dropReportsOf(sqlClient: postgres.Sql, researcher: string): Promise<void> {
  const prefix = `Subordinate ${researcher} reports (task id: `;
  await sqlClient.unsafe(`
    create function eval_drop_reports() returns trigger language plpgsql as $$
    begin
      if starts_with(new.content, ${literal(prefix)}) then
        new.content := substring(new.content from '^.*?\\(task id: [0-9a-f-]+\\): ') || '(this report was lost on its way to you)';
      end if;
      return new;
    end $$;
    create trigger eval_drop_reports before insert on agent_inputs for each row execute function eval_drop_reports();`);
}

function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

async function briefingsOf(db: ReturnType<typeof createDatabase>["db"], teamId: string): Promise<Briefing[]> {
  return db
    .select({ title: inboxItems.title, summary: inboxItems.summary, content: inboxItems.content })
    .from(inboxItems)
    .where(and(eq(inboxItems.teamId, teamId), eq(inboxItems.type, "briefing")))
    .orderBy(asc(inboxItems.createdAt))
    .then((rows) => rows.map((row) => ({ title: row.title, summary: row.summary ?? "", content: row.content ?? "" })));
}

function emptyUsage(): MissionRun["usage"] {
  return { calls: 0, inputTokens: 0, cachedTokens: 0, outputTokens: 0, costUsd: 0, unpricedModels: [] };
}

/** Every model call of the team (chat, work, compaction, extraction, briefing), priced as the Usage page prices it. */
async function usageOf(db: ReturnType<typeof createDatabase>["db"], teamId: string): Promise<MissionRun["usage"]> {
  const rows = await db
    .select({
      model: usage.model,
      input: usage.inputUsdPerMtok,
      cached: usage.cachedInputUsdPerMtok,
      output: usage.outputUsdPerMtok,
      calls: sql<number>`count(*)::int`,
      estimatedCalls: sql<number>`(count(*) filter (where ${usage.estimated}))::int`,
      inputTokens: sql<string>`coalesce(sum(${usage.inputTokens}), 0)::bigint`,
      outputTokens: sql<string>`coalesce(sum(${usage.outputTokens}), 0)::bigint`,
      cachedTokens: sql<string>`coalesce(sum(${usage.cachedTokens}), 0)::bigint`,
    })
    .from(usage)
    .where(eq(usage.teamId, teamId))
    .groupBy(usage.model, usage.inputUsdPerMtok, usage.cachedInputUsdPerMtok, usage.outputUsdPerMtok);
  const spend = spendOf(
    rows.map((row) => ({
      model: row.model,
      price: keptPrice(row.input, row.cached, row.output),
      calls: Number(row.calls),
      estimatedCalls: Number(row.estimatedCalls),
      inputTokens: Number(row.inputTokens),
      outputTokens: Number(row.outputTokens),
      cachedTokens: Number(row.cachedTokens),
    })),
    await loadPriceTable(db),
  );
  return {
    calls: spend.calls,
    inputTokens: spend.inputTokens,
    cachedTokens: spend.cachedTokens,
    outputTokens: spend.tokens - spend.inputTokens,
    costUsd: spend.costUsd,
    unpricedModels: spend.unpricedModels,
  };
}

/** A search or a page read that failed is an error the agent had to work around, as much as a call that threw. */
const SEARCH_FAILED = /^(?:Web search failed|Reading \S+ (?:failed|was refused))/;

async function toolCallsOf(
  db: ReturnType<typeof createDatabase>["db"],
  teamId: string,
): Promise<{ toolCalls: number; toolErrors: number }> {
  const results = await db
    .select({ content: messages.content })
    .from(messages)
    .innerJoin(conversations, eq(conversations.id, messages.conversationId))
    .where(
      and(
        eq(messages.role, "tool"),
        inArray(conversations.agentId, db.select({ id: agents.id }).from(agents).where(eq(agents.teamId, teamId))),
      ),
    );
  return {
    toolCalls: results.length,
    toolErrors: results.filter((row) => isFailedToolResult(row.content) || SEARCH_FAILED.test(row.content)).length,
  };
}

async function questionsOf(db: ReturnType<typeof createDatabase>["db"], teamId: string): Promise<number> {
  const [row] = await db
    .select({ count: sql<number>`count(*)::int` })
    .from(questions)
    .innerJoin(agents, eq(agents.id, questions.agentId))
    .where(eq(agents.teamId, teamId));
  return Number(row?.count ?? 0);
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
  } finally {
    await admin.end({ timeout: 5 });
  }
}
