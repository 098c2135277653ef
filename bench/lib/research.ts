// A research team as users run one, for the figures that count tokens (cost, cache): a web
// whose answers are the size real ones are, and scripts that play a lead and its researchers
// the way a model does in the standard flow (delegate, search, read, record, report, brief).
import { createHash } from "node:crypto";
import { and, eq, inArray } from "drizzle-orm";
import { streamChatReply } from "../../src/lib/engine/chat";
import { engineConfigFromEnv, engineDeps, type EngineDeps } from "../../src/lib/core/engine-config";
import { parseLogInput, type LogInput } from "../../src/lib/core/formats";
import { createSubordinate } from "../../src/lib/db/queries/agents";
import { createTeamWithLead } from "../../src/lib/db/queries/teams";
import type { Db } from "../../src/lib/db/client";
import { inboxItems, tasks, workSessions, type Agent, type Team } from "../../src/lib/db/schema";
import { isOpenTask } from "../../src/lib/db/task-statuses";
import type { JobQueue } from "../../src/lib/jobs/job-queue";
import { chooseModel } from "../../src/lib/llm/provider";
import type { FakeChatMessage, FakeChatRequest, FakeReply, FakeToolCall } from "../../tests/support/fake-openai";
import { startFakeTavily, type FakeTavily } from "../../tests/support/fake-tavily";
import { waitFor } from "../../tests/support/worker-process";
import { ModelServer, type AgentScript, type ModelCall } from "./model-server";
import type { BenchDatabase } from "./postgres";
import { Workers } from "./workers";

/** The sizes the web and the scripts answer with: what the figures' notes tell. */
export const SIZES = {
  /** Each search result's excerpt (the tool keeps 800 characters of it); five results a search. */
  searchExcerptChars: 900,
  searchResults: 5,
  /** A page read: between these, by its address. */
  pageChars: [6_000, 10_000] as const,
  reportChars: 1_500,
  briefingChars: 2_000,
  chatAnswerChars: [600, 1_200] as const,
  factChars: 240,
  /** What compaction answers: a dense summary of the log. */
  summaryChars: 2_400,
};

// ---------------------------------------------------------------------------------------------
// Text of a given size, the same for the same seed (so two runs send the same bytes).

const WORDS = (
  "market supply demand price cost module panel cell wafer silicon perovskite efficiency yield grid storage battery inverter " +
  "capacity install utility residential commercial tariff import export policy subsidy credit auction contract quarter annual " +
  "growth decline rise fall report analyst survey data source estimate forecast trend share leader vendor maker plant factory " +
  "line output shipment order backlog inventory margin revenue profit loss investment fund rate loan project pipeline permit " +
  "region country europe china india america brazil africa japan korea germany spain australia city state federal national " +
  "new old large small early late fast slow higher lower stable volatile strong weak recent latest expected reported announced " +
  "according while because although despite since after before during across within between against toward about around " +
  "the a of to in for on with by from as at that this these those which who it its their our more most less least than also"
).split(" ");

function seededRandom(seed: string): () => number {
  let state = createHash("sha1").update(seed).digest().readUInt32LE(0);
  // mulberry32
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Prose of exactly `chars` characters: sentences of everyday words and figures, in paragraphs. */
function prose(seed: string, chars: number): string {
  const random = seededRandom(seed);
  const pick = () => WORDS[Math.floor(random() * WORDS.length)]!;
  let text = "";
  while (text.length < chars) {
    const length = 10 + Math.floor(random() * 14);
    const words = Array.from({ length }, pick);
    if (random() < 0.4) words.splice(Math.floor(random() * length), 0, `${(random() * 100).toFixed(1)}%`);
    const sentence = words.join(" ");
    text += `${sentence[0]!.toUpperCase()}${sentence.slice(1)}.${random() < 0.2 ? "\n\n" : " "}`;
  }
  return text.slice(0, chars);
}

/** A number of characters between two bounds, the same for the same seed. */
function sizeBetween(seed: string, [low, high]: readonly [number, number]): number {
  return low + Math.floor(seededRandom(`size:${seed}`)() * (high - low));
}

const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "")
    .slice(0, 60);

// ---------------------------------------------------------------------------------------------
// The web: Tavily's search and page reads at real sizes.

/** Fake Tavily whose searches return five results of a few KB in all and whose pages read as 6–10 KB of Markdown. */
async function startResearchWeb(): Promise<FakeTavily> {
  const domains = [
    "energy-insights.example",
    "pv-magazine.example",
    "gridwatch.example",
    "marketdata.example",
    "policy-review.example",
  ];
  return startFakeTavily(
    ({ query }) => ({
      results: Array.from({ length: SIZES.searchResults }, (_, i) => ({
        title: `${query}: ${prose(`title:${query}:${i}`, 48).replace(/[.\n]/g, " ").trim()}`,
        url: `https://${domains[i % domains.length]}/${slug(query)}-${i + 1}`,
        content: prose(`excerpt:${query}:${i}`, SIZES.searchExcerptChars),
      })),
    }),
    {
      extract: ({ urls }) => ({
        pages: urls.map((url) => {
          const body = prose(`page:${url}`, sizeBetween(url, SIZES.pageChars));
          return {
            url,
            title: `Report: ${slug(url.split("/").at(-1) ?? "page").replace(/-/g, " ")}`,
            content: `# ${url}\n\n${body}`,
          };
        }),
      }),
    },
  );
}

// ---------------------------------------------------------------------------------------------
// The team.

export type ResearchTeam = { team: Team; lead: Agent; subordinates: Agent[] };

const LEAD_INSTRUCTIONS = [
  "Run the team's research on the solar market. Split each request into questions your researchers can answer in one sitting,",
  "hand them out with clear scope and sources to prefer, and wait for their reports. When the reports are in, brief the person:",
  "a short summary for the inbox and a full briefing in Markdown with the findings, what changed since the last briefing, the",
  "numbers with their sources, and what you would look at next. Prefer primary sources (regulators, company filings, grid",
  "operators) over news; say when sources disagree. Do not brief the person on work still under way unless they asked for it.",
].join(" ");

const RESEARCHER_INSTRUCTIONS = [
  "Research what your lead asks: search the web, read the two or three pages that matter, record each durable fact with its",
  "source url, and report back with the findings, the numbers and where they come from. Keep reports to what was asked;",
  "say what you could not find.",
].join(" ");

export async function createResearchTeam(
  db: Db,
  input: { team: string; lead: string; subordinates: readonly string[] },
): Promise<ResearchTeam> {
  const { team, lead } = await createTeamWithLead(db, {
    name: input.team,
    mission:
      "Track the solar module market (prices, supply, policy) and brief the person on what changes and why it matters.",
    leadName: input.lead,
    leadInstructions: LEAD_INSTRUCTIONS,
  });
  const subordinates: Agent[] = [];
  for (const name of input.subordinates)
    subordinates.push(await createSubordinate(db, team.id, { name, instructions: RESEARCHER_INSTRUCTIONS }));
  return { team, lead, subordinates };
}

/** What a research request from the person says. */
export function researchRequest(topic: string): { title: string; description: string } {
  return {
    title: `Research: ${topic}`,
    description: `Find out where ${topic} stands now, what changed in the last quarter and why, with numbers and sources. Brief me when you have it.`,
  };
}

// ---------------------------------------------------------------------------------------------
// Reading a request the way a model does: what happened last in the log.

const contentText = (message: FakeChatMessage): string =>
  typeof message.content === "string"
    ? message.content
    : (message.content ?? []).map((part) => part.text ?? "").join("");

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

type Event =
  | { kind: "tool"; name: string; content: string; args: Record<string, unknown> }
  | { kind: "input"; input: LogInput }
  | { kind: "none" };

function callOf(request: FakeChatRequest, callId: string | undefined) {
  for (const message of request.messages) {
    const call = message.tool_calls?.find((candidate) => candidate.id === callId);
    if (call) return call;
  }
  return undefined;
}

/**
 * The last thing that happened in the log: a tool's result, or input from someone (a task, a
 * report). User messages that are neither (notes the engine keeps in the log) are read past.
 */
function lastEvent(request: FakeChatRequest): Event {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]!;
    if (message.role === "tool") {
      const call = callOf(request, message.tool_call_id);
      return {
        kind: "tool",
        name: call?.function.name ?? "",
        content: contentText(message),
        args: call ? (JSON.parse(call.function.arguments) as Record<string, unknown>) : {},
      };
    }
    if (message.role === "assistant") return { kind: "none" };
    if (message.role === "user") {
      const input = parseLogInput(contentText(message));
      if (input) return { kind: "input", input };
    }
  }
  return { kind: "none" };
}

const firstUrl = (searchResult: string, index = 0): string => {
  const urls = [...searchResult.matchAll(/"url":"([^"]+)"/g)].map((match) => match[1]!);
  return urls[index % Math.max(1, urls.length)] ?? "https://energy-insights.example/solar";
};

const call = (name: string, args: object): FakeReply => ({ toolCalls: [{ name, arguments: args }] });

// ---------------------------------------------------------------------------------------------
// The researchers.

/**
 * A researcher in the standard flow, one turn per task: search, read the first result, record
 * a fact from it, report, done. `quick`: search and report only.
 */
export function researcherScript(options: { quick?: boolean } = {}): AgentScript {
  return ({ request }) => {
    const event = lastEvent(request);
    if (event.kind === "input" && event.input.kind === "task")
      return call("tavilySearch", { query: event.input.title.replace(/^Research: /, "") });
    const seed = `${event.kind === "tool" ? event.name : event.kind}:${request.messages.length}`;
    // A compaction's summary and nothing after it: the findings are in the summary; report them.
    if (event.kind === "none") return call("reportToLead", { result: prose(`report:${seed}`, SIZES.reportChars) });
    if (event.kind !== "tool") return { text: "Nothing to do." };
    switch (event.name) {
      case "tavilySearch":
        if (options.quick) return call("reportToLead", { result: prose(`report:${seed}`, SIZES.reportChars) });
        return call("readWebPage", { url: firstUrl(event.content) });
      case "readWebPage":
        return call("addKnowledgeItem", {
          type: "fact",
          content: prose(`fact:${seed}`, SIZES.factChars),
          confidence: 0.8,
          sourceUrl: String(event.args.url),
        });
      case "addKnowledgeItem":
        return call("reportToLead", { result: prose(`report:${seed}`, SIZES.reportChars) });
      default:
        return { text: "Reported to my lead." };
    }
  };
}

/**
 * One long task: `rounds` tool rounds (search, read, record, search, read, …), then the report.
 * Counted here, not from the log, so compaction (which folds the task's start into a summary)
 * does not reset it.
 */
export function longResearchScript(rounds: number): AgentScript {
  let done = 0;
  return ({ request }) => {
    const event = lastEvent(request);
    const seed = `long:${done}`;
    if (done >= rounds) return { text: "Reported to my lead." };
    done += 1;
    if (done === rounds) return call("reportToLead", { result: prose(`report:${seed}`, SIZES.reportChars) });
    const lastSearch = event.kind === "tool" && event.name === "tavilySearch" ? event.content : "";
    switch ((done - 1) % 5) {
      case 0:
      case 3:
        return call("tavilySearch", { query: `solar module prices part ${done}` });
      case 1:
      case 4:
        return call("readWebPage", {
          url: lastSearch ? firstUrl(lastSearch, done) : `https://energy-insights.example/solar-${done}`,
        });
      default:
        return call("addKnowledgeItem", {
          type: "fact",
          content: prose(`fact:${seed}`, SIZES.factChars),
          confidence: 0.7,
          sourceUrl: `https://energy-insights.example/solar-${done}`,
        });
    }
  };
}

// ---------------------------------------------------------------------------------------------
// The lead.

export type LeadOptions = {
  db: Db;
  lead: { id: string };
  /** Who it delegates each task to (both at once). */
  subordinates: readonly { id: string; name: string }[];
  /**
   * After delegating, the lead takes a look of its own (one search) before it waits; this runs
   * before that search's answer, so a report can land while the turn is under way.
   */
  ownLook?: (leadTaskId: string) => Promise<void>;
};

const REPORT_LINE = new RegExp(`Subordinate \\S+ reports \\(task id: (${UUID.source})\\)`, "g");

/**
 * A lead in the standard flow: a task from the person is delegated to every subordinate at
 * once; the lead waits; when every report on it is in, it briefs the person with
 * createInboxItem and ends the task. A scheduled check-in with nothing new looks at the team
 * and says so. Which reports it has read it takes from its log and from a compaction's summary
 * (as a model would); which delegation belongs to which task, and the task in focus after a
 * compaction, from the database (what a model would take from its summary).
 */
export function leadScript(options: LeadOptions): AgentScript {
  const reported = new Set<string>();
  const titles = new Map<string, string>();
  const briefed = new Set<string>();

  /** What this request shows (tasks, reports), added to what earlier ones showed; the last task it names. */
  const learn = (request: FakeChatRequest) => {
    let current: string | undefined;
    for (const message of request.messages) {
      if (message.role !== "user") continue;
      const text = contentText(message);
      const input = parseLogInput(text);
      if (input?.kind === "task") {
        current = input.taskId;
        titles.set(input.taskId, input.title);
      }
      for (const match of text.matchAll(REPORT_LINE)) reported.add(match[1]!);
    }
    return current;
  };
  const subtasksOf = async (leadTask: string) =>
    (await options.db.select({ id: tasks.id }).from(tasks).where(eq(tasks.parentTaskId, leadTask))).map(
      (task) => task.id,
    );
  const leadTaskOf = async (subtask: string) =>
    (await options.db.select({ parent: tasks.parentTaskId }).from(tasks).where(eq(tasks.id, subtask)))[0]?.parent ??
    undefined;
  const allReported = async (leadTask: string | undefined) => {
    const subtasks = leadTask ? await subtasksOf(leadTask) : [];
    return subtasks.length > 0 && subtasks.every((subtask) => reported.has(subtask));
  };
  const brief = (leadTask: string): FakeReply => {
    briefed.add(leadTask);
    const title = (titles.get(leadTask) ?? "the research").replace(/^Research: /, "");
    const findings = prose(`briefing:${leadTask}`, SIZES.briefingChars - 200);
    return call("createInboxItem", {
      title: `Briefing: ${title}`.slice(0, 200),
      summary: prose(`summary:${leadTask}`, 220),
      content: `## ${title}\n\n${findings}\n\n## Sources\n- https://energy-insights.example/${slug(title)}-1\n- https://pv-magazine.example/${slug(title)}-2`,
    });
  };

  return async (modelCall: ModelCall) => {
    const { request } = modelCall;
    const current = learn(request);
    const event = lastEvent(request);
    if (event.kind === "input") {
      const { input } = event;
      if (input.kind === "task" && input.title.startsWith("Scheduled check-in")) return call("getTeamStatus", {});
      if (input.kind === "task") {
        const toolCalls: FakeToolCall[] = options.subordinates.map((subordinate, i) => ({
          name: "delegateToAgent",
          arguments: {
            agentId: subordinate.id,
            title: `${input.title.replace(/^Research: /, "")}: ${i === 0 ? "prices and supply" : "policy and demand"}`,
            description: `${prose(`brief:${input.taskId}:${i}`, 420)} Report the numbers with their sources.`,
          },
        }));
        return { toolCalls };
      }
      if (input.kind === "report" && input.taskId) {
        const leadTask = await leadTaskOf(input.taskId);
        if (leadTask && !briefed.has(leadTask) && (await allReported(leadTask))) return brief(leadTask);
        return { text: "Noted the report; waiting for the rest before briefing." };
      }
      return { text: "Nothing to do for that." };
    }
    if (event.kind === "tool") {
      switch (event.name) {
        case "delegateToAgent":
          if (options.ownLook && current) {
            await options.ownLook(current);
            return call("tavilySearch", {
              query: `${(titles.get(current) ?? "solar").replace(/^Research: /, "")} latest news`,
            });
          }
          return { text: "Delegated to the researchers; waiting for their reports." };
        case "tavilySearch":
          if (current && !briefed.has(current) && (await allReported(current))) return brief(current);
          return { text: "Had a look myself; waiting for the researchers' reports." };
        case "getTeamStatus":
          return { text: "Checked the team: nothing new since the last briefing and nothing worth handing out now." };
        case "createInboxItem":
          return { text: "Briefed the person with the researchers' findings." };
        default:
          return { text: "Done." };
      }
    }
    // Nothing new in the log but a compaction's summary: go on with the task in focus from
    // where the summary says it stands (the focus as the session records it).
    const [session] = await options.db
      .select({ taskId: workSessions.taskId })
      .from(workSessions)
      .where(and(eq(workSessions.agentId, options.lead.id), eq(workSessions.status, "running")));
    const focus = session?.taskId ?? undefined;
    if (focus && !briefed.has(focus) && (await allReported(focus))) return brief(focus);
    return { text: "Waiting for the researchers' reports." };
  };
}

// ---------------------------------------------------------------------------------------------
// The chat.

/** Tools a chat reply uses before it answers, by the person's message number (1-based). */
export type ChatPlan = (messageNumber: number) => readonly { name: string; args: (lastResult: string) => object }[];

/**
 * Replies in the chat: for the person's n-th message, the plan's tool calls one after another,
 * then an answer of 600–1,200 characters.
 */
export function chatScript(plan: ChatPlan): AgentScript {
  return ({ request }) => {
    const lastPerson = request.messages.findLastIndex((message) => message.role === "user");
    const number = request.messages.filter((message) => message.role === "user").length;
    const done = request.messages.slice(lastPerson + 1).filter((message) => message.role === "tool");
    const steps = plan(number);
    const next = steps[done.length];
    if (next) return call(next.name, next.args(done.at(-1) ? contentText(done.at(-1)!) : ""));
    return { text: prose(`answer:${number}`, sizeBetween(`answer:${number}`, SIZES.chatAnswerChars)) };
  };
}

/** A search, then a read of its first result. */
export const searchAndRead = (query: string) => [
  { name: "tavilySearch", args: () => ({ query }) },
  { name: "readWebPage", args: (last: string) => ({ url: firstUrl(last) }) },
];

/** One script for an agent that both works and chats. */
export function workAndChat(work: AgentScript, chat: AgentScript): AgentScript {
  return (modelCall) => (modelCall.kind === "chat" ? chat(modelCall) : work(modelCall));
}

/**
 * A compaction's answer: dense prose, and where things stand as the compaction prompt asks
 * (the tasks, and which reports are in), so the agent can go on from it as a model would.
 */
function summarize(n: number, request: FakeChatRequest): string {
  const log = request.messages.map(contentText).join("\n");
  const tasksSeen = [
    ...new Set([...log.matchAll(/Task from [^\n]*?\(task id: [0-9a-f-]{36}\): [^\n]*/g)].map((match) => match[0])),
  ];
  const reports = [
    ...new Set([...log.matchAll(/Subordinate \S+ reports \(task id: [0-9a-f-]{36}\)/g)].map((match) => match[0])),
  ];
  const standing = [
    ...tasksSeen.map((line) => `- ${line}`),
    ...reports.map((line) => `- ${line}: in (folded into the findings above)`),
  ];
  return `${prose(`summary:${n}`, SIZES.summaryChars)}\n\nWhere things stand:\n${standing.join("\n")}`;
}

// ---------------------------------------------------------------------------------------------
// The rig: the model (with OpenAI's prompt cache), the web, a worker, and the engine in this
// process for what the web server does (a chat reply) and the scheduler (a check-in).

export type ResearchRig = {
  model: ModelServer;
  web: FakeTavily;
  workers: Workers;
  /** The engine as the web process and the scheduler's job run it, on the same model and web. */
  deps: EngineDeps;
  close(): Promise<void>;
};

const TAVILY_KEY = "tvly-bench";

export async function startResearchRig(
  database: BenchDatabase,
  jobs: JobQueue,
  workerEnv: Record<string, string> = {},
): Promise<ResearchRig> {
  const model = await ModelServer.start({ promptCache: true, summary: (n, request) => summarize(n, request) });
  const web = await startResearchWeb();
  const workers = new Workers(database, model.url);
  const close = async () => {
    await workers.stopAll().catch(() => {});
    await Promise.all([model.close().catch(() => {}), web.close().catch(() => {})]);
  };
  try {
    await workers.start(1, { TAVILY_API_KEY: TAVILY_KEY, TAVILY_BASE_URL: web.url, ...workerEnv });
  } catch (error) {
    await close();
    throw error;
  }
  const config = { ...engineConfigFromEnv(), search: { tavilyApiKey: TAVILY_KEY, tavilyBaseUrl: web.url } };
  const deps = engineDeps(database.db, jobs, {
    config,
    chooseModel: (override) =>
      chooseModel(override, { OPENAI_BASE_URL: model.url, OPENAI_API_KEY: undefined, LLM_MODEL: "fake-model" }),
    log: (message, error) => console.error(message, error ?? ""),
  });
  return { model, web, workers, deps, close };
}

/**
 * The tasks ended, all completed, with the workers idle. A figure measures an outcome only
 * once it happened: a task that failed (a script the engine no longer fits) ends the figure.
 */
export async function untilCompleted(
  database: BenchDatabase,
  rig: ResearchRig,
  taskIds: readonly string[],
  what: string,
): Promise<void> {
  const ended = await waitFor(
    async () => {
      const rows = await database.db
        .select({ title: tasks.title, status: tasks.status, result: tasks.result })
        .from(tasks)
        .where(inArray(tasks.id, [...taskIds]));
      return rows.every((task) => !isOpenTask(task.status)) ? rows : undefined;
    },
    { timeoutMs: 150_000, what },
  );
  const failed = ended.find((task) => task.status !== "completed");
  if (failed) throw new Error(`${what}: the task "${failed.title}" ended ${failed.status}: ${failed.result ?? ""}`);
  await rig.workers.idle();
}

/** The briefings a team's lead has put in the inbox. */
export async function briefingsOf(database: BenchDatabase, teamId: string): Promise<number> {
  const rows = await database.db
    .select({ id: inboxItems.id })
    .from(inboxItems)
    .where(and(eq(inboxItems.teamId, teamId), eq(inboxItems.type, "briefing")));
  return rows.length;
}

/** The person's chat message and the whole streamed reply, as the chat route answers it. */
export async function chatWith(deps: EngineDeps, agentId: string, text: string): Promise<void> {
  const response = await streamChatReply(deps, agentId, text, new AbortController().signal);
  await response.text();
}
