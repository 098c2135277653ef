import { BRIEFING_DECISION_PROMPT, COMPACTION_INSTRUCTIONS } from "../../src/lib/core/prompts";
import {
  lastUserText,
  separatedMessages,
  startFakeOpenAI,
  type FakeChatRequest,
  type FakeOpenAI,
  type FakeReply,
} from "../../tests/support/fake-openai";
import { PromptCache, type CacheMeasure } from "../../tests/support/prompt-cache";
import { now } from "./stats";

/**
 * What a call is for, read from the request alone (the engine's prompts say it): an agent's
 * work log (its turns), the lead's end-of-session briefing decision (a turn of the same log),
 * a chat reply, or one of the side calls that are conversations of their own.
 */
type CallKind = "work" | "briefing" | "chat" | "compaction" | "extraction";

/** A call as the fake server sees it, with the moment it arrived. `kind` is "work" or "chat" for a script. */
export type ModelCall = { agent: string; kind: CallKind; request: FakeChatRequest; arrivedAt: number };
export type AgentScript = (call: ModelCall) => FakeReply | Promise<FakeReply>;

const systemText = (request: FakeChatRequest) =>
  String(request.messages.find((message) => message.role === "system")?.content ?? "");
const toolNames = (request: FakeChatRequest) => (request.tools ?? []).map((tool) => tool.function.name);
/** The first line of the compaction call's instructions: there whether or not the call carries tools. */
const COMPACTION_OPENING = COMPACTION_INSTRUCTIONS.split("\n")[0]!;
/** What the briefing decision asks (the prompt, or its question if reworded): a turn of the lead's log, whatever tools it is offered. */
const isBriefingDecision = (request: FakeChatRequest) => {
  const text = lastUserText(request);
  return text.includes(BRIEFING_DECISION_PROMPT) || text.includes("Decide whether to brief the person");
};

/** Tool results since the latest task entered the log: how far the current task has got. */
export function roundsSinceTask(request: FakeChatRequest): number {
  const start = request.messages.findLastIndex(
    (message) =>
      message.role === "user" && typeof message.content === "string" && message.content.startsWith("Task from"),
  );
  return request.messages.slice(start + 1).filter((message) => message.role === "tool").length;
}

export function promptIncludes(request: FakeChatRequest, text: string): boolean {
  return request.messages.some((message) =>
    typeof message.content === "string"
      ? message.content.includes(text)
      : (message.content ?? []).some((part) => part.text?.includes(text)),
  );
}

/** The agent a call is made for, by the name its instructions give it; "" when they name none (extraction). */
function agentOf(request: FakeChatRequest): string {
  return /You are (.+?), (the lead|a member)/.exec(systemText(request))?.[1] ?? "";
}

function kindOf(request: FakeChatRequest): CallKind {
  if (request.response_format) return "extraction";
  const system = systemText(request);
  const tools = toolNames(request);
  // Its instructions may come as the system prompt or, in a call that reuses the log's prefix, as its last message.
  // A summary is asked for without tools, or as the log's next request offering its tools with none callable.
  if (
    tools.length === 0 ||
    request.tool_choice === "none" ||
    system.includes(COMPACTION_OPENING) ||
    lastUserText(request).includes(COMPACTION_OPENING)
  )
    return "compaction";
  // By the question first: after the engine keeps the full tool set for the decision, the tools no longer tell.
  if (isBriefingDecision(request) || (tools.length === 1 && tools[0] === "createInboxItem")) return "briefing";
  return /talking with the person/.test(system.split("\n")[0] ?? "") ? "chat" : "work";
}

/** A call with the tokens the fake server reported for it (the prompt cache's measure). */
export type MeasuredCall = { request: FakeChatRequest; kind: CallKind; agent: string; measure: CacheMeasure };

/** The prompt cache, remembering its measure of each request so the bench can read it beside the request. */
class RecordingPromptCache extends PromptCache {
  readonly measures = new WeakMap<object, CacheMeasure>();

  override measure(request: Parameters<PromptCache["measure"]>[0]): CacheMeasure {
    const measure = super.measure(request);
    this.measures.set(request, measure);
    return measure;
  }
}

export type ModelServerOptions = {
  /** Report cached tokens by OpenAI's prefix rule (tests/support/prompt-cache.ts); without it none are cached. */
  promptCache?: boolean;
  /** What the n-th compaction (from 1) answers to its request (default: one short line). Summaries differ, as real ones do. */
  summary?: (n: number, request: FakeChatRequest) => string;
};

/**
 * The zero-latency model of the worker benchmarks: one local OpenAI-compatible server
 * (the real provider path through @ai-sdk/openai) that answers each agent from the
 * script registered under its name. Knowledge extraction gets no items, compaction a
 * short summary, the briefing decision "No briefing needed.", and an agent without a
 * script a plain answer.
 */
export class ModelServer {
  private readonly scripts = new Map<string, AgentScript>();
  private compactions = 0;

  private constructor(
    readonly fake: FakeOpenAI,
    private readonly cache: RecordingPromptCache | undefined,
    private readonly summary: (n: number, request: FakeChatRequest) => string,
  ) {}

  static async start(options: ModelServerOptions = {}): Promise<ModelServer> {
    let server: ModelServer | undefined;
    const cache = options.promptCache ? new RecordingPromptCache() : undefined;
    const fake = await startFakeOpenAI((request) => server!.answer(request), { promptCache: cache });
    server = new ModelServer(fake, cache, options.summary ?? (() => "Summary: the work so far."));
    return server;
  }

  get url(): string {
    return this.fake.url;
  }

  script(agentName: string, script: AgentScript): void {
    this.scripts.set(agentName, script);
  }

  /** The calls received since `from` (an index into fake.requests), with what the prompt cache measured. */
  callsSince(from: number): MeasuredCall[] {
    return this.fake.requests.slice(from).map((request) => ({
      request,
      kind: kindOf(request),
      agent: agentOf(request),
      measure: this.cache?.measures.get(request) ?? { promptTokens: 0, cachedTokens: 0 },
    }));
  }

  private answer(request: FakeChatRequest): FakeReply | Promise<FakeReply> {
    const arrivedAt = now();
    const kind = kindOf(request);
    if (kind === "extraction") return { text: '{"items":[]}' };
    if (kind === "compaction") return { text: this.summary(++this.compactions, request) };
    if (kind === "briefing") return { text: "No briefing needed." };
    const agent = agentOf(request);
    const script = this.scripts.get(agent);
    if (!script) return { text: lastUserText(request) ? "Nothing to do." : "Done." };
    // Scripts read the log's inputs one by one, as the engine stored them (the request joins adjacent ones).
    return script({ agent, kind, request: { ...request, messages: separatedMessages(request.messages) }, arrivedAt });
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
