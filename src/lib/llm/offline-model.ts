import "server-only";
import { AWAITING_APPROVAL_RESULT, type LogInput, parseLogInput } from "@/lib/core/formats";
import type {
  EmbeddingModelV4,
  EmbeddingModelV4CallOptions,
  EmbeddingModelV4Result,
  JSONSchema7,
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FinishReason,
  LanguageModelV4GenerateResult,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4StreamResult,
  LanguageModelV4ToolResultOutput,
  LanguageModelV4Usage,
} from "@ai-sdk/provider";
import { CUT_ANSWER_NOTE, EMPTY_ANSWER_NOTE, TOOL_CALL_AS_TEXT_NOTE } from "@/lib/core/prompts";
import { separatedPrompt } from "./alternating-prompt";
import { answeringSentences, dealQuestions, PAGES_PER_QUESTION, questionsOf } from "./offline-research";

/** What the person reads in chat when no LLM is configured and the message asks for no work. */
export const OFFLINE_EXPLANATION =
  "I'm Cadre's built-in offline model, so I can't think for real: no LLM is configured. " +
  "Set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server) to talk to a real model. " +
  "I can still hand work to the team: ask me to research something.";

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
const TASK_WORDS = /\btask\b|research|find|investigate|look|monitor|analy|track|compare|summar|check|report/i;
/** A task that asks to be asked ("ask me first", "ask the person"): the lead puts a question to the person. */
const ASK_PERSON_WORDS = /\bask (?:me|the person)\b/i;
const CHAT_WORK_WORDS = /research|find out|investigate|look into|monitor|analy|track|compare|\bdig\b/i;

type Decision = { kind: "text"; text: string } | { kind: "tool"; toolName: string; args: Record<string, unknown> };
type ToolMessage = Extract<LanguageModelV4Message, { role: "tool" }>;

/**
 * A deterministic stand-in for an LLM, used when no provider is configured. It reads only the
 * prompt, the offered tools and the response format, and drives the real tools through the
 * product's flows (search → read the first result's page → record → report → brief), so
 * every page works with no network. A task that lists its questions is researched question by
 * question (see researchStep), so what the team finds depends on what the web says.
 */
export class OfflineModel implements LanguageModelV4 {
  readonly specificationVersion = "v4" as const;
  readonly provider = "cadre";
  readonly modelId = "offline";
  readonly supportedUrls: Record<string, RegExp[]> = {};

  async doGenerate(options: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> {
    throwIfAborted(options.abortSignal);
    // The log's inputs one by one, as they were before the request joined adjacent ones.
    const decision = decide({ ...options, prompt: withoutAnswersToRetry(separatedPrompt(options.prompt)) });
    const promptChars = options.prompt.reduce((sum, message) => sum + messageText(message).length, 0);
    if (decision.kind === "text") {
      return result([{ type: "text", text: decision.text }], "stop", promptChars, decision.text.length);
    }
    const input = JSON.stringify(decision.args);
    // Ids must differ across the calls of one conversation (stored results are matched by id),
    // yet stay reproducible: derive them from the prompt that produced the call.
    const toolCallId = `offline-${hash(`${options.prompt.length}:${promptChars}:${JSON.stringify(options.prompt)}`)}`;
    return result(
      [{ type: "tool-call", toolCallId, toolName: decision.toolName, input }],
      "tool-calls",
      promptChars,
      input.length,
    );
  }

  async doStream(options: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamResult> {
    const generated = await this.doGenerate(options);
    const parts: LanguageModelV4StreamPart[] = [
      { type: "stream-start", warnings: [] },
      { type: "response-metadata", id: "offline-response", modelId: this.modelId, timestamp: new Date(0) },
    ];
    for (const content of generated.content) {
      if (content.type === "text") {
        parts.push({ type: "text-start", id: "text-0" });
        for (const delta of wordChunks(content.text)) parts.push({ type: "text-delta", id: "text-0", delta });
        parts.push({ type: "text-end", id: "text-0" });
      } else if (content.type === "tool-call") {
        parts.push(content);
      }
    }
    parts.push({ type: "finish", finishReason: generated.finishReason, usage: generated.usage });
    const signal = options.abortSignal;
    return {
      stream: new ReadableStream<LanguageModelV4StreamPart>({
        pull(controller) {
          if (signal?.aborted) return controller.error(abortError());
          const part = parts.shift();
          if (part) controller.enqueue(part);
          else controller.close();
        },
      }),
    };
  }
}

/** True for the offline model, also when a bundler has loaded this module twice. */
export function isOfflineModel(model: unknown): boolean {
  if (model instanceof OfflineModel) return true;
  if (typeof model !== "object" || model === null) return false;
  return Reflect.get(model, "provider") === "cadre" && Reflect.get(model, "modelId") === "offline";
}

/** The offline embedding's length: fixed, so vectors stored by one version compare with the next. */
export const OFFLINE_EMBEDDING_DIMENSIONS = 256;

/**
 * A deterministic stand-in for an embedding model, used when no provider is configured (or
 * EMBEDDING_MODEL=offline): recall by meaning works with no network. It knows no synonyms; it
 * sees shared word stems and shared pieces of words ("battery" / "batteries", "analysis" /
 * "analyze"), so it finds what a search shares only in part with a fact, which full-text search
 * (every word must match) misses.
 */
export class OfflineEmbeddingModel implements EmbeddingModelV4 {
  readonly specificationVersion = "v4" as const;
  readonly provider = "cadre";
  readonly modelId = "offline";
  readonly maxEmbeddingsPerCall = 2048;
  readonly supportsParallelCalls = true;

  async doEmbed(options: EmbeddingModelV4CallOptions): Promise<EmbeddingModelV4Result> {
    throwIfAborted(options.abortSignal);
    const chars = options.values.reduce((sum, value) => sum + value.length, 0);
    return {
      embeddings: options.values.map(offlineEmbedding),
      usage: { tokens: Math.ceil(chars / 4) },
      warnings: [],
    };
  }
}

/** Words that say little about what a fact is about. */
const STOP_WORDS = new Set(
  "a an and are as at be been but by can could did do does for from had has have how in into is it its may might more most of on or our so than that the their them then there these they this those to was we were what when where which while who will with would".split(
    " ",
  ),
);

/** A word without its common English endings: "batteries" → "battery", "reached" → "reach". */
function stem(word: string): string {
  if (/^\d/.test(word) || word.length <= 3) return word;
  if (word.endsWith("ies") && word.length > 4) return `${word.slice(0, -3)}y`;
  if (word.endsWith("sses")) return word.slice(0, -2);
  if (word.endsWith("ing") && word.length > 5) return word.slice(0, -3);
  if (word.endsWith("ed") && word.length > 4) return word.slice(0, -2);
  if (word.endsWith("ly") && word.length > 4) return word.slice(0, -2);
  if (word.endsWith("s") && !/(ss|us|is)$/.test(word)) return word.slice(0, -1);
  return word;
}

/**
 * The text's features, hashed into OFFLINE_EMBEDDING_DIMENSIONS buckets with a sign each (so
 * collisions cancel out on average) and normalized: every stem (a number only as itself), and
 * the three- and four-letter pieces of each longer stem, weighted so a word counts about as
 * much through its pieces as through itself.
 */
export function offlineEmbedding(text: string): number[] {
  const vector = new Array<number>(OFFLINE_EMBEDDING_DIMENSIONS).fill(0);
  const add = (feature: string, weight: number) => {
    let h = 0x811c9dc5;
    for (let i = 0; i < feature.length; i++) h = Math.imul(h ^ feature.charCodeAt(i), 0x01000193);
    const bucket = (h >>> 0) % OFFLINE_EMBEDDING_DIMENSIONS;
    vector[bucket]! += (h & 0x80000000 ? -1 : 1) * weight;
  };
  const words = text
    .toLowerCase()
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .match(/[\p{L}\p{N}]+(?:[.,]\d+)*/gu);
  for (const word of words ?? []) {
    if (STOP_WORDS.has(word)) continue;
    const base = stem(word);
    add(`w:${base}`, 1);
    if (/^\d/.test(base) || base.length < 4) continue;
    const padded = `<${base}>`;
    const pieces: string[] = [];
    for (const n of [3, 4]) for (let i = 0; i + n <= padded.length; i++) pieces.push(padded.slice(i, i + n));
    for (const piece of pieces) add(`g:${piece}`, 1.5 / Math.sqrt(pieces.length));
  }
  const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
  return norm > 0 ? vector.map((value) => value / norm) : vector;
}

/** The engine's notes that ask again for an answer that was no result (empty, cut, a tool call as text). */
const ASKED_AGAIN = new Set([EMPTY_ANSWER_NOTE, CUT_ANSWER_NOTE, TOOL_CALL_AS_TEXT_NOTE]);
/** What a call whose arguments did not parse gets back (see describeToolError): send them again, up to ARGUMENT_RETRIES times. */
const ARGUMENT_RETRIES = 3;
const ARGUMENTS_REFUSED = /^Error: (?:the arguments for \S+ are not a valid JSON object|invalid arguments for )/;

/**
 * The prompt as it was before an answer that did not count: a trailing note that asks for the
 * answer again, with the answer it refers to; and calls whose arguments were refused (a few times). So
 * the offline model goes on from where it was, as a model that reads the note or the error
 * does, instead of taking the note for the person's words or the error for done work. Its own
 * answers are never empty or cut, but a server between it and the engine may make them so
 * (eval/lib/misbehaving-relay.ts).
 */
function withoutAnswersToRetry(prompt: LanguageModelV4Prompt): LanguageModelV4Prompt {
  let end = prompt.length;
  while (end > 0 && prompt[end - 1]!.role === "user" && ASKED_AGAIN.has(messageText(prompt[end - 1]!).trim())) {
    end -= 1;
    const answer = prompt[end - 1];
    if (answer?.role === "assistant" && !answer.content.some((part) => part.type === "tool-call")) end -= 1;
  }
  const refused = (at: number) => {
    const [call, results] = [prompt[at - 1], prompt[at]];
    return (
      call?.role === "assistant" &&
      results?.role === "tool" &&
      results.content.every((part) => part.type === "tool-result" && ARGUMENTS_REFUSED.test(outputText(part.output)))
    );
  };
  // A few times in a row; refused again, the call is given up as before.
  let refusals = 0;
  while (refused(end - 1 - 2 * refusals)) refusals += 1;
  if (refusals <= ARGUMENT_RETRIES) end -= 2 * refusals;
  return end === prompt.length ? prompt : prompt.slice(0, end);
}

function decide(options: LanguageModelV4CallOptions): Decision {
  const { prompt } = options;
  if (options.responseFormat?.type === "json") {
    return {
      kind: "text",
      text: JSON.stringify(structuredAnswer(options.responseFormat.schema, lastUserText(prompt))),
    };
  }
  const last = prompt.at(-1);
  const wantsSummary = /summar/i.test(systemText(prompt)) || /summar/i.test(lastUserText(prompt));
  // A summary asked for as the conversation's next turn offers its tools, none of which may be called.
  if (wantsSummary && (!options.tools?.length || options.toolChoice?.type === "none"))
    return { kind: "text", text: summary(prompt) };
  if (last?.role === "tool") return afterToolResults(options, last);
  if (last?.role === "user") return answerUser(options, messageText(last));
  return { kind: "text", text: "Nothing to do." };
}

/** The next step of a chain once the previous step's tools have answered. */
function afterToolResults(options: LanguageModelV4CallOptions, message: ToolMessage): Decision {
  const results = message.content.flatMap((part) => (part.type === "tool-result" ? [part] : []));
  // A call the person denied (or that was withdrawn) is not tried again.
  const refused = results.find((part) => /^(Denied by the person|\(not run)/.test(outputText(part.output)));
  if (refused)
    return {
      kind: "text",
      text: `I did not run ${refused.toolName}: ${truncate(outputText(refused.output), 300).replace(/\.$/, "")}. I will not try it again.`,
    };
  const failed = results.find(
    (part) => part.output.type.startsWith("error") || part.output.type === "execution-denied",
  );
  if (failed)
    return { kind: "text", text: `The ${failed.toolName} tool failed: ${truncate(outputText(failed.output), 300)}` };
  const delegating = results.some((part) => part.toolName === "delegateToAgent");
  const research = researchStep(options) ?? (delegating ? nextDelegation(options) : null);
  if (research) return research;
  const names = results.map((part) => part.toolName);
  const searched = results.find((part) => part.toolName === "tavilySearch");
  // A search found pages: read the first one before recording anything.
  const firstUrl = searched ? firstResultUrl(searched.output) : undefined;
  if (firstUrl && offered(options, "readWebPage")) return tool("readWebPage", { url: firstUrl });
  const read = results.find((part) => part.toolName === "readWebPage");
  const readFinding = read
    ? (pageFinding(read.output) ?? searchFindingWithSource(options.prompt) ?? truncate(outputText(read.output), 300))
    : undefined;
  if (searched && offered(options, "addKnowledgeItem")) {
    // Without a search key there is no finding to record, only the lesson that search is off.
    if (/not configured/i.test(outputText(searched.output))) {
      const query = lastToolInput(options.prompt, "tavilySearch")?.query;
      return tool("addKnowledgeItem", {
        type: "lesson",
        content: `${SEARCH_OFF_FINDING} for "${typeof query === "string" ? query : "this task"}": set TAVILY_API_KEY for sourced findings.`,
        confidence: 1,
      });
    }
    return tool("addKnowledgeItem", {
      type: "fact",
      content: truncate(firstFinding(searched.output), 300),
      confidence: 0.6,
    });
  }
  if (readFinding && offered(options, "addKnowledgeItem")) {
    return tool("addKnowledgeItem", {
      type: "fact",
      content: readFinding,
      confidence: pageFinding(read!.output) ? 0.7 : 0.6,
    });
  }
  if (searched || read || names.includes("addKnowledgeItem")) {
    const recorded = names.includes("addKnowledgeItem")
      ? lastToolInput(options.prompt, "addKnowledgeItem")?.content
      : undefined;
    const findings =
      typeof recorded === "string" ? recorded : searched ? outputText(searched.output) : (readFinding ?? "");
    if (offered(options, "reportToLead")) {
      return tool("reportToLead", {
        result: truncate(isSearchOff(findings) ? `No findings: ${lowerFirst(findings)}` : `Findings: ${findings}`, 500),
      });
    }
    if (offered(options, "createInboxItem")) {
      return tool(
        "createInboxItem",
        demoBriefing(
          briefingTopic(options.prompt) ?? taskTitle(lastUserText(options.prompt)),
          findings,
          "What I found",
        ),
      );
    }
    return { kind: "text", text: `Recorded what I found: ${truncate(findings, 300)}` };
  }
  if (names.includes("reportToLead")) return { kind: "text", text: "Reported to the lead." };
  if (names.includes("createInboxItem")) return { kind: "text", text: "Briefing sent." };
  if (names.includes("delegateToAgent")) {
    const agentId = lastToolInput(options.prompt, "delegateToAgent")?.agentId;
    const name = (typeof agentId === "string" && agentName(systemText(options.prompt), agentId)) || "the team";
    return { kind: "text", text: `Delegated the task to ${name}; I will brief you when the report arrives.` };
  }
  if (names.includes("createTask")) {
    const title = lastToolInput(options.prompt, "createTask")?.title;
    return {
      kind: "text",
      text: `I've created a task for the team: ${typeof title === "string" ? title : "new task"}.`,
    };
  }
  if (names.includes("answerSubordinate")) return { kind: "text", text: "Answered the subordinate." };
  if (names.includes("askPerson")) return { kind: "text", text: "Asked the person; waiting for their answer." };
  if (names.includes("requestInput")) return { kind: "text", text: "Asked the lead; waiting for an answer." };
  const shown = results.map((part) => `${part.toolName}: ${truncate(outputText(part.output), 300)}`).join("\n");
  return { kind: "text", text: shown ? `Here is what I found.\n${shown}` : "Done." };
}

function answerUser(options: LanguageModelV4CallOptions, text: string): Decision {
  const system = systemText(options.prompt);
  const looksLikeTask = TASK_WORDS.test(text);
  const input = parseLogInput(text);
  if (input?.kind === "report" && offered(options, "createInboxItem")) {
    const together = briefingOnAllReports(options.prompt, input);
    if (together) return together;
    const findings = input.result.replace(/^(?:No findings|Findings): /, "");
    return tool(
      "createInboxItem",
      demoBriefing(
        briefingTopic(options.prompt) ?? `what ${input.agentName} reported`,
        findings,
        "What the team found",
      ),
    );
  }
  if (input?.kind === "failed" || input?.kind === "cancelled" || input?.kind === "removed") {
    // The last of a batch that did not finish: the others' reports are still briefed.
    const together =
      input.kind !== "removed" && offered(options, "createInboxItem")
        ? briefingOnAllReports(options.prompt, input)
        : null;
    if (together?.kind === "tool") return together;
    const why =
      input.kind === "failed"
        ? `could not finish its task: ${input.reason}`
        : input.kind === "cancelled"
          ? "had its task cancelled."
          : "was removed from the team.";
    return { kind: "text", text: `${input.agentName} ${why}` };
  }
  if (input?.kind === "question" && offered(options, "answerSubordinate")) {
    return tool("answerSubordinate", {
      questionId: input.questionId,
      answer: "Offline model: use your best judgement and report what you find.",
    });
  }
  if (input?.kind === "answer" && offered(options, "tavilySearch"))
    return tool("tavilySearch", { query: truncate(input.answer, 120) });
  if (input?.kind === "person-answer") {
    // The person's answer is the work: hand it on like a task.
    const subordinate = firstSubordinateId(system);
    if (offered(options, "delegateToAgent") && subordinate) {
      return tool("delegateToAgent", {
        agentId: subordinate,
        title: truncate(input.answer, 80),
        description: `The person answered: ${input.answer}`,
      });
    }
    if (offered(options, "tavilySearch")) return tool("tavilySearch", { query: truncate(input.answer, 120) });
    return { kind: "text", text: `The person answered: ${truncate(input.answer, 300)}` };
  }
  // The person decided on calls that waited while the log moved on: go on from their results.
  if (/^The person decided on the calls you were waiting for/.test(text)) {
    const results = options.prompt.findLast((message) => message.role === "tool");
    // The calls still read as waiting where they stand (the log moved on): the note says what came of them.
    const waiting =
      results?.role === "tool" &&
      results.content.some(
        (part) => part.type === "tool-result" && outputText(part.output) === AWAITING_APPROVAL_RESULT,
      );
    if (results?.role === "tool" && !waiting) return afterToolResults(options, results);
    return {
      kind: "text",
      text: /: Denied by the person/.test(text)
        ? "The person denied the call; I will not try it again."
        : "Noted the person's decisions.",
    };
  }
  if (ASK_PERSON_WORDS.test(text) && offered(options, "askPerson") && (!input || input.kind === "task")) {
    return tool("askPerson", { question: `Before I start on "${taskTitle(text)}": what matters most to you here?` });
  }
  if (input?.kind === "task-cancelled") return { kind: "text", text: "Dropped the cancelled task." };
  if (/no briefing|decide whether to brief/i.test(text)) return { kind: "text", text: "No briefing needed." };
  if (input?.kind === "task") {
    const research = researchStep(options) ?? nextDelegation(options);
    if (research) return research;
  }
  const subordinateId = firstSubordinateId(system);
  if (offered(options, "delegateToAgent") && subordinateId && looksLikeTask) {
    return tool("delegateToAgent", {
      agentId: subordinateId,
      title: taskTitle(text),
      description: taskDescription(text),
    });
  }
  const canPassOn = offered(options, "reportToLead") || offered(options, "createInboxItem");
  if (offered(options, "tavilySearch") && looksLikeTask && canPassOn) {
    return tool("tavilySearch", { query: truncate(taskTitle(text), 120) });
  }
  if (offered(options, "createTask") && CHAT_WORK_WORDS.test(text)) {
    return tool("createTask", { title: truncate(text.trim(), 80), description: text });
  }
  return { kind: "text", text: OFFLINE_EXPLANATION };
}

// Research by questions: a task that lists its questions ("- How many …?") is dealt out by a
// lead among its subordinates, and each subordinate searches every question of its share,
// reads the first results and reports what they say, with their addresses. Every step is
// read from the prompt, so the same web gives the same briefing on every run.

type TaskInput = Extract<LogInput, { kind: "task" }>;
type LoggedCall = { toolName: string; input: Record<string, unknown>; output?: LanguageModelV4ToolResultOutput };

/** The newest task in the log and where it is. */
function latestTask(prompt: LanguageModelV4Prompt): { input: TaskInput; index: number } | undefined {
  for (let index = prompt.length - 1; index >= 0; index--) {
    const message = prompt[index]!;
    if (message.role !== "user") continue;
    const input = parseLogInput(messageText(message));
    if (input?.kind === "task") return { input, index };
  }
  return undefined;
}

/** The tool calls made after the message at `index`, in order, each with its result once it has one. */
function callsSince(prompt: LanguageModelV4Prompt, index: number): LoggedCall[] {
  const calls: LoggedCall[] = [];
  const byId = new Map<string, LoggedCall>();
  for (const message of prompt.slice(index + 1)) {
    if (message.role === "assistant") {
      for (const part of message.content) {
        if (part.type !== "tool-call") continue;
        const call: LoggedCall = { toolName: part.toolName, input: asRecord(part.input) ?? {} };
        calls.push(call);
        byId.set(part.toolCallId, call);
      }
    } else if (message.role === "tool") {
      for (const part of message.content) {
        const call = part.type === "tool-result" ? byId.get(part.toolCallId) : undefined;
        if (call && part.type === "tool-result") call.output = part.output;
      }
    }
  }
  return calls;
}

/**
 * A subordinate's next step on a task that lists its questions: for each question in turn,
 * search, read the first results, record what each page says that answers it (with its
 * address), and when all are done report every finding. Null for a lead, or a task that
 * lists no questions.
 */
function researchStep(options: LanguageModelV4CallOptions): Decision | null {
  if (!offered(options, "reportToLead")) return null;
  const task = latestTask(options.prompt);
  const questions = task ? questionsOf(task.input.description) : [];
  if (!task || questions.length === 0) return null;
  const calls = callsSince(options.prompt, task.index);
  const last = calls.at(-1);
  if (last?.toolName === "reportToLead") return { kind: "text", text: "Reported to the lead." };
  const searches = calls.filter((call) => call.toolName === "tavilySearch");
  if (last?.toolName === "readWebPage" && last.output && offered(options, "addKnowledgeItem")) {
    // The question of the latest search (a search beyond the list stays with the last question).
    const finding = answerOnPage(
      last.output,
      questions[Math.min(Math.max(0, searches.length - 1), questions.length - 1)]!,
    );
    if (finding)
      return tool("addKnowledgeItem", {
        type: "fact",
        content: finding.content,
        confidence: 0.7,
        sourceUrl: finding.url,
      });
  }
  const latestSearch = searches.at(-1);
  if (latestSearch?.output && offered(options, "readWebPage")) {
    const read = new Set(calls.filter((call) => call.toolName === "readWebPage").map((call) => call.input.url));
    const next = resultUrls(latestSearch.output)
      .slice(0, PAGES_PER_QUESTION)
      .find((url) => !read.has(url));
    if (next) return tool("readWebPage", { url: next });
  }
  if (searches.length < questions.length && offered(options, "tavilySearch"))
    return tool("tavilySearch", { query: truncate(questions[searches.length]!, 400) });
  const findings = calls.flatMap((call) =>
    call.toolName === "addKnowledgeItem" && typeof call.input.content === "string" ? [call.input.content] : [],
  );
  return tool("reportToLead", {
    result: findings.length
      ? `Findings:\n${findings.map((finding) => `- ${finding}`).join("\n")}`
      : `No findings: nothing I read answers ${questions.map((question) => `"${question}"`).join(" or ")}.`,
  });
}

/** What a page read says in answer to a question, with its address; undefined when it says nothing to it. */
function answerOnPage(
  output: LanguageModelV4ToolResultOutput,
  question: string,
): { content: string; url: string } | undefined {
  const page = output.type === "json" ? asRecord(output.value) : undefined;
  if (typeof page?.url !== "string" || typeof page.content !== "string") return undefined;
  const sentences = answeringSentences(page.content, question);
  if (sentences.length === 0) return undefined;
  return { content: `${truncate(sentences.join(" "), 600)} (source: ${page.url})`, url: page.url };
}

/** The http(s) addresses of a search's results, in their order. */
function resultUrls(output: LanguageModelV4ToolResultOutput): string[] {
  const results = output.type === "json" ? asRecord(output.value)?.results : undefined;
  if (!Array.isArray(results)) return [];
  return results.flatMap((result) => {
    const url = asRecord(result)?.url;
    return typeof url === "string" && /^https?:\/\//i.test(url) ? [url] : [];
  });
}

/** A task's questions dealt out among the subordinates: one delegation each; none unless both are several. */
function delegationPlan(
  task: TaskInput,
  subordinates: readonly string[],
): { agentId: string; title: string; description: string }[] {
  const questions = questionsOf(task.description);
  if (questions.length < 2 || subordinates.length < 2) return [];
  return dealQuestions(questions, subordinates.length).map((share, i) => ({
    agentId: subordinates[i]!,
    title: truncate(share[0]!, 120),
    description: [
      `Questions from "${truncate(task.title, 80)}":`,
      ...share.map((question) => `- ${question}`),
      "",
      "Search the web, read the sources that matter, and report each finding with its source url.",
    ].join("\n"),
  }));
}

/** A lead's next delegation of a task whose questions it deals out, then a line saying so. Null for any other task. */
function nextDelegation(options: LanguageModelV4CallOptions): Decision | null {
  if (!offered(options, "delegateToAgent")) return null;
  const system = systemText(options.prompt);
  const task = latestTask(options.prompt);
  const plan = task ? delegationPlan(task.input, subordinateIds(system)) : [];
  if (!task || plan.length === 0) return null;
  const delegated = callsSince(options.prompt, task.index).filter((call) => call.toolName === "delegateToAgent");
  if (delegated.length < plan.length) return tool("delegateToAgent", plan[delegated.length]!);
  const names = plan.map((part) => agentName(system, part.agentId) ?? "a subordinate");
  return {
    kind: "text",
    text: `Handed the questions to ${names.join(" and ")}; I will brief you when their reports are in.`,
  };
}

/** The task id a delegation's result names ({ delegated: true, taskId }), as json or as its text. */
function delegatedTaskId(output: LanguageModelV4ToolResultOutput): string | undefined {
  let value: unknown = output.type === "json" ? output.value : undefined;
  if (value === undefined && output.type === "text") {
    try {
      value = JSON.parse(output.value);
    } catch {
      return undefined;
    }
  }
  const taskId = asRecord(value)?.taskId;
  return typeof taskId === "string" ? taskId : undefined;
}

/**
 * A lead that dealt one task's questions out to several subordinates briefs once, on all
 * their reports: a report while others are still out is only noted; the last one brings the
 * briefing, the reports in the order the questions were handed out (a task that did not finish
 * ends its batch too). Null for the report of a lone delegation, or a batch nobody finished.
 */
function briefingOnAllReports(
  prompt: LanguageModelV4Prompt,
  report: Extract<LogInput, { kind: "report" | "failed" | "cancelled" }>,
): Decision | null {
  const batches = new Map<number, string[]>();
  const callTask = new Map<string, number>();
  const outcomes = new Map<string, { agentName: string; text: string }>();
  let task = -1;
  prompt.forEach((message, index) => {
    if (message.role === "user") {
      const input = parseLogInput(messageText(message));
      if (input?.kind === "task") task = index;
      if (input?.kind === "report" && input.taskId)
        outcomes.set(input.taskId, {
          agentName: input.agentName,
          text: input.result.replace(/^(?:No findings|Findings):\s*/, ""),
        });
      if ((input?.kind === "failed" || input?.kind === "cancelled") && input.taskId)
        outcomes.set(input.taskId, { agentName: input.agentName, text: `Did not finish: ${input.reason}` });
    }
    for (const part of message.role === "assistant" ? message.content : [])
      if (part.type === "tool-call" && part.toolName === "delegateToAgent") callTask.set(part.toolCallId, task);
    for (const part of message.role === "tool" ? message.content : []) {
      const at = part.type === "tool-result" ? callTask.get(part.toolCallId) : undefined;
      const subtask = at !== undefined && part.type === "tool-result" ? delegatedTaskId(part.output) : undefined;
      if (at !== undefined && subtask) batches.set(at, [...(batches.get(at) ?? []), subtask]);
    }
  });
  const batch = [...batches.values()].find((ids) => report.taskId !== null && ids.includes(report.taskId));
  if (!batch || batch.length < 2) return null;
  const missing = batch.filter((id) => !outcomes.has(id)).length;
  if (missing > 0)
    return {
      kind: "text",
      text: `Noted ${report.agentName}'s report; waiting for ${missing === 1 ? "one more" : `${missing} more`} before I brief.`,
    };
  const reports = batch.map((id) => outcomes.get(id)!);
  // Nobody finished: nothing to brief.
  if (reports.every((each) => each.text.startsWith("Did not finish: "))) return null;
  const briefing = demoBriefing(
    briefingTopic(prompt) ?? "what the team found",
    reports.map((each) => `### From ${each.agentName}\n\n${each.text}`).join("\n\n"),
    "What the team found",
  );
  const first = reports.map((each) => each.text.replace(/^-\s*/, "")).find(Boolean) ?? "";
  return tool("createInboxItem", {
    ...briefing,
    summary: `${reports.map((each) => each.agentName).join(" and ")} reported. ${firstSentence(first)}`,
  });
}

/**
 * Structured output that validates against the usual schemas: an instructions prompt written
 * from the mission, otherwise the emptiest value the schema allows (no knowledge items, etc.).
 */
function structuredAnswer(schema: JSONSchema7 | undefined, request: string): unknown {
  if (schema?.properties && "instructions" in schema.properties) {
    const mission =
      /mission\s*:\s*(.+)/i.exec(request)?.[1]?.trim() || truncate(request.trim(), 300) || "the team's mission";
    return {
      instructions: [
        `You lead a team whose mission is: ${mission}`,
        "- Break the mission into concrete tasks and delegate each to the subordinate best suited to it.",
        "- Search the web and record what you learn as knowledge items, with an honest confidence.",
        "- When reports arrive, brief the person: a one-sentence summary first, then the details and sources.",
        "- Brief only when there is something new worth reading; otherwise keep working quietly.",
      ].join("\n"),
    };
  }
  return emptyValue(schema);
}

function emptyValue(schema: JSONSchema7 | boolean | undefined): unknown {
  if (typeof schema !== "object") return {};
  if (schema.enum?.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "array":
      return [];
    case "string":
      return "";
    case "number":
    case "integer":
      return 0;
    case "boolean":
      return false;
    case "null":
      return null;
    default:
      return Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([key, value]) => [key, emptyValue(value)]),
      );
  }
}

function summary(prompt: LanguageModelV4Prompt): string {
  const lines = prompt
    .filter((message) => message.role !== "system")
    .map((message) => truncate(messageText(message).replace(/\s+/g, " ").trim(), 200))
    .filter(Boolean);
  return truncate(`Summary (offline model): ${lines.join("\n- ")}`, 1500);
}

/**
 * The agent ids in the system prompt that name subordinates: "- Scout (id: …)". Only the
 * words before the id are judged, since a subordinate's focus may well say "you are".
 */
function subordinateIds(system: string): string[] {
  const ids: string[] = [];
  for (const line of system.split("\n")) {
    const match = UUID.exec(line);
    const before = match ? line.slice(0, match.index) : "";
    if (match && !/lead|you are|your id|team|task/i.test(before) && !ids.includes(match[0])) ids.push(match[0]);
  }
  return ids;
}

function firstSubordinateId(system: string): string | undefined {
  return subordinateIds(system)[0];
}

/** "- Scout (id: 1b2…)" → "Scout". */
function agentName(system: string, agentId: string): string | undefined {
  const line = system.split("\n").find((l) => l.includes(agentId));
  return line ? /^[\s\-*•]*([^(:\n]+?)\s*[(:]/.exec(line)?.[1] : undefined;
}

/** The arguments of the most recent call to a tool, as the prompt carries them (an object). */
function lastToolInput(prompt: LanguageModelV4Prompt, toolName: string): Record<string, unknown> | undefined {
  for (const message of [...prompt].reverse()) {
    if (message.role !== "assistant") continue;
    const call = message.content.findLast((part) => part.type === "tool-call" && part.toolName === toolName);
    const input = call?.type === "tool-call" ? asRecord(call.input) : undefined;
    if (input) return input;
  }
  return undefined;
}

function firstFinding(output: LanguageModelV4ToolResultOutput): string {
  const results = output.type === "json" ? asRecord(output.value)?.results : undefined;
  const first = Array.isArray(results) ? asRecord(results[0]) : undefined;
  if (first) return [first.title, first.content].filter((field) => typeof field === "string").join(": ");
  return outputText(output);
}

/** The first search result's address, when it is a web page's (an http(s) url). */
function firstResultUrl(output: LanguageModelV4ToolResultOutput): string | undefined {
  const results = output.type === "json" ? asRecord(output.value)?.results : undefined;
  const url = Array.isArray(results) ? asRecord(results[0])?.url : undefined;
  return typeof url === "string" && /^https?:\/\//i.test(url) ? url : undefined;
}

/** What a page that was read says, with its address: "Title: the first words… (source: url)". */
function pageFinding(output: LanguageModelV4ToolResultOutput): string | undefined {
  const page = output.type === "json" ? asRecord(output.value) : undefined;
  if (typeof page?.url !== "string" || typeof page.content !== "string") return undefined;
  const title = typeof page.title === "string" ? page.title.trim() : "";
  // The page's own heading usually repeats its title.
  const text = page.content
    .split("\n")
    .map((line) => line.replace(/^#+\s*/, "").trim())
    .filter((line) => line && line !== title)
    .join(" ");
  return withSource([title, text].filter(Boolean).join(": "), page.url);
}

/** The page could not be read: the search result it came from, with its address. */
function searchFindingWithSource(prompt: LanguageModelV4Prompt): string | undefined {
  const searched = lastToolResult(prompt, "tavilySearch");
  const url = searched ? firstResultUrl(searched) : undefined;
  return searched && url ? withSource(firstFinding(searched), url) : undefined;
}

/** A finding short enough to keep, its source always whole. */
function withSource(finding: string, url: string): string {
  const source = ` (source: ${url})`;
  return `${truncate(finding.replace(/\s+/g, " ").trim(), Math.max(80, 300 - source.length))}${source}`;
}

/** The output of the most recent result of a tool in the prompt. */
function lastToolResult(prompt: LanguageModelV4Prompt, toolName: string): LanguageModelV4ToolResultOutput | undefined {
  for (const message of [...prompt].reverse()) {
    if (message.role !== "tool") continue;
    const part = message.content.findLast((p) => p.type === "tool-result" && p.toolName === toolName);
    if (part?.type === "tool-result") return part.output;
  }
  return undefined;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function outputText(output: LanguageModelV4ToolResultOutput): string {
  switch (output.type) {
    case "text":
    case "error-text":
      return output.value;
    case "json":
    case "error-json":
      return typeof output.value === "string" ? output.value : JSON.stringify(output.value);
    case "execution-denied":
      return output.reason ?? "denied";
    case "content":
      return output.value.map((part) => (part.type === "text" ? part.text : "")).join("");
  }
}

function messageText(message: LanguageModelV4Message): string {
  if (message.role === "system") return message.content;
  return message.content
    .map((part) => {
      if (part.type === "text" || part.type === "reasoning") return part.text;
      if (part.type === "tool-call") return JSON.stringify(part.input);
      if (part.type === "tool-result") return outputText(part.output);
      return "";
    })
    .join("\n");
}

function systemText(prompt: LanguageModelV4Prompt): string {
  return prompt
    .filter((message) => message.role === "system")
    .map(messageText)
    .join("\n");
}

/**
 * What a briefing is about: the title of the newest task in the prompt ("Task from the person
 * (task id: …): Research NVDA", or a bare "Task: Research NVDA"); null when there is none.
 */
function briefingTopic(prompt: LanguageModelV4Prompt): string | null {
  for (const message of [...prompt].reverse()) {
    if (message.role !== "user") continue;
    const text = messageText(message);
    const input = parseLogInput(text);
    if (input?.kind === "task") return truncate(input.title, 80);
    if (!input && /^\s*task\b/i.test(text)) return taskTitle(text);
  }
  return null;
}

/** How the offline model words its lesson when search is off; a report and a briefing recognise it. */
const SEARCH_OFF_FINDING = "Web search is not configured, so nothing was looked up";

function isSearchOff(findings: string): boolean {
  return findings.toLowerCase().startsWith(SEARCH_OFF_FINDING.toLowerCase());
}

/**
 * A briefing that says what it is: a demo by the built-in offline model, which repeats what
 * the team recorded (or that nothing could be looked up) and thinks about none of it.
 */
function demoBriefing(
  topic: string,
  findings: string,
  heading: string,
): { title: string; summary: string; content: string } {
  const searchOff = isSearchOff(findings);
  const found = searchOff
    ? `Nothing: web search is not configured (TAVILY_API_KEY), so no sources were searched for "${topic}".`
    : findings;
  return {
    title: truncate(`Demo briefing: ${topic}`, 120),
    summary: searchOff
      ? "A demo by the built-in offline model: web search is not configured, so nothing was looked up."
      : firstSentence(findings),
    content: [
      "> A demo briefing by Cadre's built-in offline model: it repeats what the team recorded and does not think about it. " +
        "Connect a model (OPENAI_API_KEY, or OPENAI_BASE_URL and LLM_MODEL) for real briefings.",
      `## ${heading}`,
      found,
    ].join("\n\n"),
  };
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

function lastUserText(prompt: LanguageModelV4Prompt): string {
  const user = prompt.findLast((message) => message.role === "user");
  return user ? messageText(user) : "";
}

function offered(options: LanguageModelV4CallOptions, name: string): boolean {
  return options.tools?.some((t) => t.name === name) ?? false;
}

/**
 * "Task: Research NVDA" or "Task from your lead (task id: …): Research NVDA\n\nmore…" →
 * "Research NVDA"; without a "Task" line, the first line of the text.
 */
function taskTitle(text: string): string {
  // A task taken up again after its session died: "(Resuming task ID: Title. Nothing you started…)".
  const resumed = /^\(Resuming task [^:]+: ([\s\S]*?)\. Nothing you started/.exec(text.trim())?.[1]?.trim();
  if (resumed) return truncate(resumed, 80);
  const fromTaskLine = /^\s*task\b(?:[^:\n(]*\([^)\n]*\))?[^:\n]*:\s*(.+)$/im.exec(text)?.[1]?.trim();
  return truncate(fromTaskLine || text.trim().split("\n")[0] || text.trim(), 80);
}

/** The body of a task message without its "Task from … (task id: …): Title" line. */
function taskDescription(text: string): string {
  // A resumed task is briefed by its title, not by the engine's resume note (which names the task's id).
  if (/^\(Resuming task /.test(text.trim())) return taskTitle(text);
  const [first, ...rest] = text.trim().split("\n");
  if (!/^\s*task\b/i.test(first ?? "")) return text.trim();
  return rest.join("\n").trim() || taskTitle(text);
}

function firstSentence(text: string): string {
  const sentence = /^[\s\S]*?[.!?](?=\s|$)/.exec(text.trim())?.[0] ?? text.trim();
  return truncate(sentence.replace(/\s+/g, " "), 200);
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function tool(toolName: string, args: Record<string, unknown>): Decision {
  return { kind: "tool", toolName, args };
}

/** A few deltas of about four words each, so streaming reads like streaming. */
function wordChunks(text: string): string[] {
  const words = text.match(/\S+\s*/g) ?? [text];
  const chunks: string[] = [];
  for (let i = 0; i < words.length; i += 4) chunks.push(words.slice(i, i + 4).join(""));
  return chunks;
}

function result(
  content: LanguageModelV4Content[],
  unified: LanguageModelV4FinishReason["unified"],
  promptChars: number,
  outputChars: number,
): LanguageModelV4GenerateResult {
  const inputTokens = Math.ceil(promptChars / 4);
  const outputTokens = Math.ceil(outputChars / 4);
  const usage: LanguageModelV4Usage = {
    inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: 0, cacheWrite: undefined },
    outputTokens: { total: outputTokens, text: outputTokens, reasoning: undefined },
  };
  return { content, finishReason: { unified, raw: undefined }, usage, warnings: [] };
}

function hash(text: string): string {
  let h = 0x811c9dc5; // FNV-1a: tiny, stable across processes, good enough to keep ids apart
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(36);
}

function abortError(): DOMException {
  return new DOMException("The operation was aborted.", "AbortError");
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError();
}
