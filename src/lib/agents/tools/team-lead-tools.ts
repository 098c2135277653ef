import { tool } from "ai";
import { and, eq, inArray } from "drizzle-orm";
import { z } from "zod";
import { appendMessage } from "@/lib/db/queries/messages";
import { getForegroundConversation } from "@/lib/db/queries/conversations";
import { createInboxItem } from "@/lib/db/queries/inbox-items";
import { listTasksByAgent } from "@/lib/db/queries/tasks";
import { listTeamAgents } from "@/lib/db/queries/teams";
import { getRunningSession } from "@/lib/db/queries/work-sessions";
import { tasks, type Agent } from "@/lib/db/schema";
import { assignTask, postToBackground } from "../tasks";
import type { ToolContext } from "./context";

/** A subordinate of the caller's own team, or null: the model's word is never enough. */
async function findSubordinate(context: ToolContext, agentId: string): Promise<Agent | null> {
  const members = await listTeamAgents(context.db, context.team.id);
  return members.find((member) => member.id === agentId && member.role === "subordinate") ?? null;
}

export function teamLeadTools(context: ToolContext) {
  return {
    delegateToAgent: tool({
      description: "Hand a task to one of your subordinates. They work on it in the background and report back to you.",
      inputSchema: z.object({
        agentId: z.uuid().describe("The subordinate's id, from your team list"),
        title: z.string().min(1).max(200),
        description: z.string().max(8000).default(""),
      }),
      execute: async ({ agentId, title, description }, { toolCallId }) => {
        const subordinate = await findSubordinate(context, agentId);
        if (!subordinate) return `Not delegated: ${agentId} is not a subordinate in your team. Use getTeamStatus to see your team.`;
        const [parentTaskId] = await context.currentTaskIds();
        return context.effect(toolCallId, async (tx) => {
          const task = await assignTask(tx, context.jobs, {
            agentId: subordinate.id,
            source: "lead",
            title,
            description,
            parentTaskId: parentTaskId ?? null,
          });
          return { delegated: true, taskId: task.id, to: subordinate.name };
        });
      },
    }),
    getTeamStatus: tool({
      description: "See your team: each member's id, role, whether it is working, and its recent tasks with their states.",
      inputSchema: z.object({}),
      execute: async () => {
        const members = await listTeamAgents(context.db, context.team.id);
        return {
          team: { name: context.team.name, mission: context.team.mission, status: context.team.status },
          members: await Promise.all(
            members.map(async (member) => ({
              id: member.id,
              name: member.name,
              role: member.role,
              working: (await getRunningSession(context.db, member.id)) !== null,
              tasks: (await listTasksByAgent(context.db, member.id))
                .slice(0, 8)
                .map((task) => ({ id: task.id, title: task.title, status: task.status, result: task.result?.slice(0, 300) ?? null })),
            })),
          ),
        };
      },
    }),
    createInboxItem: tool({
      description:
        "Brief the person: a short summary lands in their inbox and the full briefing in your chat with them. Use it when there is something they should know.",
      inputSchema: z.object({
        title: z.string().min(1).max(200),
        summary: z.string().min(1).max(1000).describe("One or two sentences for the inbox"),
        content: z.string().min(1).max(20000).describe("The full briefing, in Markdown"),
        type: z.enum(["briefing", "question", "alert"]).default("briefing"),
      }),
      execute: ({ title, summary, content, type }, { toolCallId }) =>
        // The inbox item, the briefing in the chat and the tool's result stand or fall together.
        context.effect(toolCallId, async (tx) => {
          const created = await createInboxItem(tx, { teamId: context.team.id, agentId: context.agent.id, type, title, summary, content });
          const foreground = await getForegroundConversation(tx, context.agent.id);
          await appendMessage(tx, foreground.id, { role: "assistant", content: `**${title}**\n\n${content}` });
          return { sent: true, inboxItemId: created.id };
        }),
    }),
    answerSubordinate: tool({
      description: "Answer a question a subordinate asked you (requestInput). They continue their task with your answer.",
      inputSchema: z.object({ agentId: z.uuid(), answer: z.string().min(1).max(8000) }),
      execute: async ({ agentId, answer }, { toolCallId }) => {
        const subordinate = await findSubordinate(context, agentId);
        if (!subordinate) return `Not sent: ${agentId} is not a subordinate in your team.`;
        return context.effect(toolCallId, async (tx) => {
          await tx
            .update(tasks)
            .set({ status: "in_progress" })
            .where(and(eq(tasks.agentId, subordinate.id), inArray(tasks.status, ["waiting_input"])));
          await postToBackground(tx, context.jobs, subordinate.id, `Your lead ${context.agent.name} answers: ${answer}`);
          return { sent: true, to: subordinate.name };
        });
      },
    }),
  };
}
