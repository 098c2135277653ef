import "server-only";
import type { Db } from "@/lib/db/client";
import { getForegroundConversation } from "@/lib/db/queries/conversations";
import { markInboxItemOfRead } from "@/lib/db/queries/inbox-items";
import { appendMessage } from "@/lib/db/queries/messages";
import { answerQuestion, createQuestion, getQuestion, lockQuestion } from "@/lib/db/queries/questions";
import { getTask } from "@/lib/db/queries/tasks";
import { writeUnderAgent } from "@/lib/db/queries/teams";
import type { Agent, DecisionChannel, Question } from "@/lib/db/schema";
import { CadreError, notFound } from "@/lib/errors";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { formatPersonQuestion } from "@/lib/core/formats";
import { postToInbox } from "./inbox";
import { resumeTask, waitForInput } from "./task-lifecycle";
import { queueInput } from "./tasks";

/**
 * An agent asks its person (flow 8): the question is stored with an id, lands in the
 * inbox (and on the team's channels) as a `question` item and in the agent's chat with
 * the person, and the task it serves waits in `waiting_input` until the answer comes.
 * In the caller's transaction (a tool's effect). Returns null when the task ended already.
 */
export async function askPerson(
  db: Db,
  jobs: JobQueue,
  asker: Agent,
  input: { question: string; taskId: string | null },
): Promise<Question | null> {
  const task = input.taskId ? await waitForInput(db, input.taskId) : null;
  if (input.taskId && !task) return null;
  const asked = await createQuestion(db, {
    agentId: asker.id,
    taskId: task?.id ?? null,
    recipientAgentId: null,
    question: input.question,
  });
  const item = await postToInbox(db, jobs, {
    teamId: asker.teamId,
    agentId: asker.id,
    type: "question",
    taskId: task?.id ?? null,
    questionId: asked.id,
    title: `${asker.name} asks: ${oneLine(input.question, 160)}`,
    summary: oneLine(input.question, 1000),
    content: input.question,
  });
  // In the chat too, where the person answers in place (the message names its inbox item).
  const foreground = await getForegroundConversation(db, asker.id);
  await appendMessage(db, foreground.id, {
    role: "assistant",
    content: formatPersonQuestion(input.question),
    inboxItemId: item?.id ?? null,
  });
  return asked;
}

/**
 * The person's answer to a question an agent asked them. It goes into the asking agent's
 * queue (its next step sees it, like any input) and wakes it; the task that asked goes on
 * once nothing else it waits on is open (resumeTask).
 * A second answer is a 409, and so is an answer to a question whose task ended meanwhile:
 * the agent no longer needs it, and the person is told why.
 */
export async function answerQuestionFromPerson(
  db: Db,
  jobs: JobQueue,
  questionId: string,
  answer: string,
  via: DecisionChannel = "app",
): Promise<Question> {
  const found = await getQuestion(db, questionId);
  if (!found || found.recipientAgentId !== null) throw notFound("question", questionId);
  return writeUnderAgent(db, found.agentId, async (tx) => {
    const question = await lockQuestion(tx, questionId);
    if (!question) throw notFound("question", questionId);
    if (question.status === "answered") {
      throw new CadreError(
        "conflict:question_answered",
        "This question was answered already; the agent has that answer.",
      );
    }
    if (question.status === "withdrawn") {
      const task = question.taskId ? await getTask(tx, question.taskId) : null;
      throw new CadreError(
        "conflict:question_withdrawn",
        task
          ? `The task that asked ("${task.title}") was ${task.status}, so the agent no longer needs an answer.`
          : "The agent no longer needs an answer: the work that asked has ended.",
      );
    }
    const answered = (await answerQuestion(tx, question.id, answer, via))!;
    await resumeTask(tx, question.taskId);
    await queueInput(
      tx,
      jobs,
      question.agentId,
      { kind: "person-answer", questionId: question.id, answer },
      question.taskId,
    );
    await markInboxItemOfRead(tx, { questionId: question.id });
    return answered;
  });
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
