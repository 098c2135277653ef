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
        agentId: z.uuid().optional().describe("Who does it: yourself (default) or a subordinate's id"),
      }),
      execute: async ({ title, description, agentId }, { toolCallId }) => {
        const members = await listTeamAgents(context.db, context.team.id);
        const assignee = members.find((member) => member.id === (agentId ?? context.agent.id));
        if (!assignee) return `Not created: ${agentId} is not a member of your team.`;
        return context.effect(toolCallId, async (tx) => {
          const task = await assignTask(tx, context.jobs, { agentId: assignee.id, source: "user", title, description });
          return { created: true, taskId: task.id, assignedTo: assignee.name };
        });
      },
    }),
  };
}
