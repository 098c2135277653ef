import { tool } from "ai";
import { z } from "zod";
import { getAgent } from "@/lib/db/queries/agents";
import { getTask, setTaskStatus } from "@/lib/db/queries/tasks";
import { postToBackground } from "../tasks";
import type { ToolContext } from "./context";

/** The task a report or question is about: the one named, if it is the caller's own, else its current one. */
async function resolveTaskId(context: ToolContext, taskId: string | undefined): Promise<string | null> {
  if (taskId) {
    const task = await getTask(context.db, taskId);
    if (task && task.agentId === context.agent.id) return task.id;
  }
  const [current] = await context.currentTaskIds();
  return current ?? null;
}

async function requireLead(context: ToolContext) {
  const lead = context.agent.parentAgentId ? await getAgent(context.db, context.agent.parentAgentId) : null;
  if (!lead || lead.teamId !== context.team.id) throw new Error("This agent has no lead to talk to.");
  return lead;
}

export function subordinateTools(context: ToolContext) {
  return {
    requestInput: tool({
      description: "Ask your lead a question you cannot answer yourself. Your task waits until the lead answers.",
      inputSchema: z.object({ question: z.string().min(1).max(4000), taskId: z.uuid().optional() }),
      execute: async ({ question, taskId }, { toolCallId }) => {
        const lead = await requireLead(context);
        const id = await resolveTaskId(context, taskId);
        return context.effect(toolCallId, async (tx) => {
          if (id) await setTaskStatus(tx, id, "waiting_input");
          await postToBackground(tx, context.jobs, lead.id, `Subordinate ${context.agent.name} asks: ${question}\n(agent id: ${context.agent.id})`);
          return "Question sent to your lead. Stop here; you will be woken with the answer.";
        });
      },
    }),
    reportToLead: tool({
      description: "Report the result of your task to your lead. This completes the task.",
      inputSchema: z.object({ result: z.string().min(1).max(20000), taskId: z.uuid().optional() }),
      execute: async ({ result, taskId }, { toolCallId }) => {
        const lead = await requireLead(context);
        const id = await resolveTaskId(context, taskId);
        // The task's completion, the report in the lead's log and this result: once, together.
        return context.effect(toolCallId, async (tx) => {
          if (id) await setTaskStatus(tx, id, "completed", result);
          await postToBackground(tx, context.jobs, lead.id, `Subordinate ${context.agent.name} reports: ${result}`);
          return "Report sent to your lead.";
        });
      },
    }),
  };
}
