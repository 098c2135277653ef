// The scripted model of the engine model-check: a handler for the fake Chat Completions
// server. It finds the scenario by the team name in the system prompt and the agent by
// its name, reads what arrived in the context (parseLogInput, the engine's own parser),
// and plays that scenario's script: a lead delegates, answers questions and briefs; a
// subordinate searches, records, reports, asks, fails. Its progress on a job is read back
// from its own tool call ids in the context, so a retried or resumed call picks up where
// the stored log stands. Each answer carries a key (its tool call ids, or a token at the
// end of its text) and the identities of the context it was given, for invariant 7.
import { parseLogInput, splitMarker, type LogInput } from "@/lib/core/formats";
import { INTERRUPTED_RESULT } from "@/lib/engine/model-messages";
import { type FakeChatRequest, type FakeOpenAIHandler, type FakeReply, separatedMessages } from "../fake-openai";
import { wireIdentities, wireText } from "./identity";
import { hash32, type Rng } from "./random";
import type { Job, LeadStep, Scenario, SubStep } from "./scenario";

export type ScenarioEntry = {
  scenario: Scenario;
  teamId: string;
  leadId: string;
  subIds: string[];
  /** Call delays. */
  rng: Rng;
  /** Answer key → identities of the context its call was given. */
  answers: Map<string, number[]>;
  /** Work-turn answers given (the run's "steps"). */
  calls: number;
  /** Set once the scenario was found quiet and checked: a call after that means it was not quiet. */
  checked?: boolean;
};

export type ScriptedModelOptions = {
  /** Latency of a call: uniform in [0, maxDelayMs], and sometimes slow. */
  maxDelayMs: number;
  slowChance: number;
  slowDelayMs: [number, number];
  /** Prompt tokens a "spend" step reports: more than the session's token budget. */
  spendTokens: number;
};

type Tag = { tag: string; step: number };
type SeenMessage = {
  role: "user" | "assistant" | "tool";
  text: string;
  input: LogInput | null;
  marker: boolean;
  calls: { id: string; tag: Tag | null }[];
  textTag: Tag | null;
  toolCallId?: string;
};
type Context = { messages: SeenMessage[]; results: Map<string, string> };
type Decision = { reply: FakeReply; keys: string[] };

const ID = /^mc-([^-]+)-(\d+)-[a-z0-9]+$/;
const TOKEN = /\[(mc-[^-\]]+-\d+-[a-z0-9]+)\]/;

export class ScriptedModel {
  private readonly scenarios = new Map<string, ScenarioEntry>();
  private nonce = 0;
  /** Calls for a team no scenario knows. */
  unknownCalls = 0;
  /** Seeds of scenarios whose agents called the model after they were found quiet and checked. */
  readonly lateCalls: number[] = [];

  constructor(private readonly options: ScriptedModelOptions) {}

  register(entry: ScenarioEntry): void {
    this.scenarios.set(entry.scenario.teamName, entry);
  }

  readonly handler: FakeOpenAIHandler = (request) => this.answer(request);

  private answer(request: FakeChatRequest): FakeReply {
    // Knowledge extraction (structured output) and compaction (no tools) are not work turns.
    if (request.response_format) return { text: '{"items":[]}' };
    const tools = (request.tools ?? []).map((tool) => tool.function.name);
    if (tools.length === 0 || request.tool_choice === "none") return { text: "Summary of the work so far." };
    const system = wireText(request.messages.find((message) => message.role === "system") ?? { role: "system" });
    const found = this.identify(system);
    if (!found) {
      this.unknownCalls += 1;
      return { text: "I do not know this team." };
    }
    const { entry, agent } = found;
    entry.calls += 1;
    if (entry.checked) this.lateCalls.push(entry.scenario.seed);
    // The log's messages one by one, as stored (the request joins adjacent ones of one role).
    const heard: FakeChatRequest = { ...request, messages: separatedMessages(request.messages) };
    const context = readContext(heard);
    // The wrap-up offers a lead's usual tools (its request extends the one before it), so it is told by its prompt.
    const wrapUp = /Decide whether to brief the person/.test(
      context.messages.findLast((message) => message.role === "user")?.text ?? "",
    );
    const decision = tools.includes("reportToLead")
      ? this.subordinate(entry, agent - 1, context)
      : tools.includes("delegateToAgent") && !wrapUp
        ? this.lead(entry, context, heard)
        : this.briefing(entry, context);
    const seen = wireIdentities(heard.messages.filter((message) => message.role !== "system"));
    for (const key of decision.keys) entry.answers.set(key, seen);
    if ("fault" in decision.reply) return decision.reply;
    const slow = entry.rng.chance(this.options.slowChance);
    const [min, max] = this.options.slowDelayMs;
    const delayMs = slow ? min + entry.rng.next() * (max - min) : entry.rng.next() * this.options.maxDelayMs;
    return { ...decision.reply, delayMs };
  }

  /** The scenario (by team name) and the agent (0 = lead, i = subordinate i - 1) a system prompt belongs to. */
  private identify(system: string): { entry: ScenarioEntry; agent: number } | null {
    const match = /You are (.+?), (?:the lead|a member) of the team "(.+?)"/.exec(system);
    const entry = match
      ? this.scenarios.get(match[2]!)
      : [...this.scenarios.values()].find((e) => system.includes(`"${e.scenario.teamName}"`));
    if (!entry) return null;
    const name = match?.[1];
    if (name === entry.scenario.leadName) return { entry, agent: 0 };
    const sub = entry.scenario.subNames.findIndex(
      (subName) => name === subName || (!name && system.includes(`You are ${subName},`)),
    );
    return { entry, agent: sub >= 0 ? sub + 1 : 0 };
  }

  private key(tag: string, step: number): string {
    this.nonce += 1;
    return `mc-${tag}-${step}-${this.nonce.toString(36)}`;
  }

  private call(tag: string, step: number, name: string, args: object): Decision {
    const id = this.key(tag, step);
    return { reply: { toolCalls: [{ id, name, arguments: args }] }, keys: [id] };
  }

  private text(tag: string, words: string): Decision {
    const key = this.key(tag, 0);
    return { reply: { text: `${words} [${key}]` }, keys: [key] };
  }

  // A subordinate works its jobs in the order they reached its log, one step per call.
  private subordinate(entry: ScenarioEntry, sub: number, context: Context): Decision {
    for (const [index, message] of context.messages.entries()) {
      if (message.input?.kind !== "task") continue;
      const { taskId, title } = message.input;
      const job = entry.scenario.jobs[/^(J\d+)\b/.exec(title)?.[1] ?? ""];
      if (!job || closedAfter(context, index, taskId)) continue;
      let progress = progressOf(context, job.key);
      if (job.steps[progress - 1]?.kind === "loop") progress -= 1;
      if (progress >= job.steps.length) continue;
      // After a question, the job waits for the lead's answer.
      if (
        job.steps[progress - 1]?.kind === "ask" &&
        !context.messages.some((m) => m.role === "user" && m.text.includes(`«answer:${job.key}»`))
      )
        continue;
      return this.subordinateStep(job, job.steps[progress]!, progress, taskId);
    }
    return this.text("idle", `Nothing left to do for ${entry.scenario.subNames[sub]}.`);
  }

  private subordinateStep(job: Job, step: SubStep, index: number, taskId: string): Decision {
    const tag = job.key;
    switch (step.kind) {
      case "search":
      case "loop":
        return this.call(tag, index, "searchKnowledge", { query: `${tag} background` });
      case "spend": {
        const decision = this.call(tag, index, "searchKnowledge", { query: `${tag} everything` });
        return {
          ...decision,
          reply: { ...decision.reply, usage: { prompt_tokens: this.options.spendTokens, completion_tokens: 10 } },
        };
      }
      case "record":
        return this.call(tag, index, "addKnowledgeItem", {
          type: "fact",
          content: `${tag}: a finding worth keeping.`,
          confidence: 0.7,
        });
      case "report": {
        const id = step.taskId === "exact" ? { taskId } : step.taskId === "garbage" ? { taskId: `task-${tag}` } : {};
        return this.call(
          tag,
          index,
          "reportToLead",
          step.missingResult ? id : { result: `Findings for ${tag}: prices fell. «report:${tag}»`, ...id },
        );
      }
      case "ask":
        return this.call(tag, index, "requestInput", { question: `«question:${tag}» Which years count?`, taskId });
      case "fail":
        return { reply: { fault: "status", status: step.status }, keys: [] };
      case "malformed": {
        const id = this.key(tag, index);
        return {
          reply: { fault: "malformed-tool-call", id, name: "searchKnowledge", arguments: `{"query": "${tag} broken` },
          keys: [id],
        };
      }
    }
  }

  // A lead answers questions first, then works its tasks and webhooks, then briefs.
  private lead(entry: ScenarioEntry, context: Context, request: FakeChatRequest): Decision {
    const { scenario } = entry;
    for (const message of context.messages) {
      const input = message.input;
      if (input?.kind !== "question") continue;
      const tag = `a${input.questionId.slice(0, 8)}`;
      if (progressOf(context, tag) > 0) continue;
      const job = /«question:(J\d+)»/.exec(input.question)?.[1] ?? "?";
      const properties = toolProperties(request, "answerSubordinate");
      const args: Record<string, string> = { agentId: input.agentId, answer: `«answer:${job}» Count 2024 to 2026.` };
      if (properties.includes("questionId")) args.questionId = input.questionId;
      return this.call(tag, 0, "answerSubordinate", args);
    }
    for (const [index, message] of context.messages.entries()) {
      const input = message.input;
      let workKey: string | undefined;
      let taskId: string | null = null;
      if (input?.kind === "task") {
        workKey = /^(U\d+)\b/.exec(input.title)?.[1];
        taskId = input.taskId;
      } else if (input?.kind === "webhook") workKey = webhookBody(input.body).work;
      const work = workKey ? scenario.works[workKey] : undefined;
      if (!work || closedAfter(context, index, taskId)) continue;
      const progress = progressOf(context, work.key);
      if (progress >= work.steps.length) continue;
      return this.leadStep(entry, work.key, work.steps[progress]!, progress);
    }
    for (const message of context.messages) {
      const input = message.input;
      if (input?.kind !== "report" || !input.taskId) continue;
      const tag = `b${input.taskId.slice(0, 8)}`;
      if (hash32(scenario.seed, input.taskId) / 2 ** 32 >= scenario.briefChance || progressOf(context, tag) > 0)
        continue;
      return this.call(tag, 0, "createInboxItem", {
        title: `${input.agentName} reported`,
        summary: "A subordinate finished a task.",
        content: `## Report\n${input.result}`,
      });
    }
    for (const message of context.messages) {
      if (message.input?.kind !== "webhook") continue;
      const { ping } = webhookBody(message.input.body);
      const tag = `h${ping ?? "x"}`;
      if (progressOf(context, tag) > 0) continue;
      return this.call(tag, 0, "searchKnowledge", { query: `webhook ${ping}` });
    }
    return this.text("idle", "Waiting for reports.");
  }

  private leadStep(entry: ScenarioEntry, tag: string, step: LeadStep, index: number): Decision {
    switch (step.kind) {
      case "lookup":
        return this.call(tag, index, "searchKnowledge", { query: `${tag} what we know` });
      case "fail":
        return { reply: { fault: "status", status: step.status }, keys: [] };
      case "delegate": {
        const job = entry.scenario.jobs[step.job]!;
        const agentId = step.malformed === "agentId" ? entry.scenario.subNames[job.sub]! : entry.subIds[job.sub]!;
        const args: Record<string, string> = {
          agentId,
          title: `${job.key} research`,
          description: `Look into ${job.key}.`,
        };
        if (step.malformed === "title") delete args.title;
        return this.call(tag, index, "delegateToAgent", args);
      }
    }
  }

  // The wrap-up decision: brief now and then, else say so.
  private briefing(entry: ScenarioEntry, context: Context): Decision {
    if (context.messages.at(-1)?.role === "tool") return this.text("wrap", "Briefed.");
    if (hash32(entry.scenario.seed, "wrap", context.messages.length) / 2 ** 32 < 0.2) {
      return this.call("wrap", 0, "createInboxItem", {
        title: "Where things stand",
        summary: "Work moved on.",
        content: "## Status\nWork moved on.",
      });
    }
    return this.text("wrap", "No briefing needed.");
  }
}

function readContext(request: FakeChatRequest): Context {
  const messages: SeenMessage[] = [];
  const results = new Map<string, string>();
  for (const message of request.messages) {
    const text = wireText(message);
    if (message.role === "user") {
      messages.push({ role: "user", text, input: parseLogInput(text), marker: false, calls: [], textTag: null });
    } else if (message.role === "assistant") {
      const calls = (message.tool_calls ?? []).map((call) => ({ id: call.id, tag: parseTag(call.id) }));
      const token = TOKEN.exec(text)?.[1];
      messages.push({
        role: "assistant",
        text,
        input: null,
        marker: splitMarker(text) !== null,
        calls,
        textTag: token ? parseTag(token) : null,
      });
    } else if (message.role === "tool") {
      results.set(message.tool_call_id ?? "", text);
      messages.push({
        role: "tool",
        text,
        input: null,
        marker: false,
        calls: [],
        textTag: null,
        toolCallId: message.tool_call_id,
      });
    }
  }
  return { messages, results };
}

function parseTag(id: string): Tag | null {
  const match = ID.exec(id);
  return match ? { tag: match[1]!, step: Number(match[2]) } : null;
}

/** The next step of the work tagged `tag`: one past the last step in the context whose call was not interrupted. */
function progressOf(context: Context, tag: string): number {
  let next = 0;
  for (const message of context.messages) {
    for (const call of message.calls) {
      if (call.tag?.tag !== tag || context.results.get(call.id) === INTERRUPTED_RESULT) continue;
      next = Math.max(next, call.tag.step + 1);
    }
    if (message.textTag?.tag === tag) next = Math.max(next, message.textTag.step + 1);
  }
  return next;
}

/** Work that came in at `index` is over once a session-ending marker or its cancellation follows. */
function closedAfter(context: Context, index: number, taskId: string | null): boolean {
  return context.messages
    .slice(index + 1)
    .some(
      (message) =>
        message.marker ||
        (taskId !== null && message.input?.kind === "task-cancelled" && message.input.taskId === taskId),
    );
}

function toolProperties(request: FakeChatRequest, name: string): string[] {
  const parameters = request.tools?.find((tool) => tool.function.name === name)?.function.parameters as
    | { properties?: object }
    | undefined;
  return Object.keys(parameters?.properties ?? {});
}

/** A webhook body as the scenario sends it: `{"name": …, "work": "W1"?, "ping": "p1"}`, pretty-printed by the engine. */
function webhookBody(body: string): { work?: string; ping?: string } {
  try {
    const parsed = JSON.parse(body) as { work?: unknown; ping?: unknown };
    return {
      work: typeof parsed.work === "string" ? parsed.work : undefined,
      ping: typeof parsed.ping === "string" ? parsed.ping : undefined,
    };
  } catch {
    return {};
  }
}
