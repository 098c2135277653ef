import { tool } from "ai";
import { z } from "zod";
import { listTeamAgents } from "@/lib/db/queries/teams";
import { assignTask } from "../tasks";
import type { ToolContext } from "./context";

/** Tools only the foreground chat has: handing longer work to the background. */
export function chatTools(context: ToolContext) {
  return {
    createTask: tool({
      description:
        "Hand work that takes longer than a chat reply to the background: a task for yourself or one of your subordinates. Reply with a short acknowledgement after.",
      inputSchema: z.object({
        title: z.string().min(1).max(200),
        description: z.string().max(8000).default(""),
        agentId: z.string().optional().describe("Who does it: yourself (default) or a subordinate's id"),
      }),
      execute: async ({ title, description, agentId }, { toolCallId }) => {
        const members = await listTeamAgents(context.db, context.team.id);
        // A name instead of an id is understood; an id that is no member's is refused with the team list.
        const wanted = agentId?.trim().toLowerCase() || context.agent.id;
        const assignee = members.find((member) => member.id === wanted) ?? members.find((member) => member.name.trim().toLowerCase() === wanted);
        if (!assignee) {
          return `Not created: "${agentId}" is not a member of your team. Members: ${members.map((member) => `${member.name} (id: ${member.id})`).join(", ")}.`;
        }
        return context.effect(toolCallId, async (tx) => {
          const task = await assignTask(tx, context.jobs, { agentId: assignee.id, source: "user", title, description });
          return { created: true, taskId: task.id, assignedTo: assignee.name };
        });
      },
    }),
  };
}
