// Runs one scenario of the engine model-check: its team, the person's actions at their
// times, then waits until the team is quiet and checks the invariants.
import { sql } from "drizzle-orm";
import * as app from "./app";
import type { App } from "./app";
import { checkInvariants, loadScenarioState, type InvariantName, type RemovedTask } from "./invariants";
import { createRng } from "./random";
import { describeLogs } from "./report";
import { generateScenario, type Action, type Scenario, type Trigger } from "./scenario";
import type { ScenarioEntry, ScriptedModel } from "./scripted-model";
import type { QuietMonitor, TaskEvents } from "./watchers";

export type Violation = { invariant: InvariantName; message: string };
export type ScenarioResult = {
  scenario: Scenario;
  violations: Violation[];
  trace: string[];
  /** When its actions started and when it was checked (epoch ms). */
  startedAt: number;
  endedAt: number;
  steps: number;
  logs: string[];
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

export type RunnerContext = {
  app: App;
  taskEvents: TaskEvents;
  model: ScriptedModel;
  monitor: QuietMonitor;
  /** A team busy with nothing changing this long is stuck; busy this long after its last action, it never ends. */
  stallMs: number;
  maxMs: number;
  /** Called while the scenario runs, e.g. to kill a worker mid-step. */
  onStarted?: (scenario: Scenario) => void;
};

export async function runScenario(context: RunnerContext, seed: number): Promise<ScenarioResult> {
  const scenario = generateScenario(seed);
  const { app: world } = context;
  const team = await app.createTeam(world, {
    name: scenario.teamName,
    leadName: scenario.leadName,
    subNames: scenario.subNames,
    webhooks: scenario.actions.some((action) => action.kind === "webhook"),
  });
  // Action times count from here, once the team exists.
  const started = Date.now();
  const trace: string[] = [];
  const note = (line: string): void => void trace.push(`+${String(Date.now() - started).padStart(5)}ms ${line}`);
  const entry: ScenarioEntry = { scenario, ...team, rng: createRng(seed ^ 0x5eed), answers: new Map(), calls: 0 };
  context.model.register(entry);
  const agentIds = [team.leadId, ...team.subIds];
  const userTasks = new Map<string, string>();
  const removedTasks: RemovedTask[] = [];
  context.onStarted?.(scenario);

  const jobTask = async (job: string): Promise<{ id: string; status: string } | null> => {
    const [row] = await world.db.execute<{ id: string; status: string }>(sql`
      select t.id, t.status from tasks t join agents a on a.id = t.agent_id
       where a.team_id = ${team.teamId} and t.source = 'lead' and t.title like ${`${job} %`} order by t.created_at limit 1`);
    return row ?? null;
  };
  /** Waits (up to 4 s) until the job's task reaches the trigger's status; false if it never does. */
  const reached = (trigger: Trigger): Promise<boolean> =>
    new Promise((resolve) => {
      const titles = new Map<string, Promise<string | null>>();
      let done = false;
      const finish = (value: boolean) => {
        if (done) return;
        done = true;
        unwatch();
        clearTimeout(timer);
        resolve(value);
      };
      const consider = async (taskId: string, status: string) => {
        if (!titles.has(taskId)) {
          titles.set(
            taskId,
            world.db
              .execute<{ title: string }>(sql`select title from tasks where id = ${taskId}`)
              .then((rows) => rows[0]?.title ?? null),
          );
        }
        const title = await titles.get(taskId);
        if (!title?.startsWith(`${trigger.job} `)) return;
        if (status === trigger.status) finish(true);
        else if (trigger.status === "pending") finish(false);
      };
      // Watch first, then look: a change between the two is not missed.
      const unwatch = context.taskEvents.watch(team.subIds, (event) => void consider(event.id, event.status ?? ""));
      const timer = setTimeout(() => finish(false), 4000);
      void jobTask(trigger.job).then((task) => task && consider(task.id, task.status));
    });

  const perform = async (action: Action): Promise<void> => {
    await sleep(action.at - (Date.now() - started));
    if ("when" in action && action.when) {
      if (!(await reached(action.when)))
        return note(`skip ${action.kind}: ${action.when.job} never ${action.when.status}`);
    }
    switch (action.kind) {
      case "assign": {
        userTasks.set(action.work, await app.assignUserTask(world, team.leadId, `${action.work} research the market`));
        note(`assign ${action.work} to the lead`);
        if (action.stopRightAfter) {
          await app.stop(world, team.leadId);
          note(`stop the lead right after`);
        }
        return;
      }
      case "cancel": {
        const taskId =
          "work" in action.target ? userTasks.get(action.target.work) : (await jobTask(action.target.job))?.id;
        const name = "work" in action.target ? action.target.work : action.target.job;
        if (!taskId) return note(`skip cancel ${name}: no task yet`);
        await app.cancel(world, taskId);
        return note(`cancel ${name}${action.when ? ` (${action.when.status})` : ""}`);
      }
      case "stop": {
        const agentId = agentIds[action.agent]!;
        await app.stop(world, agentId);
        return note(
          `stop ${action.agent === 0 ? scenario.leadName : scenario.subNames[action.agent - 1]}${action.when ? ` (${action.when.job} ${action.when.status})` : ""}`,
        );
      }
      case "pause": {
        await app.setPaused(world, team.teamId, true);
        note("pause the team");
        await sleep(action.resumeAfter);
        await app.setPaused(world, team.teamId, false);
        return note("resume the team");
      }
      case "remove": {
        removedTasks.push(...(await app.removeAgent(world, team.subIds[action.sub]!)));
        return note(`remove ${scenario.subNames[action.sub]}${action.when ? ` (${action.when.job} in progress)` : ""}`);
      }
      case "webhook": {
        await app.deliverWebhook(world, team.teamId, team.secret!, {
          name: "feed",
          ping: action.ping,
          ...(action.work ? { work: action.work } : {}),
        });
        return note(`webhook ${action.ping}${action.work ? ` asking for ${action.work}` : ""}`);
      }
    }
  };
  await Promise.all(
    scenario.actions.map((action) =>
      // The cause too: a failed query's message names only the statement, its cause says why (a deadlock, a lost connection).
      perform(action).catch((error: unknown) =>
        note(
          `${action.kind} threw: ${error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ""}` : String(error)}`,
        ),
      ),
    ),
  );

  const waitStarted = Date.now();
  const quiet = await context.monitor.wait(team.teamId, agentIds, { stallMs: context.stallMs, maxMs: context.maxMs });
  const violations: Violation[] = [];
  if (!quiet) {
    const waited = Date.now() - waitStarted;
    const why =
      waited >= context.maxMs
        ? `still busy ${Math.round(waited / 1000)} s after the last action`
        : `busy with nothing changing for ${context.stallMs / 1000} s`;
    violations.push({ invariant: "0 stalled", message: `${why}: ${await context.monitor.describeBusy(agentIds)}` });
  }
  note(quiet ? "quiet" : "stalled");
  const state = await loadScenarioState(world.db, team.teamId, team.leadId, removedTasks);
  violations.push(...checkInvariants(state, entry.answers));
  entry.answers.clear();
  entry.checked = true;
  const logs = violations.length > 0 ? describeLogs(state) : [];
  return { scenario, violations, trace, startedAt: started, endedAt: Date.now(), steps: entry.calls, logs };
}
