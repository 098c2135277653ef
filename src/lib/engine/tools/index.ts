import "server-only";
import type { ToolSet } from "ai";
import { chatTools } from "./chat-tools";
import type { ToolContext } from "./context";
import { knowledgeTools } from "./knowledge-tools";
import { searchTools } from "./search-tools";
import { TurnSources } from "@/lib/domain/sources";
import { subordinateTools } from "./subordinate-tools";
import { teamLeadTools } from "./team-lead-tools";

export type { ToolContext } from "./context";

/** The tools of a work session, by role. A subordinate is never offered a lead's tools. */
export function workTools(context: ToolContext): ToolSet {
  // One turn's tool set: what it searched and read is where the knowledge it adds came from.
  const sources = new TurnSources();
  const common = { ...searchTools(context, sources), ...knowledgeTools(context, sources) };
  return context.agent.role === "lead"
    ? { ...common, ...teamLeadTools(context) }
    : { ...common, ...subordinateTools(context) };
}

/**
 * The tools of the foreground chat, by role: look things up and hand work to the background.
 * A lead also sees its team (and hands work to a subordinate through createTask); a
 * subordinate keeps its own knowledge and gives work only to itself. Nobody delegates,
 * asks or reports from the chat: those belong to the work log, where a task is in focus.
 */
export function foregroundTools(context: ToolContext): ToolSet {
  const sources = new TurnSources();
  const { searchKnowledge, addKnowledgeItem } = knowledgeTools(context, sources);
  const tools: ToolSet = { ...searchTools(context, sources), searchKnowledge, ...chatTools(context) };
  if (context.agent.role === "lead") tools.getTeamStatus = teamLeadTools(context).getTeamStatus;
  else tools.addKnowledgeItem = addKnowledgeItem;
  return tools;
}
