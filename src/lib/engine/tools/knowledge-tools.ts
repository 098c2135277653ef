import "server-only";
import { tool } from "ai";
import { z } from "zod";
import { listTeamAgents } from "@/lib/db/queries/teams";
import { deleteKnowledgeItem, getKnowledgeItem, searchKnowledgeItems } from "@/lib/db/queries/knowledge-items";
import { knowledgeItemTypes } from "@/lib/db/schema";
import type { ToolContext } from "./context";
import { recordKnowledge } from "@/lib/domain/knowledge-items";
import { TurnSources, urlNamedIn, webSourceUrl } from "@/lib/domain/sources";

async function teamAgentIds(context: ToolContext): Promise<string[]> {
  return (await listTeamAgents(context.db, context.team.id)).map((agent) => agent.id);
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
      execute: ({ type, content, confidence, sourceUrl }, { toolCallId }) =>
        context.effect(toolCallId, async (tx, call) => {
          // A fact the team knows already gains this agent as a source instead of a second item.
          const {
            item,
            merged,
            sourceUrl: recorded,
          } = await recordKnowledge(tx, {
            teamId: context.team.id,
            agentId: context.agent.id,
            type,
            content,
            confidence: confidence ?? 0.7,
            conversationId: context.conversationId,
            messageId: call?.messageId ?? null,
            sourceUrl: webSourceUrl(sourceUrl) ?? urlNamedIn(content) ?? sources.sourceOf(content),
          });
          return {
            saved: true,
            id: item.id,
            ...(merged
              ? { note: "Your team already knew this: you were added as one more source of the known item." }
              : {}),
            ...(recorded ? { sourceUrl: recorded } : {}),
          };
        }),
    }),
    searchKnowledge: tool({
      description: "Search the knowledge your team has collected (full-text).",
      inputSchema: searchKnowledgeInput,
      execute: async ({ query }) => {
        const items = await searchKnowledgeItems(context.db, {
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
