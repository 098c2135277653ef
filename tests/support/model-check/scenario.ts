// The scenario generator of the engine model-check: from a seed, a small team, the work
// the person gives it, how each subordinate's model behaves on each job, and what the
// person does meanwhile (cancel, Stop, pause, remove, webhooks) and when.
import { createRng, type Rng } from "./random";

/** One model answer of a subordinate working on a job (one tool round, or a failure). */
export type SubStep =
  | { kind: "search" }
  | { kind: "record" }
  /** reportToLead; `taskId` as the model sends it; `missingResult` leaves out a required field. */
  | { kind: "report"; taskId: "exact" | "none" | "garbage"; missingResult?: boolean }
  /** requestInput; the job waits for the lead's answer before its next step. */
  | { kind: "ask" }
  /** The model call fails with this HTTP status (not retried): the session fails. */
  | { kind: "fail"; status: 400 | 401 }
  /** A tool call whose arguments are not JSON. */
  | { kind: "malformed" }
  /** searchKnowledge forever: the session's step limit ends it. */
  | { kind: "loop" }
  /** A tool round whose usage exceeds the session's token budget: the next call is refused. */
  | { kind: "spend" };

type JobBehaviour = "report" | "ask" | "silent" | "modelError" | "stepLimit" | "budget" | "malformed";

/** Work a lead delegates to one subordinate; its task title starts with the key ("J3 …"). */
export type Job = { key: string; sub: number; behaviour: JobBehaviour; steps: SubStep[] };

export type LeadStep =
  | { kind: "delegate"; job: string; malformed?: "agentId" | "title" }
  | { kind: "lookup" }
  | { kind: "fail"; status: 400 };

/** What the lead does for one user task ("U1 …") or one webhook that asks for work ("W1"). */
type LeadWork = { key: string; steps: LeadStep[] };

/** A task the person cares about: the lead's user task or a job delegated from it. */
type TaskRef = { work: string } | { job: string };
/** Fire only once the job's task has reached this status (else the action is skipped). */
export type Trigger = { job: string; status: "pending" | "in_progress" };

export type Action =
  | { kind: "assign"; at: number; work: string; stopRightAfter?: boolean }
  | { kind: "cancel"; at: number; target: TaskRef; when?: Trigger }
  /** agent 0 is the lead, i > 0 the subordinate i - 1. */
  | { kind: "stop"; at: number; agent: number; when?: Trigger }
  | { kind: "pause"; at: number; resumeAfter: number }
  | { kind: "remove"; at: number; sub: number; when?: Trigger }
  | { kind: "webhook"; at: number; work?: string; ping: string };

export type Scenario = {
  seed: number;
  teamName: string;
  leadName: string;
  subNames: string[];
  works: Record<string, LeadWork>;
  jobs: Record<string, Job>;
  actions: Action[];
  /** Probability that the lead briefs the person on a report. */
  briefChance: number;
};

const SUB_NAMES = ["Scout", "Analyst", "Courier"];

export function generateScenario(seed: number): Scenario {
  const rng = createRng(seed);
  const subCount = Number(rng.weighted({ "1": 35, "2": 45, "3": 20 }));
  const subNames = SUB_NAMES.slice(0, subCount);
  const works: Record<string, LeadWork> = {};
  const jobs: Record<string, Job> = {};
  const actions: Action[] = [];
  let jobCount = 0;

  const newJob = (): string => {
    jobCount += 1;
    const key = `J${jobCount}`;
    const behaviour = rng.weighted<JobBehaviour>({
      report: 44,
      ask: 14,
      silent: 8,
      modelError: 8,
      stepLimit: 4,
      budget: 5,
      malformed: 12,
    });
    jobs[key] = { key, sub: rng.int(0, subCount - 1), behaviour, steps: jobSteps(rng, behaviour) };
    return key;
  };
  const newWork = (key: string, delegations: number): void => {
    const steps: LeadStep[] = [];
    if (rng.chance(0.15)) steps.push({ kind: "lookup" });
    for (let i = 0; i < delegations; i++) {
      const job = newJob();
      if (rng.chance(0.1)) steps.push({ kind: "delegate", job, malformed: rng.pick(["agentId", "title"] as const) });
      steps.push({ kind: "delegate", job });
    }
    if (rng.chance(0.04)) steps.push({ kind: "fail", status: 400 });
    works[key] = { key, steps };
  };

  // Several tasks at once, sometimes one more a little later.
  const userTasks = Number(rng.weighted({ "1": 50, "2": 38, "3": 12 }));
  for (let i = 1; i <= userTasks; i++) {
    newWork(`U${i}`, Number(rng.weighted({ "0": 15, "1": 55, "2": 30 })));
    actions.push({ kind: "assign", at: 0, work: `U${i}` });
  }
  if (rng.chance(0.25)) {
    const key = `U${userTasks + 1}`;
    newWork(key, Number(rng.weighted({ "0": 20, "1": 60, "2": 20 })));
    // Sometimes Stop is pressed right after: before the session starts, or just after.
    actions.push({ kind: "assign", at: rng.int(150, 1200), work: key, stopRightAfter: rng.chance(0.35) });
  }

  let webhooks = 0;
  if (rng.chance(0.15)) {
    webhooks += 1;
    const withWork = rng.chance(0.6);
    if (withWork) newWork(`W${webhooks}`, 1);
    actions.push({
      kind: "webhook",
      at: rng.int(0, 1200),
      work: withWork ? `W${webhooks}` : undefined,
      ping: `p${webhooks}`,
    });
  }

  const jobKeys = Object.keys(jobs);
  const workKeys = Object.keys(works).filter((key) => key.startsWith("U"));
  /** Often, a trigger on one of this subordinate's jobs. */
  const trigger = (sub: number, status: Trigger["status"], chance: number): Trigger | undefined => {
    const own = jobKeys.filter((key) => jobs[key]!.sub === sub);
    return own.length > 0 && rng.chance(chance) ? { job: rng.pick(own), status } : undefined;
  };

  if (rng.chance(0.22)) {
    const target: TaskRef =
      jobKeys.length > 0 && rng.chance(0.7) ? { job: rng.pick(jobKeys) } : { work: rng.pick(workKeys) };
    const when =
      "job" in target && rng.chance(0.5)
        ? { job: target.job, status: rng.pick(["pending", "in_progress"] as const) }
        : undefined;
    actions.push({ kind: "cancel", at: rng.int(50, 1500), target, when });
  }
  if (rng.chance(0.2)) {
    const agent = rng.int(0, subCount);
    // A subordinate stopped while its task is pending: Stop before the session starts.
    const when = agent > 0 ? trigger(agent - 1, rng.chance(0.6) ? "pending" : "in_progress", 0.75) : undefined;
    actions.push({ kind: "stop", at: rng.int(50, 1500), agent, when });
  }
  if (rng.chance(0.12)) actions.push({ kind: "pause", at: rng.int(0, 1000), resumeAfter: rng.int(150, 800) });
  if (rng.chance(0.1)) {
    const sub = rng.int(0, subCount - 1);
    actions.push({ kind: "remove", at: rng.int(100, 1500), sub, when: trigger(sub, "in_progress", 0.5) });
  }

  return {
    seed,
    teamName: `MC ${seed.toString(36)}`,
    leadName: "Lead",
    subNames,
    works,
    jobs,
    actions: actions.sort((a, b) => a.at - b.at),
    briefChance: 0.35,
  };
}

function jobSteps(rng: Rng, behaviour: JobBehaviour): SubStep[] {
  const maybe = (probability: number, step: SubStep): SubStep[] => (rng.chance(probability) ? [step] : []);
  const taskIdForm = () => rng.weighted({ exact: 60, none: 25, garbage: 15 });
  switch (behaviour) {
    case "report":
      return [
        ...maybe(0.4, { kind: "search" }),
        ...maybe(0.3, { kind: "record" }),
        { kind: "report", taskId: taskIdForm() },
      ];
    case "ask":
      return [
        ...maybe(0.4, { kind: "search" }),
        { kind: "ask" },
        { kind: "report", taskId: rng.pick(["exact", "none"] as const) },
      ];
    case "silent":
      // Ends its turn without reporting: the engine reports for it.
      return [{ kind: "search" }, ...maybe(0.5, { kind: "record" })];
    case "modelError":
      return [...maybe(0.5, { kind: "search" }), { kind: "fail", status: rng.pick([400, 401] as const) }];
    case "stepLimit":
      return [{ kind: "loop" }];
    case "budget":
      return [{ kind: "spend" }, { kind: "search" }, { kind: "report", taskId: "exact" }];
    case "malformed":
      return rng.pick<SubStep[]>([
        [{ kind: "malformed" }, { kind: "report", taskId: "exact" }],
        [
          { kind: "report", taskId: "exact", missingResult: true },
          { kind: "report", taskId: "exact" },
        ],
        [{ kind: "search" }, { kind: "report", taskId: "garbage" }],
      ]);
  }
}

/** The scenario in a few lines, for a failure report. */
export function describeScenario(scenario: Scenario): string[] {
  const lines = [
    `team "${scenario.teamName}": lead ${scenario.leadName}, subordinates ${scenario.subNames.join(", ")}`,
  ];
  for (const work of Object.values(scenario.works)) {
    const steps = work.steps.map((step) =>
      step.kind === "delegate"
        ? `delegate ${step.job}${step.malformed ? ` (malformed ${step.malformed} first)` : ""}`
        : step.kind === "fail"
          ? `model fails ${step.status}`
          : step.kind,
    );
    lines.push(`${work.key}: ${steps.join(", ") || "(lead does it alone)"}`);
  }
  for (const job of Object.values(scenario.jobs)) {
    lines.push(
      `${job.key} → ${scenario.subNames[job.sub]}: ${job.behaviour} [${job.steps.map(describeSubStep).join(", ")}]`,
    );
  }
  return lines;
}

function describeSubStep(step: SubStep): string {
  switch (step.kind) {
    case "report":
      return `report(taskId ${step.taskId}${step.missingResult ? ", no result" : ""})`;
    case "fail":
      return `fail ${step.status}`;
    default:
      return step.kind;
  }
}
