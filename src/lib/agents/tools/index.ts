import type { ToolSet } from "ai";
import { chatTools } from "./chat-tools";
import type { ToolContext } from "./context";
import { knowledgeTools } from "./knowledge-tools";
import { searchTools } from "./search-tools";
import { subordinateTools } from "./subordinate-tools";
import { teamLeadTools } from "./team-lead-tools";

export type { ToolContext } from "./context";

/** The tools of a work session, by role. A subordinate is never offered a lead's tools. */
export function workTools(context: ToolContext): ToolSet {
  const common = { ...searchTools(context), ...knowledgeTools(context) };
  return context.agent.role === "lead" ? { ...common, ...teamLeadTools(context) } : { ...common, ...subordinateTools(context) };
}

/** The tools of the foreground chat: look things up, see the team, hand work to the background. */
export function foregroundTools(context: ToolContext): ToolSet {
  const { searchKnowledge } = knowledgeTools(context);
  const tools: ToolSet = { ...searchTools(context), searchKnowledge, ...chatTools(context) };
  if (context.agent.role === "lead") tools.getTeamStatus = teamLeadTools(context).getTeamStatus;
  return tools;
}

/** Only the briefing tool: the end-of-session decision of a lead. */
export function briefingTools(context: ToolContext): ToolSet {
  return { createInboxItem: teamLeadTools(context).createInboxItem };
}
