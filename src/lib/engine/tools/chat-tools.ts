import "server-only";
import { tool } from "ai";
import { z } from "zod";
import { listTeamAgents } from "@/lib/db/queries/teams";
import { assignTask } from "@/lib/domain/tasks";
import type { ToolContext } from "./context";

const title = z.string().min(1).max(200);
const description = z.string().max(8000).default("");

// Built once: a tool set is made for every turn, and a schema's construction and its JSON
// Schema (see StepRecorder.wrapTools) cost more than the turn's first database reads.
const ownTaskInput = z.object({ title, description });
const teamTaskInput = z.object({
  title,
  description,
  agentId: z.string().optional().describe("Who does it: yourself (default) or a subordinate's id"),
});

/**
 * Tools only the foreground chat has: handing longer work to the background. A lead may
 * hand it to a subordinate; a subordinate only to itself (it delegates to nobody).
 */
export function chatTools(context: ToolContext) {
  if (context.agent.role !== "lead") {
    return {
      createTask: tool({
        description:
          "Hand work that takes longer than a chat reply to your own background work: a task for yourself. Reply with a short acknowledgement after.",
        inputSchema: ownTaskInput,
        execute: ({ title, description }, { toolCallId }) =>
          context.effect(toolCallId, async (tx) => {
            const task = await assignTask(tx, context.jobs, {
              agentId: context.agent.id,
              source: "user",
              title,
              description,
            });
            return { created: true, taskId: task.id, assignedTo: context.agent.name };
          }),
      }),
    };
  }
  return {
    createTask: tool({
      description:
        "Hand work that takes longer than a chat reply to the background: a task for yourself or one of your subordinates. Reply with a short acknowledgement after.",
      inputSchema: teamTaskInput,
      execute: async ({ title, description, agentId }, { toolCallId }) => {
        const members = await listTeamAgents(context.db, context.team.id);
        // A name instead of an id is understood; an id that is no member's is refused with the team list.
        const wanted = agentId?.trim().toLowerCase() || context.agent.id;
        const assignee =
          members.find((member) => member.id === wanted) ??
          members.find((member) => member.name.trim().toLowerCase() === wanted);
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
