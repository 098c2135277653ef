// kill -9 a real worker at random points of work sessions, 50 times, then check that
// nothing was lost or done twice. Prints its figures.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { assignTask } from "@/lib/domain/tasks";
import { createTeamFixture } from "../support/fixtures";
import { teamPlay } from "../support/team-play";
import { pause, useWorkerFleet } from "../support/worker-fleet";
import { waitFor } from "../support/worker-process";

const KILLS = 50;
const fleet = useWorkerFleet(teamPlay);
const count = (query: ReturnType<typeof sql>) => fleet.count(query);

describe("crash safety", () => {
  it(`survives ${KILLS} kill -9s: every task ends, no effect lost or doubled, every call has one result`, {
    timeout: 420_000,
  }, async () => {
    const teams = await Promise.all(
      [0, 1, 2].map(() => createTeamFixture(fleet.database.db, { subordinates: ["Scout"] })),
    );
    let assigned = 0;
    const assign = async () => {
      const { lead } = teams[assigned % teams.length]!;
      assigned += 1;
      await assignTask(fleet.database.db, fleet.jobs, {
        agentId: lead.id,
        source: "user",
        title: `Research solar prices #${assigned}`,
      });
    };
    for (let i = 0; i < 6; i++) await assign();

    // Three workers, so one is always ready to be killed while its replacement starts.
    fleet.startWorker();
    fleet.startWorker();
    fleet.startWorker();
    let kills = 0;
    while (kills < KILLS) {
      await pause(100 + Math.random() * 400);
      if (!(await fleet.killOne())) continue;
      kills += 1;
      if (kills % 5 === 0) await assign();
    }

    // Let the survivors finish everything.
    const quiet = sql`select count(*) as n from tasks where status in ('pending', 'in_progress', 'waiting_input')`;
    await waitFor(
      async () =>
        (await count(quiet)) === 0 &&
        (await count(sql`select count(*) as n from work_sessions where status = 'running'`)) === 0,
      {
        timeoutMs: 150_000,
        what: "every task to reach a final state",
      },
    ).catch(async (error) => {
      const open = await fleet.database.db.execute(
        sql`select title, status, agent_id from tasks where status not in ('completed','failed','cancelled')`,
      );
      throw new Error(
        `${error.message}: ${JSON.stringify(open)}\n${fleet.live.map((w) => w.output.join("").slice(-2000)).join("\n---\n")}`,
      );
    });

    const figures = {
      kills,
      tasks: await count(sql`select count(*) as n from tasks`),
      completed: await count(sql`select count(*) as n from tasks where status = 'completed'`),
      sessions: await count(sql`select count(*) as n from work_sessions`),
      interruptedSessions: await count(sql`select count(*) as n from work_sessions where status = 'interrupted'`),
      interruptedCalls: await count(
        sql`select count(*) as n from messages where role = 'tool' and content like '(interrupted%'`,
      ),
      // Losses: a call without its result; a task left open.
      callsWithoutResult: await count(sql`
        select count(*) as n from messages m, jsonb_array_elements(m.tool_calls) call
         where not exists (select 1 from messages r where r.conversation_id = m.conversation_id and r.tool_call_id = call->>'toolCallId')`),
      openTasks: await count(quiet),
      // Duplicates: an effect without the result that records it, or the other way round.
      delegations: await count(sql`select count(*) as n from tasks where source = 'lead'`),
      delegationResults: await count(
        sql`select count(*) as n from messages where role = 'tool' and content like '%"delegated":true%'`,
      ),
      // A fact saved again is one more source of its item, not a second item: matched by the item id the result names.
      knowledgeItems: await count(sql`select count(*) as n from knowledge_items k
         where not exists (select 1 from messages r where r.role = 'tool' and r.content like '%"saved":true%' and r.content like '%' || k.id || '%')`),
      knowledgeResults:
        await count(sql`select count(*) as n from messages r where r.role = 'tool' and r.content like '%"saved":true%'
         and not exists (select 1 from knowledge_items k where r.content like '%' || k.id || '%')`),
      inboxItems: await count(sql`select count(*) as n from inbox_items`),
      inboxResults: await count(
        sql`select count(*) as n from messages where role = 'tool' and content like '%"sent":true,"inboxItemId"%'`,
      ),
      briefingsInChat: await count(
        sql`select count(*) as n from messages m join conversations c on c.id = m.conversation_id where c.mode = 'foreground' and m.role = 'assistant'`,
      ),
      // In the lead's log, or still in its queue.
      reports:
        await count(sql`select (select count(*) from messages where role = 'user' and content like 'Subordinate Scout reports %')
                                    + (select count(*) from agent_inputs where content like 'Subordinate Scout reports %') as n`),
      reportResults: await count(
        sql`select count(*) as n from messages where role = 'tool' and content = 'Report sent to your lead.'`,
      ),
      subtasksCompleted: await count(
        sql`select count(*) as n from tasks where source = 'lead' and status = 'completed'`,
      ),
    };
    const losses = figures.callsWithoutResult + figures.openTasks;
    const duplicates =
      Math.abs(figures.delegations - figures.delegationResults) +
      Math.abs(figures.knowledgeItems - figures.knowledgeResults) +
      Math.abs(figures.inboxItems - figures.inboxResults) +
      Math.abs(figures.inboxItems - figures.briefingsInChat);
    console.log(
      `[crash safety] kills=${kills} sessions=${figures.sessions} losses=${losses} duplicates=${duplicates}`,
      figures,
    );

    expect(kills).toBe(KILLS);
    expect(figures.interruptedSessions).toBeGreaterThan(0);
    expect(losses).toBe(0);
    expect(duplicates).toBe(0);
    expect(figures.tasks).toBe(assigned + figures.delegations);
    // Every report corresponds to a completed subordinate task (reported once, by the tool or on the task's end).
    expect(figures.reports).toBeGreaterThanOrEqual(figures.reportResults);
    expect(figures.reports).toBe(figures.subtasksCompleted);
  });
});
