import { Output } from "ai";
import { z } from "zod";
import type { Db } from "@/lib/db/client";
import { createKnowledgeItem, searchKnowledgeItems } from "@/lib/db/queries/knowledge-items";
import { generateModelText } from "@/lib/llm/model-call";
import { knowledgeItemTypes, type KnowledgeItem, type Message } from "@/lib/db/schema";
import type { ModelChoice } from "@/lib/llm/provider";
import { EXTRACTION_INSTRUCTIONS } from "./prompts";

const extractionSchema = z.object({
  items: z
    .array(
      z.object({
        type: z.enum(knowledgeItemTypes),
        content: z.string().min(1).max(2000),
        confidence: z.number().min(0).max(1),
      }),
    )
    .max(10),
});

function renderSession(messages: readonly Message[], maxChars: number): string {
  const text = messages
    .map((message) => {
      const calls = message.toolCalls?.map((call) => `${call.toolName}(${JSON.stringify(call.args)})`).join(", ");
      return `${message.role.toUpperCase()}: ${message.content.slice(0, 1500)}${calls ? ` [${calls}]` : ""}`;
    })
    .join("\n");
  return text.length > maxChars ? text.slice(text.length - maxChars) : text;
}

/**
 * Distils a work session into knowledge items linked to the conversation they came
 * from. Items the agent already recorded word for word are not added twice.
 */
export async function extractKnowledgeFromConversation(input: {
  db: Db;
  model: ModelChoice;
  agentId: string;
  conversationId: string;
  /** The work session extracting, for its trace. */
  workSessionId?: string | null;
  messages: readonly Message[];
  maxInputChars: number;
  abortSignal?: AbortSignal;
  /** How long the model call may take; MODEL_TIMEOUT_MS when not given. */
  timeoutMs?: number;
}): Promise<KnowledgeItem[]> {
  if (input.messages.length === 0) return [];
  const { db, model, agentId, conversationId, workSessionId, abortSignal, timeoutMs } = input;
  const result = await generateModelText(
    { db, model, purpose: "extraction", agentId, conversationId, workSessionId, abortSignal, timeoutMs },
    {
      instructions: EXTRACTION_INSTRUCTIONS,
      prompt: renderSession(input.messages, input.maxInputChars),
      output: Output.object({ schema: extractionSchema }),
    },
  );
  const existing = new Set((await searchKnowledgeItems(input.db, { agentId: input.agentId, limit: 500 })).map((item) => item.content.trim()));
  const created: KnowledgeItem[] = [];
  for (const item of result.output.items) {
    if (existing.has(item.content.trim())) continue;
    existing.add(item.content.trim());
    created.push(await createKnowledgeItem(input.db, { ...item, agentId: input.agentId, sourceConversationId: input.conversationId }));
  }
  return created;
}
