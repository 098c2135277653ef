import "server-only";
import { NoObjectGeneratedError, Output } from "ai";
import { z } from "zod";
import type { Db } from "@/lib/db/client";
import { storable } from "@/lib/db/storable";
import { getAgent } from "@/lib/db/queries/agents";
import {
  createKnowledgeItem,
  mergeKnowledgeSource,
  updateKnowledgeItem,
  type KnowledgeChanges,
  lockTeamKnowledge,
} from "@/lib/db/queries/knowledge-items";
import type { JobQueue } from "@/lib/jobs/job-queue";
import type { Embedding, EmbeddingChoice } from "@/lib/llm/embeddings";
import { embedOrNot, sameFigures, sameKnowledgeCandidates } from "./knowledge-recall";
import { teamSpendingRecorder } from "./budgets";
import { generateModelText } from "@/lib/llm/model-call";
import { knowledgeItemTypes, type KnowledgeItem, type KnowledgeItemType, type Message } from "@/lib/db/schema";
import type { ModelChoice } from "@/lib/llm/provider";
import { EXTRACTION_INSTRUCTIONS } from "@/lib/core/prompts";
import { urlNamedIn, webSourceUrl } from "./sources";

/** What a weaker model puts where a fact should be: nothing, or a placeholder. */
const PLACEHOLDERS = new Set(["null", "undefined", "none", "n/a", "na", "nothing", "todo", "tbd"]);

/** A fact has a letter or digit and is not a placeholder ("null", "N/A", "—"): what a knowledge item's content must be. */
export function isFact(content: string): boolean {
  return /[\p{L}\p{N}]/u.test(content) && !PLACEHOLDERS.has(content.trim().toLowerCase());
}

const extractedItemSchema = z.object({
  type: z.enum(knowledgeItemTypes),
  content: z.string().trim().min(1).max(2000).refine(isFact, "a fact, not a placeholder"),
  confidence: z.number().min(0).max(1),
});
type ExtractedItem = z.infer<typeof extractedItemSchema>;
const MAX_ITEMS = 10;
const extractionSchema = z.object({ items: z.array(extractedItemSchema).max(MAX_ITEMS) });

/** How many places in an answer are tried as the start of its JSON. */
const MAX_JSON_STARTS = 50;

/**
 * The items in an extraction answer that did not match the schema as a whole, which weaker
 * models send: the JSON in a code fence or between words (brackets in them too), a bare
 * array, one item with a confidence of 5 or no content. The first JSON value in the text
 * that holds a readable item wins; what parses of it is kept (at most MAX_ITEMS), the rest
 * dropped. An answer with nothing readable in it is no items.
 */
function readExtractionLeniently(text: string): ExtractedItem[] {
  const openings = text.matchAll(/[[{]/g);
  for (let tried = 0; tried < MAX_JSON_STARTS; tried++) {
    const opening = openings.next();
    if (opening.done) break;
    const start = opening.value.index;
    const end = closingBracket(text, start);
    if (end < 0) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text.slice(start, end + 1));
    } catch {
      continue;
    }
    const items: unknown = Array.isArray(parsed) ? parsed : (parsed as { items?: unknown } | null)?.items;
    if (!Array.isArray(items)) continue;
    const readable = items.flatMap((item) => {
      const read = extractedItemSchema.safeParse(item);
      return read.success ? [read.data] : [];
    });
    if (readable.length > 0) return readable.slice(0, MAX_ITEMS);
  }
  return [];
}

/** Where the bracket at `start` closes, skipping brackets inside strings; -1 when it does not. */
function closingBracket(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === "\\") i++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === "{" || char === "[") depth++;
    else if (char === "}" || char === "]") {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

function renderSession(messages: readonly Message[], maxChars: number): string {
  const text = messages
    .map((message) => {
      const calls = message.toolCalls?.map((call) => `${call.toolName}(${JSON.stringify(call.args)})`).join(", ");
      return `${message.role.toUpperCase()}: ${message.content.slice(0, 1500)}${calls ? ` [${calls}]` : ""}`;
    })
    .join("\n");
  return text.length > maxChars ? text.slice(text.length - maxChars) : text;
}

/** A fact's text for comparison: lower case, punctuation gone, whitespace collapsed. */
function normalizeKnowledge(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s]/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
}

/**
 * Whether two facts say the same: equal once normalised, one containing the other (a
 * restatement with a clause added), or sharing at least 80% of their words (Jaccard).
 */
export function isNearDuplicate(a: string, b: string): boolean {
  const left = normalizeKnowledge(a);
  const right = normalizeKnowledge(b);
  if (!left || !right) return left === right;
  if (left === right || ` ${left} `.includes(` ${right} `) || ` ${right} `.includes(` ${left} `)) return true;
  const leftWords = new Set(left.split(" "));
  const rightWords = new Set(right.split(" "));
  const shared = [...leftWords].filter((word) => rightWords.has(word)).length;
  return shared / (leftWords.size + rightWords.size - shared) >= 0.8;
}

/**
 * Two facts alike but for a word or two swapped ("revenue rose 5%" / "revenue fell 5%", "finding
 * one" / "finding two") make different claims, however close in meaning they read: a
 * restatement rewords more than that. Kept apart, a missed merge costs a duplicate; merged, a
 * fact would be lost.
 */
function swapsAFewWords(a: string, b: string): boolean {
  const left = new Set(normalizeKnowledge(a).split(" "));
  const right = new Set(normalizeKnowledge(b).split(" "));
  const onlyLeft = [...left].filter((word) => !right.has(word)).length;
  const onlyRight = [...right].filter((word) => !left.has(word)).length;
  return onlyLeft > 0 && onlyLeft <= 2 && onlyRight > 0 && onlyRight <= 2;
}

/**
 * The team's item that says the same as `content`, if any: the one place that decides what
 * "the same fact" is. Among the items closest by words and by meaning (sameKnowledgeCandidates),
 * the best that says it in nearly the same words (isNearDuplicate), or in other words as close
 * as a restatement with the same figures ("500 Wh/kg" and "400 Wh/kg" read alike, and differ).
 * Without the fact's vector (the model did not answer), by words only.
 */
async function findSameKnowledge(
  db: Db,
  teamId: string,
  content: string,
  embedding: Embedding | null,
): Promise<KnowledgeItem | null> {
  const candidates = await sameKnowledgeCandidates(db, teamId, content, embedding);
  const same = candidates.find(
    ({ item, closeInMeaning }) =>
      isNearDuplicate(item.content, content) ||
      (closeInMeaning && sameFigures(item.content, content) && !swapsAFewWords(item.content, content)),
  );
  return same?.item ?? null;
}

export type KnowledgeReport = {
  teamId: string;
  agentId: string;
  type: KnowledgeItemType;
  content: string;
  confidence: number;
  conversationId: string | null;
  /** The message the fact was reported in. */
  messageId?: string | null;
  /** The source the agent gave; when none, an address the fact names in its text. */
  sourceUrl?: string | null;
  /** The fact's vector (embedOrNot), made before the transaction; null when the model did not answer in time. */
  embedding: Embedding | null;
};

/**
 * Stores a fact an agent reported: a new item, or — when the team knows it already
 * (findSameKnowledge) — one more source on that item, which keeps the higher confidence and
 * gains the URL if it had none. Under a lock per team held to the end of the caller's
 * transaction, so two agents saving the same fact at once make one item, not two. A new item
 * without its vector has the embedding job queued in the same transaction (the outbox): it
 * is found by words until the job has embedded it.
 */
export function recordKnowledge(
  db: Db,
  jobs: Pick<JobQueue, "embedKnowledge">,
  report: KnowledgeReport,
): Promise<{ item: KnowledgeItem; merged: boolean; sourceUrl: string | null }> {
  return db.transaction(async (tx) => {
    await lockTeamKnowledge(tx, report.teamId);
    const url = webSourceUrl(report.sourceUrl) ?? urlNamedIn(report.content);
    const source = {
      agentId: report.agentId,
      conversationId: report.conversationId,
      messageId: report.messageId ?? null,
      url,
    };
    const same = await findSameKnowledge(tx, report.teamId, report.content, report.embedding);
    const merged = same ? await mergeKnowledgeSource(tx, same.id, { ...source, confidence: report.confidence }) : null;
    if (merged) return { item: merged, merged: true, sourceUrl: url };
    const item = await createKnowledgeItem(tx, {
      agentId: report.agentId,
      type: report.type,
      content: report.content,
      confidence: report.confidence,
      sourceConversationId: report.conversationId,
      sourceMessageId: source.messageId,
      sourceUrl: url,
      embedding: report.embedding,
    });
    if (!report.embedding) await jobs.embedKnowledge(tx);
    return { item, merged: false, sourceUrl: url };
  });
}

/**
 * The person's correction of an item. New words drop the old words' vector, and the embedding
 * job is queued in the same transaction: the item is found by its new words at once, and by
 * their meaning once the job has embedded it. Null when the item is gone.
 */
export function editKnowledgeItem(
  db: Db,
  jobs: Pick<JobQueue, "embedKnowledge">,
  itemId: string,
  changes: KnowledgeChanges,
): Promise<KnowledgeItem | null> {
  return db.transaction(async (tx) => {
    const edited = await updateKnowledgeItem(tx, itemId, changes);
    if (edited?.unembedded) await jobs.embedKnowledge(tx);
    return edited?.item ?? null;
  });
}

const words = (text: string) =>
  new Set(
    normalizeKnowledge(text)
      .split(" ")
      .filter((word) => word.length >= 4),
  );

/** The message a fact was most plausibly read from: the one sharing the most words with it (the latest on a tie), else the last. */
function messageSaying(messages: readonly Message[], fact: string): Message | undefined {
  const factWords = words(fact);
  let best: { message: Message; shared: number } | undefined;
  for (const message of messages) {
    const text = `${message.content} ${message.toolCalls?.map((call) => JSON.stringify(call.args)).join(" ") ?? ""}`;
    const messageWords = words(text);
    const shared = [...factWords].filter((word) => messageWords.has(word)).length;
    if (shared > 0 && shared >= (best?.shared ?? 0)) best = { message, shared };
  }
  return best?.message ?? messages.at(-1);
}

/**
 * Distils a work session into knowledge items linked to the conversation (and the message)
 * they came from. A fact the team already knows (findSameKnowledge) is not added again: the
 * known item gains this agent as a source (recordKnowledge). Near-duplicates within one
 * extraction are merged the same way. Returns the items it created.
 */
export async function extractKnowledgeFromConversation(input: {
  db: Db;
  model: ModelChoice;
  agentId: string;
  /** The agent's team, for the usage row and the team's knowledge (its current team when not given). */
  teamId?: string | null;
  conversationId: string;
  /** The work session extracting, for its trace. */
  workSessionId?: string | null;
  /** The task the session's work belonged to (usage.task_id): what the extraction's cost counts toward. */
  taskId?: string | null;
  messages: readonly Message[];
  maxInputChars: number;
  abortSignal?: AbortSignal;
  /** How long the model call may take; MODEL_TIMEOUT_MS when not given. */
  timeoutMs?: number;
  /** The model the facts are embedded with, and the queue an item saved without its vector is embedded through. */
  embedding: EmbeddingChoice;
  jobs: Pick<JobQueue, "embedKnowledge">;
}): Promise<KnowledgeItem[]> {
  if (input.messages.length === 0) return [];
  const { db, model, agentId, conversationId, workSessionId, taskId, abortSignal, timeoutMs } = input;
  let extracted: ExtractedItem[];
  try {
    const result = await generateModelText(
      {
        db,
        model,
        purpose: "extraction",
        agentId,
        teamId: input.teamId ?? null,
        conversationId,
        workSessionId,
        taskId,
        abortSignal,
        timeoutMs,
        // The team's budget counts the extraction as it counts the work (see checkBudgets).
        onUsageRecorded: teamSpendingRecorder(input.teamId, model.modelId),
      },
      {
        instructions: EXTRACTION_INSTRUCTIONS,
        prompt: renderSession(input.messages, input.maxInputChars),
        output: Output.object({ schema: extractionSchema }),
      },
    );
    extracted = result.output.items;
  } catch (error) {
    // The model answered, but not in the shape asked for. The session's work is done by now:
    // failing it over a note to self would also skip a lead's briefing. Keep what reads.
    // A RangeError: JSON nested so deep that the SDK's own error report overflowed the stack.
    if (!NoObjectGeneratedError.isInstance(error) && !(error instanceof RangeError)) throw error;
    extracted = NoObjectGeneratedError.isInstance(error) ? readExtractionLeniently(error.text ?? "") : [];
    console.warn(
      `[knowledge] agent ${agentId}: the extraction's answer did not match its schema; kept ${extracted.length} of its items.`,
    );
  }
  if (extracted.length === 0) return [];
  const teamId = input.teamId ?? (await getAgent(db, agentId))?.teamId;
  if (!teamId) return []; // the agent was removed meanwhile: nobody to know it
  const created: KnowledgeItem[] = [];
  // Text as Postgres can store it (no NUL): an insert refused here would fail the wrap-up. A
  // tool's fact with a NUL is refused instead, and the model sees the error and can retry.
  const facts = extracted.map((read) => ({ ...read, content: storable(read.content) }));
  // All the facts' vectors in one call, before any item's transaction.
  const embeddings = await embedOrNot(
    { db, model: input.embedding, agentId, teamId, conversationId, workSessionId, taskId, abortSignal },
    facts.map((fact) => fact.content),
  );
  for (const [index, fact] of facts.entries()) {
    const { item: saved, merged } = await recordKnowledge(db, input.jobs, {
      ...fact,
      teamId,
      agentId,
      conversationId,
      messageId: messageSaying(input.messages, fact.content)?.id ?? null,
      embedding: embeddings[index] ?? null,
    });
    if (!merged) created.push(saved);
  }
  return created;
}
