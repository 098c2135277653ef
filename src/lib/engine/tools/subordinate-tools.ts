import "server-only";
import { tool } from "ai";
import { z } from "zod";
import type { Db } from "@/lib/db/client";
import { getAgent } from "@/lib/db/queries/agents";
import { createQuestion } from "@/lib/db/queries/questions";
import { getTask } from "@/lib/db/queries/tasks";
import { isActiveTask } from "@/lib/db/task-statuses";
import { completeTask, waitForInput } from "@/lib/domain/task-lifecycle";
import { queueInput } from "@/lib/domain/tasks";
import type { ToolContext } from "./context";
import { optionalId } from "./tool-errors";

/**
 * The task a report or question is about: the one named, if it is the caller's own and
 * still open, else the task in focus. A garbled or foreign id is ignored, not an error:
 * local models mangle ids often, and the focus is what they meant.
 */
async function resolveTaskId(context: ToolContext, taskId: string | undefined): Promise<string | null> {
  const named = optionalId(taskId);
  if (named) {
    const task = await getTask(context.db, named);
    if (task && task.agentId === context.agent.id && isActiveTask(task.status)) return task.id;
  }
  return context.focusTaskId();
}

async function requireLead(context: ToolContext) {
  const lead = context.agent.parentAgentId ? await getAgent(context.db, context.agent.parentAgentId) : null;
  if (!lead || lead.teamId !== context.team.id) throw new Error("This agent has no lead to talk to.");
  return lead;
}

/** What a tool says about a task that ended under it (cancelled while the agent worked). */
async function endedTask(db: Db, taskId: string, what: string): Promise<string> {
  const task = await getTask(db, taskId);
  return `${what}: the task "${task?.title ?? taskId}" is ${task?.status ?? "gone"} already. Drop it and go on with your other work.`;
}

const taskIdField = z
  .string()
  .optional()
  .describe("The task this is about; leave it out for the task you are working on");

// Built once: a tool set is made for every turn, and a schema's construction and its JSON
// Schema (see StepRecorder.wrapTools) cost more than the turn's first database reads.
const requestInputInput = z.object({ question: z.string().min(1).max(4000), taskId: taskIdField });
const reportToLeadInput = z.object({ result: z.string().min(1).max(20000), taskId: taskIdField });

export function subordinateTools(context: ToolContext) {
  return {
    requestInput: tool({
      description: "Ask your lead a question you cannot answer yourself. Your task waits until the lead answers.",
      inputSchema: requestInputInput,
      execute: async ({ question, taskId }, { toolCallId }) => {
        const lead = await requireLead(context);
        const id = await resolveTaskId(context, taskId);
        return context.effect(toolCallId, async (tx) => {
          const task = id ? await waitForInput(tx, id) : null;
          if (id && !task) return await endedTask(tx, id, "Question not sent");
          const asked = await createQuestion(tx, {
            agentId: context.agent.id,
            taskId: task?.id ?? null,
            recipientAgentId: lead.id,
            question,
          });
          await queueInput(
            tx,
            context.jobs,
            lead.id,
            {
              kind: "question",
              agentName: context.agent.name,
              agentId: context.agent.id,
              questionId: asked.id,
              question,
            },
            task?.parentTaskId ?? null,
          );
          return "Question sent to your lead. Stop here; you will be woken with the answer.";
        });
      },
    }),
    reportToLead: tool({
      description: "Report the result of your task to your lead. This completes the task.",
      inputSchema: reportToLeadInput,
      execute: async ({ result, taskId }, { toolCallId }) => {
        const lead = await requireLead(context);
        const id = await resolveTaskId(context, taskId);
        // The task's completion, the report in the lead's queue and this result: once, together.
        return context.effect(toolCallId, async (tx) => {
          if (id) {
            if (await completeTask(tx, context.jobs, id, result)) return "Report sent to your lead.";
            return await endedTask(tx, id, "Report not sent");
          }
          // No task to complete (a report on work outside any task): the lead still hears it.
          await queueInput(tx, context.jobs, lead.id, {
            kind: "report",
            agentName: context.agent.name,
            taskId: null,
            result,
          });
          return "Report sent to your lead.";
        });
      },
    }),
  };
}
