import "server-only";
import { tool } from "ai";
import { z } from "zod";
import { appendMessage } from "@/lib/db/queries/messages";
import { getForegroundConversation } from "@/lib/db/queries/conversations";
import { postToInbox } from "@/lib/domain/inbox";
import { askPerson } from "@/lib/domain/questions";
import { answerQuestion, getQuestion, listOpenQuestionsFor } from "@/lib/db/queries/questions";
import { getTask, holdParentTask, listTasksByAgent } from "@/lib/db/queries/tasks";
import { listTeamAgents } from "@/lib/db/queries/teams";
import { getRunningSession } from "@/lib/db/queries/work-sessions";
import type { Agent, Question } from "@/lib/db/schema";
import { plural } from "@/lib/util/plural";
import { isOpenTask } from "@/lib/db/task-statuses";
import { formatBriefing } from "@/lib/core/formats";
import { resumeTask } from "@/lib/domain/task-lifecycle";
import { assignTask, queueInput } from "@/lib/domain/tasks";
import type { ToolContext } from "./context";
import { optionalId } from "./tool-errors";

/**
 * A subordinate of the caller's own team, or null: the model's word is never enough.
 * Found by id, or by name when the model sent the name instead (weaker models do).
 */
async function findSubordinate(context: ToolContext, idOrName: string | undefined): Promise<Agent | null> {
  if (!idOrName?.trim()) return null;
  const subordinates = (await listTeamAgents(context.db, context.team.id)).filter(
    (member) => member.role === "subordinate",
  );
  const id = optionalId(idOrName);
  const wanted = idOrName.trim().toLowerCase();
  return (
    subordinates.find((member) => member.id === id) ??
    subordinates.find((member) => member.name.trim().toLowerCase() === wanted) ??
    null
  );
}

async function teamList(context: ToolContext): Promise<string> {
  const subordinates = (await listTeamAgents(context.db, context.team.id)).filter(
    (member) => member.role === "subordinate",
  );
  return subordinates.length ? subordinates.map((member) => `${member.name} (id: ${member.id})`).join(", ") : "none";
}

/**
 * The open question an answer is for: the one named when it is open and was asked of
 * this lead; otherwise (no id, or a garbled one) the named subordinate's oldest open
 * question, or the only open question there is. Never a guess between several: the
 * answer would resume a task that did not ask.
 */
async function findOpenQuestion(
  context: ToolContext,
  questionId: string | undefined,
  subordinate: Agent | null,
): Promise<Question | string> {
  const named = optionalId(questionId);
  if (named) {
    const question = await getQuestion(context.db, named);
    if (question && question.status === "open" && question.recipientAgentId === context.agent.id) return question;
  }
  const open = await listOpenQuestionsFor(context.db, context.agent.id);
  const candidates = subordinate ? open.filter((question) => question.agentId === subordinate.id) : open;
  if (candidates.length === 1 || (subordinate && candidates.length > 0)) return candidates[0]!;
  if (open.length === 0) return "Not sent: no question from your subordinates is waiting for an answer.";
  const listed = open.map((question) => `${question.id} ("${question.question.slice(0, 80)}")`).join(", ");
  return `Not sent: ${questionId ? `"${questionId}" is not an open question id` : "questionId is missing"}, and ${plural(open.length, "question")} ${open.length === 1 ? "is" : "are"} open. Call answerSubordinate again with questionId set to one of: ${listed}.`;
}

// Built once: a tool set is made for every turn, and a schema's construction and its JSON
// Schema (see StepRecorder.wrapTools) cost more than the turn's first database reads.
const delegateToAgentInput = z.object({
  agentId: z.string().min(1).describe("The subordinate's id, from your team list"),
  title: z.string().min(1).max(200),
  description: z.string().max(8000).default(""),
});
const getTeamStatusInput = z.object({});
const createInboxItemInput = z.object({
  title: z.string().min(1).max(200),
  summary: z.string().min(1).max(1000).describe("One or two sentences for the inbox"),
  content: z.string().min(1).max(20000).describe("The full briefing, in Markdown"),
  // Weaker models send "question" here too: a briefing it is (askPerson asks).
  type: z
    .preprocess((value) => (value === "alert" ? "alert" : "briefing"), z.enum(["briefing", "alert"]))
    .default("briefing"),
});
const askPersonInput = z.object({
  question: z.string().min(1).max(4000),
  taskId: z.string().optional().describe("The task this is about; leave it out for the task you are working on"),
});
const answerSubordinateInput = z.object({
  questionId: z.string().optional().describe("The question id from the subordinate's message"),
  agentId: z.string().optional().describe("The subordinate who asked, if you do not have the question id"),
  answer: z.string().min(1).max(8000),
});

export function teamLeadTools(context: ToolContext) {
  return {
    delegateToAgent: tool({
      description:
        "Hand a task to one of your subordinates. They work on it in the background and report back to you. It belongs to the task in focus.",
      inputSchema: delegateToAgentInput,
      execute: async ({ agentId, title, description }, { toolCallId }) => {
        const subordinate = await findSubordinate(context, agentId);
        if (!subordinate)
          return `Not delegated: "${agentId}" is not a subordinate in your team. Your subordinates: ${await teamList(context)}.`;
        const focus = context.focusTaskId();
        return context.effect(toolCallId, async (tx) => {
          // Read under the task's lock, in the transaction that delegates: a Stop or a cancel
          // that ends it meanwhile either comes first (and the delegation is refused) or finds
          // the new task under it and cancels that too. Read before, a cancel could slip in
          // between and leave a subordinate working on a task nobody wants any more.
          const parent = focus ? await holdParentTask(tx, focus) : null;
          // A turn about a task delegates for that task, or not at all: stored without it, the
          // work would be nobody's, and the task could complete while it is still open. Only a
          // turn about no task (a webhook, a report on work outside any task) delegates without one.
          if (focus && parent?.agentId !== context.agent.id) {
            return "Not delegated: the task you are working on is no longer there. Go on with your other work.";
          }
          if (parent && !isOpenTask(parent.status)) {
            return `Not delegated: the task you are working on ("${parent.title}") is ${parent.status} already. Drop it and go on with your other work.`;
          }
          const task = await assignTask(tx, context.jobs, {
            agentId: subordinate.id,
            source: "lead",
            title,
            description,
            parentTaskId: parent?.id ?? null,
          });
          return { delegated: true, taskId: task.id, to: subordinate.name };
        });
      },
    }),
    getTeamStatus: tool({
      description:
        "See your team: each member's id, role, whether it is working, and its recent tasks with their states.",
      inputSchema: getTeamStatusInput,
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
              tasks: (await listTasksByAgent(context.db, member.id)).slice(0, 8).map((task) => ({
                id: task.id,
                title: task.title,
                status: task.status,
                result: task.result?.slice(0, 300) ?? null,
              })),
            })),
          ),
          openQuestions: (await listOpenQuestionsFor(context.db, context.agent.id)).map((question) => ({
            questionId: question.id,
            from: members.find((member) => member.id === question.agentId)?.name ?? question.agentId,
            question: question.question.slice(0, 500),
          })),
        };
      },
    }),
    createInboxItem: tool({
      description:
        "Brief the person: a short summary lands in their inbox and the full briefing in your chat with them. Use it when there is something they should know.",
      inputSchema: createInboxItemInput,
      execute: ({ title, summary, content, type }, { toolCallId }) =>
        // The inbox item (and its notifications), the briefing in the chat and the tool's result stand or fall together.
        context.effect(toolCallId, async (tx) => {
          // The task in focus is what the briefing answers; in the wrap-up's briefing turn, the work the session did last.
          const taskId = context.focusTaskId() ?? context.storyTaskId?.() ?? null;
          const created = (await postToInbox(tx, context.jobs, {
            teamId: context.team.id,
            agentId: context.agent.id,
            type,
            title,
            summary,
            content,
            taskId,
          }))!;
          const foreground = await getForegroundConversation(tx, context.agent.id);
          await appendMessage(tx, foreground.id, {
            role: "assistant",
            content: formatBriefing(title, content),
            inboxItemId: created.id,
          });
          return { sent: true, inboxItemId: created.id };
        }),
    }),
    askPerson: tool({
      description:
        "Ask the person a question only they can answer (a decision, a preference, access). It reaches their inbox and your chat with them; the task you are working on waits until they answer, and you are woken with the answer. To pass on a subordinate's question, ask it in your own words.",
      inputSchema: askPersonInput,
      execute: async ({ question, taskId }, { toolCallId }) => {
        const named = optionalId(taskId);
        const task = named ? await getTask(context.db, named) : null;
        const about = task && task.agentId === context.agent.id ? task.id : context.focusTaskId();
        return context.effect(toolCallId, async (tx) => {
          const asked = await askPerson(tx, context.jobs, context.agent, { question, taskId: about });
          if (!asked)
            return "Not asked: the task you are working on has ended already. Drop it and go on with your other work.";
          return {
            asked: true,
            questionId: asked.id,
            note: "Stop working on this task now; you will be woken with the person's answer.",
          };
        });
      },
    }),
    answerSubordinate: tool({
      description:
        "Answer a question a subordinate asked you (requestInput), naming its question id. The task that asked continues with your answer.",
      inputSchema: answerSubordinateInput,
      execute: async ({ questionId, agentId, answer }, { toolCallId }) => {
        const subordinate = agentId ? await findSubordinate(context, agentId) : null;
        const question = await findOpenQuestion(context, questionId, subordinate);
        if (typeof question === "string") return question;
        const asker = await findSubordinate(context, question.agentId);
        if (!asker) return "Not sent: the subordinate who asked is no longer in your team.";
        return context.effect(toolCallId, async (tx) => {
          if (!(await answerQuestion(tx, question.id, answer)))
            return "Not sent: that question was already answered or withdrawn.";
          // Only the task that asked resumes, and only once nothing else it waits on is open (a
          // call waiting for the person, another question), as with the person's answer.
          await resumeTask(tx, question.taskId);
          await queueInput(
            tx,
            context.jobs,
            asker.id,
            { kind: "answer", leadName: context.agent.name, questionId: question.id, answer },
            question.taskId,
          );
          return { sent: true, to: asker.name, questionId: question.id };
        });
      },
    }),
  };
}
