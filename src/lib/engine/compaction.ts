import "server-only";
import { type ModelMessage, ToolChoiceViolationError, type ToolSet } from "ai";
import type { Db } from "@/lib/db/client";
import { appendMessages, getConversationContext, getMessagesSince, type NewMessage } from "@/lib/db/queries/messages";
import type { Message } from "@/lib/db/schema";
import { CadreError } from "@/lib/errors";
import { generateModelText, type ModelCall } from "@/lib/llm/model-call";
import type { ModelChoice } from "@/lib/llm/provider";
import { teamSpendingRecorder } from "@/lib/domain/budgets";
import { getModelProfile } from "@/lib/db/queries/model-profiles";
import { estimateTokens } from "@/lib/llm/token-estimate";
import { toModelMessages } from "./model-messages";
import { COMPACTION_INSTRUCTIONS, COMPACTION_REQUEST, UNWRITTEN_SUMMARY_HEADING } from "@/lib/core/prompts";

// The estimate lives with the model calls, which estimate what a cut-off call was sent (llm/token-estimate.ts).
export { estimateTokens };

/**
 * Where compaction starts: a little under the budget, because the estimate counts the
 * stored messages and the provider's prompt wraps each of them in a few more characters.
 */
function compactionThreshold(budget: number): number {
  return Math.floor(budget * 0.95);
}

/** The largest tool result a model call carries, so one huge page cannot blow the budget. */
function toolResultLimit(budget: number): number {
  return Math.max(400, Math.min(16_000, Math.floor(budget * 4 * 0.25)));
}

export type CompactionOptions = {
  db: Db;
  model: ModelChoice;
  agentId: string;
  /** The agent's team, for the usage row (its current team when not given). */
  teamId?: string | null;
  /** The work session compacting, for its trace; null for the chat. */
  workSessionId?: string | null;
  /** The task the compacted work belongs to (usage.task_id). */
  taskId?: string | null;
  /** Estimated tokens above which the context is compacted. */
  budget: number;
  /** The system prompt the next call carries: it counts against the budget too. */
  instructions: string;
  abortSignal?: AbortSignal;
  /** How long the summary's model call may take; MODEL_TIMEOUT_MS when not given. */
  timeoutMs?: number;
  /** Calls in the context that wait for the person's decision (see approvals.ts). */
  awaitingDecision?: ReadonlySet<string>;
  /** Every call of the conversation held for the person, decided or not (see toModelMessages). */
  heldForPerson?: ReadonlySet<string>;
  /** After a summary was appended (loadContextForCall). */
  onCompacted?: () => void;
  /**
   * What the log must say again right after a summary, appended with it (a work session's note
   * on its open tasks and the one in focus): a summary may leave out what the work is for, and
   * a compaction mid-turn leaves the model nothing else to go on.
   */
  restate?: () => Promise<NewMessage | null>;
  /**
   * The tools the conversation's calls offer: the summary is then asked for as one more request
   * of the conversation (see summaryAsNextTurn). Not given: the log is rendered for a summarizer.
   */
  tools?: ToolSet;
};

/**
 * Renders a context for the summarizer, each message cut so the whole fits the budget. The
 * earlier summary is kept whole (it is a quarter of the budget at most: see
 * generateConversationSummary), so each summary can carry all of the one before; the other
 * messages share what is left.
 */
function renderForSummary(context: readonly Message[], budget: number): string {
  const earlier = context.filter((message) => message.role === "summary");
  const rest = budget * 4 * 0.6 - earlier.reduce((sum, message) => sum + message.content.length, 0);
  const perMessage = Math.max(200, Math.floor(rest / Math.max(1, context.length - earlier.length)));
  const cut = (text: string) => (text.length > perMessage ? `${text.slice(0, perMessage)} …(cut)` : text);
  const toolNames = new Map<string, string>();
  const lines: string[] = [];
  for (const message of context) {
    switch (message.role) {
      case "summary":
        lines.push(`EARLIER SUMMARY:\n${message.content}`);
        break;
      case "user":
        lines.push(`INPUT: ${cut(message.content)}`);
        break;
      case "assistant": {
        const calls = (message.toolCalls ?? []).map((call) => {
          toolNames.set(call.toolCallId, call.toolName);
          return `${call.toolName}(${JSON.stringify(call.args)})`;
        });
        lines.push(`AGENT: ${cut(message.content)}${calls.length ? ` [called ${cut(calls.join(", "))}]` : ""}`);
        break;
      }
      case "tool":
        lines.push(`RESULT of ${toolNames.get(message.toolCallId ?? "") ?? "tool"}: ${cut(message.content)}`);
        break;
    }
  }
  return lines.join("\n\n");
}

async function generateConversationSummary(options: CompactionOptions, context: readonly Message[]): Promise<string> {
  // A summary limited to a quarter of the budget: a longer one would crowd out the work itself.
  const limit = Math.floor(options.budget * 4 * 0.25);
  const cut = (text: string) => (text.length > limit ? `${text.slice(0, limit)} …(cut)` : text);
  if (options.tools && !(await ignoresNoTools(options))) {
    const text = await summaryAsNextTurn(options, context, options.tools);
    if (text) return cut(text);
    // The model answered with a tool call instead (or with nothing): the log rendered for a
    // summarizer, as below, in a request that offers no tool to call.
  }
  const result = await generateModelText(compactionCall(options, context), {
    instructions: `${COMPACTION_INSTRUCTIONS}\n\nThe agent's standing instructions (kept separately, for reference):\n${options.instructions.slice(0, Math.floor(options.budget * 4 * 0.15))}`,
    prompt: `Summarize this work log:\n\n${renderForSummary(context, options.budget)}`,
    maxOutputTokens: Math.max(256, Math.floor(options.budget / 4)),
  });
  return cut(result.text.trim() || fallbackSummary(context, limit));
}

/**
 * The summary when the model gave none (an empty answer, from both requests): not an empty
 * one, which would leave the agent nothing of its work, and not no summary, which would send
 * the next call over the budget. Built from the log: the earlier summary and the latest inputs
 * (the task, the reports), newest first, as much of them as the summary's limit holds.
 */
function fallbackSummary(context: readonly Message[], limit: number): string {
  const parts = [UNWRITTEN_SUMMARY_HEADING];
  const earlier = context.find((message) => message.role === "summary");
  if (earlier) parts.push(`Earlier summary:\n${earlier.content.slice(0, Math.floor(limit / 2))}`);
  const inputs = context.filter((message) => message.role === "user").reverse();
  // Each part after the first costs its two newlines too.
  let room = limit - parts.join("\n\n").length - 2;
  for (const input of inputs) {
    if (room <= 0) break;
    const line = `Input: ${input.content}`.slice(0, room);
    parts.push(line);
    room -= line.length + 2;
  }
  return parts.join("\n\n");
}

/**
 * Whether the model was seen to call a tool under `tool_choice: "none"` when it was checked
 * (its profile, model_profiles): then the summary goes straight to the summarizer that
 * offers no tools, rather than paying for a request whose answer would be a tool call. No
 * profile, or one that proves nothing: the cache-friendly request is tried first.
 */
async function ignoresNoTools(options: CompactionOptions): Promise<boolean> {
  const baseUrl = options.model.serverUrl;
  if (!baseUrl) return false;
  const profile = await getModelProfile(options.db, { model: options.model.modelId, baseUrl });
  return profile?.respectsNoTools === false;
}

/** Who a compaction's model call is for: its usage row and its limits. */
function compactionCall(options: CompactionOptions, context: readonly Message[]): ModelCall {
  const { db, model, agentId, workSessionId, taskId, abortSignal, timeoutMs } = options;
  return {
    db,
    model,
    purpose: "compaction",
    agentId,
    teamId: options.teamId ?? null,
    conversationId: context[0]?.conversationId ?? null,
    workSessionId,
    taskId,
    abortSignal,
    timeoutMs,
    // The team's budget counts the summary as it counts the work (see checkBudgets).
    onUsageRecorded: teamSpendingRecorder(options.teamId, model.modelId),
  };
}

/**
 * The summary as one more request of the conversation: the same instructions, the same tools
 * (none may be called) and the context as the last call had it, then the request to summarize.
 * It extends the request before it, so the provider's prompt cache serves all but its last
 * lines: the conversation's one planned break costs the summary, not the whole context again.
 * Empty when the model did not answer in words — among them a model that called a tool all
 * the same (servers that ignore `tool_choice`, as Ollama does): the SDK throws for that rather
 * than answer, and a summary is no reason for the work to fail.
 */
async function summaryAsNextTurn(
  options: CompactionOptions,
  context: readonly Message[],
  tools: ToolSet,
): Promise<string> {
  // Definitions only: whatever the model calls here, nothing runs.
  const offered: ToolSet = {};
  for (const [name, definition] of Object.entries(tools)) offered[name] = { ...definition, execute: undefined };
  const messages: ModelMessage[] = [
    ...toModelMessages(context, renderSettings(options)),
    { role: "user", content: COMPACTION_REQUEST },
  ];
  try {
    const result = await generateModelText(compactionCall(options, context), {
      instructions: options.instructions,
      messages,
      tools: offered,
      toolChoice: "none",
      maxOutputTokens: Math.max(256, Math.floor(options.budget / 4)),
    });
    return result.text.trim();
  } catch (error) {
    // The call's usage row is written already (the SDK reports the call's end before it checks the choice).
    if (ToolChoiceViolationError.isInstance(error)) return "";
    throw error;
  }
}

/** How the context is rendered for a model call of this conversation (and so for its summary). */
function renderSettings(options: Pick<CompactionOptions, "budget" | "awaitingDecision" | "heldForPerson">) {
  return {
    maxToolResultChars: toolResultLimit(options.budget),
    awaitingDecision: options.awaitingDecision,
    heldForPerson: options.heldForPerson,
  };
}

/**
 * Appends a summary of the current context. Never deletes: the summary points at
 * the last message it covers, and later context loads start from it. If a message
 * lands while the summary is written, the append is refused and it starts over with
 * that message included, so nothing falls between summary and tail.
 */
export async function compactConversation(options: CompactionOptions, conversationId: string): Promise<Message | null> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const context = await getConversationContext(options.db, conversationId);
    const last = context.at(-1);
    if (!last || last.role === "summary") return null;
    // A call whose result is not in yet (the step in flight, or a call waiting for the
    // person's approval) would be cut off from it by a summary: wait until it is.
    if (hasCallWithoutResult(context)) return null;
    const summary = await generateConversationSummary(options, context);
    const restated = (await options.restate?.()) ?? null;
    try {
      const [appended] = await appendMessages(options.db, conversationId, [
        { role: "summary", content: summary, previousMessageId: last.id },
        ...(restated ? [restated] : []),
      ]);
      return appended!;
    } catch (error) {
      if (error instanceof CadreError && error.code === "conflict:message_chain") continue;
      throw error;
    }
  }
  return null;
}

function hasCallWithoutResult(context: readonly Message[]): boolean {
  const answered = new Set(
    context.flatMap((message) => (message.role === "tool" && message.toolCallId ? [message.toolCallId] : [])),
  );
  return context.some((message) => message.toolCalls?.some((call) => !answered.has(call.toolCallId)));
}

/**
 * A session's copy of its context, kept current by reading only what was appended
 * since the last read: the chain is append-only, so the previous tail is still in it.
 * A summary among the new messages starts the context over from that summary. A
 * tool round thus reads its two or three new rows, not the whole context again.
 */
export class ContextReader {
  private context: Message[] = [];
  private tail: string | null | undefined;
  /** Rows this session appended since the log was last read, by id. */
  private readonly own = new Set<string>();
  /** A row this session appended did not follow the known tail: someone else wrote in between. */
  private stale = false;
  /** The writes of rows the context already holds (see appending): the log is read after they land. */
  private writing: Promise<unknown> = Promise.resolve();

  /** The last message of the context as last read: what the next answer must follow. */
  get lastMessageId(): string | null {
    return this.tail ?? null;
  }

  /** Whether the log was read at all yet. */
  get hasRead(): boolean {
    return this.tail !== undefined;
  }

  constructor(
    private readonly db: Db,
    readonly conversationId: string,
  ) {}

  async read(): Promise<Message[]> {
    await this.settled();
    // Stale: the known tail may be a row named ahead that landed elsewhere or not at all, so
    // reading on from it could miss rows: the context is read anew (rare).
    if (this.tail === undefined || this.stale) {
      this.context = await getConversationContext(this.db, this.conversationId);
    } else {
      const added = await getMessagesSince(this.db, this.conversationId, this.tail);
      const summary = added.findLastIndex((message) => message.role === "summary");
      this.context = summary >= 0 ? added.slice(summary) : [...this.context, ...added];
    }
    this.tail = this.context.at(-1)?.id ?? null;
    this.own.clear();
    this.stale = false;
    return this.context;
  }

  /**
   * A row this session appended (a step's answer, a tool's result): the context grows by it
   * without a read, when it follows the known tail. Otherwise someone else's row came first,
   * and the next readUnlessAt reads the log.
   */
  appended(message: Message): void {
    if (this.tail === undefined) return;
    if (message.previousMessageId !== this.tail) {
      this.stale = true;
      return;
    }
    this.context = [...this.context, message];
    this.tail = message.id;
    this.own.add(message.id);
  }

  /**
   * A row this session is writing, named before it is written (a tool's result): the context
   * grows by it now, so the next model call need not wait for the write; a read of the log
   * waits for it. `written` never rejects: the writer keeps its own failure.
   */
  appending(message: Message, written: Promise<unknown>): void {
    this.appended(message);
    this.writing = written;
  }

  /** Waits for the rows on their way to the log (see appending). */
  settled(): Promise<unknown> {
    return this.writing;
  }

  /** Someone else's row is in the log (a result recorded by another run of the step): read it next time. */
  moved(): void {
    this.stale = true;
  }

  /**
   * The context, read from the log only when `logTail` (the log's last message, read by the
   * caller) is not one of the rows this session appended since the last read: then nobody
   * else wrote to the log, which is nearly every tool round. A tail read while the session's
   * own append was still on its way is one of its rows too.
   */
  async readUnlessAt(logTail: string | null): Promise<Message[]> {
    const known =
      this.tail !== undefined && !this.stale && (logTail === this.tail || (logTail !== null && this.own.has(logTail)));
    if (!known) return this.read();
    this.own.clear();
    return this.context;
  }
}

/**
 * The messages for the next model call: the context, compacted first when it is over
 * budget. Reading it is also the injection check (whatever reached the log since the
 * last call is in it). One read when the context fits, which is nearly every call; a
 * caller may pass that read already started, to overlap it with its other reads.
 */
export async function loadContextForCall(
  options: CompactionOptions,
  reader: ContextReader,
  context: Message[] | Promise<Message[]> = reader.read(),
): Promise<ModelMessage[]> {
  const settings = renderSettings(options);
  const messages = toModelMessages(await context, settings);
  if (estimateTokens(options.instructions) + estimateTokens(messages) <= compactionThreshold(options.budget))
    return messages;
  // The summary covers the log as stored: the session's rows on their way land first.
  await reader.settled();
  if (await compactConversation(options, reader.conversationId)) options.onCompacted?.();
  return toModelMessages(await reader.read(), settings);
}
