// A task's life by name (src/lib/domain/task-lifecycle.ts): one rule resumes a waiting task,
// whoever settles what it waited on — the lead's answer, the person's answer, the person's
// decision on a call — and a final status stays final whatever transition comes later.
import { offlineEmbeddingChoice } from "@/lib/llm/embeddings";
import { beforeAll, describe, expect, it } from "vitest";
import { decideApproval, requestApprovals } from "@/lib/engine/approvals";
import { answerQuestionFromPerson, askPerson } from "@/lib/domain/questions";
import { cancelTrees, resumeTask, startTask, waitForInput } from "@/lib/domain/task-lifecycle";
import { assignTask } from "@/lib/domain/tasks";
import type { ToolContext } from "@/lib/engine/tools/context";
import { subordinateTools } from "@/lib/engine/tools/subordinate-tools";
import { teamLeadTools } from "@/lib/engine/tools/team-lead-tools";
import { getBackgroundConversation, getTask } from "@/lib/db/queries";
import { listAgentApprovals } from "@/lib/db/queries/approvals";
import { listOpenQuestionsFor } from "@/lib/db/queries/questions";
import type { Agent, Team } from "@/lib/db/schema";
import type { JobQueue } from "@/lib/jobs/job-queue";
import type { TestDatabase } from "../support/database";
import { useEngineTests } from "../support/engine";
import { createTeamFixture } from "../support/fixtures";

const tests = useEngineTests();
let database: TestDatabase;
beforeAll(() => {
  database = tests.database;
});

const call = (toolCallId: string) => ({ toolCallId, messages: [], context: {} });

/** What a tool of `agent`'s gets in a turn about `focus`, its writes in a transaction of their own. */
async function toolContext(jobs: JobQueue, team: Team, agent: Agent, focus: string | null): Promise<ToolContext> {
  return {
    db: database.db,
    jobs,
    agent,
    team,
    conversationId: (await getBackgroundConversation(database.db, agent.id)).id,
    workSessionId: null,
    embedding: offlineEmbeddingChoice(),
    search: {},
    focusTaskId: () => focus,
    effect: (_toolCallId, write) => database.db.transaction((tx) => write(tx)),
  };
}

/**
 * A subordinate's task in progress that asks its lead a question (requestInput) and, in the
 * same step, makes a call that waits for the person's decision: it waits on both.
 */
async function subordinateWaitingOnTwo() {
  const engine = await tests.engineWith();
  const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
  const scout = subordinates[0]!;
  const task = await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "lead", title: "Prices" });
  await startTask(database.db, task.id);
  const scoutTools = subordinateTools(await toolContext(engine.jobs, team, scout, task.id));
  await scoutTools.requestInput.execute!({ question: "Which region?" }, call("ask-1"));
  const [approval] = await requestApprovals(
    database.db,
    engine.jobs,
    { agent: scout, conversationId: (await getBackgroundConversation(database.db, scout.id)).id, taskId: task.id },
    [{ toolCallId: "save-1", toolName: "addKnowledgeItem", input: { type: "fact", content: "x", confidence: 0.5 } }],
    "Saving what I found.",
  );
  const [question] = await listOpenQuestionsFor(database.db, lead.id);
  expect(question).toMatchObject({ agentId: scout.id, taskId: task.id });
  expect(await getTask(database.db, task.id)).toMatchObject({ status: "waiting_input" });
  const leadTools = teamLeadTools(await toolContext(engine.jobs, team, lead, null));
  return {
    engine,
    task,
    answerAsLead: () =>
      leadTools.answerSubordinate.execute!({ questionId: question!.id, answer: "Europe" }, call("answer-1")),
    decide: () => decideApproval(database.db, engine.jobs, approval!.id, { decision: "approve" }),
    scout,
  };
}

const statusOf = async (taskId: string) => (await getTask(database.db, taskId))?.status;

describe("resume: one rule for every answer and decision", () => {
  it("a task waiting on its lead's answer and the person's decision stays waiting until both are settled, lead first", async () => {
    const { task, answerAsLead, decide } = await subordinateWaitingOnTwo();
    expect(await answerAsLead()).toMatchObject({ sent: true });
    // The lead's answer is in, but a call of the task still waits for the person.
    expect(await statusOf(task.id)).toBe("waiting_input");
    await decide();
    expect(await statusOf(task.id)).toBe("in_progress");
  });

  it("… and the person's decision first", async () => {
    const { task, answerAsLead, decide } = await subordinateWaitingOnTwo();
    await decide();
    expect(await statusOf(task.id)).toBe("waiting_input");
    expect(await answerAsLead()).toMatchObject({ sent: true });
    expect(await statusOf(task.id)).toBe("in_progress");
  });

  it("the person's answer waits for the person's decision the same way", async () => {
    const engine = await tests.engineWith();
    const { lead } = await createTeamFixture(database.db);
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Trip" });
    await startTask(database.db, task.id);
    const asked = await askPerson(database.db, engine.jobs, lead, { question: "Which dates?", taskId: task.id });
    const conversationId = (await getBackgroundConversation(database.db, lead.id)).id;
    await requestApprovals(
      database.db,
      engine.jobs,
      { agent: lead, conversationId, taskId: task.id },
      [{ toolCallId: "save-1", toolName: "addKnowledgeItem", input: { type: "fact", content: "x", confidence: 0.5 } }],
      "Saving what I found.",
    );
    await answerQuestionFromPerson(database.db, engine.jobs, asked!.id, "In May.");
    expect(await statusOf(task.id)).toBe("waiting_input");
    const [approval] = await listAgentApprovals(database.db, lead.id);
    await decideApproval(database.db, engine.jobs, approval!.id, { decision: "deny", reason: "Not now." });
    expect(await statusOf(task.id)).toBe("in_progress");
  });

  it("the lead's answer and the person's decision committing at the same moment still resume the task", async () => {
    const { task, answerAsLead, decide, scout } = await subordinateWaitingOnTwo();
    // Another transaction holds the Scout's row: both settle what they settle, look at what
    // else the task waits on, and then wait for it before they commit. Each looking before the
    // other commits would find the other's still open, and the task would wait for nothing.
    const connection = await database.sql.reserve();
    await connection`begin`;
    await connection`select 1 from agents where id = ${scout.id} for no key update`;
    const both = Promise.all([answerAsLead(), decide()]);
    await expect
      .poll(
        async () =>
          (
            await database.sql<{ n: number }[]>`
              select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`
          )[0]!.n,
        { timeout: 10_000 },
      )
      .toBeGreaterThanOrEqual(2);
    await connection`rollback`;
    connection.release();
    await both;
    expect(await statusOf(task.id)).toBe("in_progress");
  });
});

describe("a final status stays final", () => {
  it("no transition moves a cancelled task, and what it waited on is withdrawn", async () => {
    const { engine, task, answerAsLead, decide } = await subordinateWaitingOnTwo();
    await database.db.transaction((tx) => cancelTrees(tx, engine.jobs, [task.id], "Not needed."));
    expect(await startTask(database.db, task.id)).toBeNull();
    expect(await waitForInput(database.db, task.id)).toBeNull();
    expect(await resumeTask(database.db, task.id)).toBeNull();
    expect(await answerAsLead()).toBe("Not sent: no question from your subordinates is waiting for an answer.");
    await expect(decide()).rejects.toMatchObject({ code: "conflict:approval_withdrawn" });
    expect(await getTask(database.db, task.id)).toMatchObject({ status: "cancelled", result: "Not needed." });
  });

  it("start takes up only a pending task", async () => {
    const engine = await tests.engineWith();
    const { lead } = await createTeamFixture(database.db);
    const task = await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Once" });
    expect(await startTask(database.db, task.id)).toMatchObject({ status: "in_progress" });
    await waitForInput(database.db, task.id);
    expect(await startTask(database.db, task.id)).toBeNull();
    expect(await statusOf(task.id)).toBe("waiting_input");
  });
});
