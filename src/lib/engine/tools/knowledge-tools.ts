import "server-only";
import { tool } from "ai";
import { z } from "zod";
import { listTeamAgents } from "@/lib/db/queries/teams";
import { deleteKnowledgeItem, getKnowledgeItem } from "@/lib/db/queries/knowledge-items";
import type { EmbeddingCall } from "@/lib/llm/model-call";
import { knowledgeItemTypes } from "@/lib/db/schema";
import type { ToolContext } from "./context";
import { recordKnowledge } from "@/lib/domain/knowledge-items";
import { TurnSources, urlNamedIn, webSourceUrl } from "@/lib/domain/sources";
import { embedOrNot, recallKnowledge } from "@/lib/domain/knowledge-recall";

async function teamAgentIds(context: ToolContext): Promise<string[]> {
  return (await listTeamAgents(context.db, context.team.id)).map((agent) => agent.id);
}

/** An embedding call of the agent's (its usage row names the agent, its session and the task it serves). */
function embeddingCall(context: ToolContext, abortSignal: AbortSignal | undefined): EmbeddingCall {
  return {
    db: context.db,
    model: context.embedding,
    agentId: context.agent.id,
    teamId: context.team.id,
    conversationId: context.conversationId,
    workSessionId: context.workSessionId,
    taskId: context.focusTaskId() ?? context.storyTaskId?.() ?? null,
    abortSignal,
  };
}

// Built once: a tool set is made for every turn, and a schema's construction and its JSON
// Schema (see StepRecorder.wrapTools) cost more than the turn's first database reads.
const addKnowledgeItemInput = z.object({
  type: z.enum(knowledgeItemTypes),
  content: z.string().min(1).max(4000),
  confidence: z.number().min(0).max(1).optional().describe("0..1, how sure you are"),
  // Forgiving: an address that is not http(s) is dropped, never a failed call.
  sourceUrl: z.string().max(2000).optional().describe("The web page the fact came from (https://…), if any"),
});
const searchKnowledgeInput = z.object({ query: z.string().min(1).max(400) });
const removeKnowledgeItemInput = z.object({ id: z.uuid() });

/** `sources`: what the turn searched and read; a fact added without a source gets one from there. */
export function knowledgeTools(context: ToolContext, sources = new TurnSources()) {
  return {
    addKnowledgeItem: tool({
      description:
        "Record something worth remembering: a fact, a technique, a pattern or a lesson. Keep it to one self-contained statement with its source.",
      inputSchema: addKnowledgeItemInput,
      execute: async ({ type, content, confidence, sourceUrl }, { toolCallId, abortSignal }) => {
        // The fact's vector before the transaction (no model call under the team's lock): the
        // near-duplicate check compares meaning with it, and the item stores it.
        const [embedding] = await embedOrNot(embeddingCall(context, abortSignal), [content]);
        return context.effect(toolCallId, async (tx, call) => {
          // A fact the team knows already gains this agent as a source instead of a second item.
          const {
            item,
            merged,
            sourceUrl: recorded,
          } = await recordKnowledge(tx, context.jobs, {
            teamId: context.team.id,
            agentId: context.agent.id,
            type,
            content,
            confidence: confidence ?? 0.7,
            conversationId: context.conversationId,
            messageId: call?.messageId ?? null,
            sourceUrl: webSourceUrl(sourceUrl) ?? urlNamedIn(content) ?? sources.sourceOf(content),
            embedding: embedding ?? null,
          });
          return {
            saved: true,
            id: item.id,
            ...(merged
              ? { note: "Your team already knew this: you were added as one more source of the known item." }
              : {}),
            ...(recorded ? { sourceUrl: recorded } : {}),
          };
        });
      },
    }),
    searchKnowledge: tool({
      description: "Search the knowledge your team has collected, by its words and by its meaning.",
      inputSchema: searchKnowledgeInput,
      execute: async ({ query }, { abortSignal }) => {
        const items = await recallKnowledge(embeddingCall(context, abortSignal), {
          q: query,
          agentIds: await teamAgentIds(context),
          limit: 10,
        });
        if (items.length === 0) return "No knowledge items match.";
        return {
          items: items.map(({ id, type, content, confidence, sourceUrl }) => ({
            id,
            type,
            content,
            confidence,
            ...(sourceUrl ? { sourceUrl } : {}),
          })),
        };
      },
    }),
    removeKnowledgeItem: tool({
      description: "Remove a knowledge item of your team that is wrong or outdated.",
      inputSchema: removeKnowledgeItemInput,
      execute: async ({ id }, { toolCallId }) => {
        const item = await getKnowledgeItem(context.db, id);
        // Another team's item does not exist as far as this agent is concerned.
        if (!item || !(await teamAgentIds(context)).includes(item.agentId))
          return `No knowledge item ${id} in your team.`;
        return context.effect(toolCallId, async (tx) => {
          await deleteKnowledgeItem(tx, id);
          return { removed: true, id };
        });
      },
    }),
  };
}
