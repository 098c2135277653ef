// Reporting for the engine model-check: a failing scenario in a few lines (its script,
// what the person did when, what broke, and on request every agent's work log), and
// violations grouped by kind.
import type { ScenarioState } from "./invariants";
import type { ScenarioResult, Violation } from "./runner";
import { describeScenario } from "./scenario";

/** Each agent's tasks and work log, one line per message, for a failure report. */
export function describeLogs(state: ScenarioState): string[] {
  const lines: string[] = [];
  const cut = (text: string) => JSON.stringify(text.length > 110 ? `${text.slice(0, 110)}…` : text);
  for (const agent of state.agents) {
    lines.push(`${agent.name} (${agent.id.slice(0, 8)}):`);
    for (const task of state.tasks.filter((t) => t.agentId === agent.id)) {
      lines.push(
        `  task ${task.id.slice(0, 8)} ${task.status} "${task.title}" parent ${task.parentTaskId?.slice(0, 8) ?? "-"} result ${cut(task.result ?? "")}`,
      );
    }
    const conversation = state.conversations.find((c) => c.agentId === agent.id && c.mode === "background");
    for (const message of conversation ? (state.messages.get(conversation.id) ?? []) : []) {
      const calls = (message.toolCalls ?? [])
        .map((call) => `${call.toolName}#${call.toolCallId}(${JSON.stringify(call.args).slice(0, 80)})`)
        .join(" ");
      lines.push(
        `  ${message.role}${message.toolCallId ? `#${message.toolCallId}` : ""}: ${cut(message.content)}${calls ? ` ${calls}` : ""}`,
      );
    }
    for (const input of state.inputs.filter((i) => i.agentId === agent.id))
      lines.push(`  (queued) ${cut(input.content)}`);
  }
  return lines;
}

/** A violation's message with ids, names and numbers taken out: violations of one kind read the same. */
function violationKind(violation: Violation): string {
  // A stall's or a crash's details differ every time; what kind it is comes first.
  const head =
    violation.invariant === "0 stalled" || violation.invariant === "0 worker crashed"
      ? violation.message.split(":")[0]!
      : violation.message;
  const message = head
    .replace(/[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}/g, "<id>")
    .replace(/mc-[^-\s]+-\d+-[a-z0-9]+/g, "<answer>")
    .replace(/"(?:[^"\\]|\\.)*"/g, "<text>")
    .replace(/\b[0-9a-f]{8}\b/g, "<id>")
    .replace(/\b(Scout|Analyst|Courier|Lead)\b/g, "<agent>")
    .replace(/\d+/g, "N")
    .split("\n")[0]!;
  return `[${violation.invariant}] ${message.slice(0, 220)}`;
}

export function formatFailure(result: ScenarioResult, withLogs = false): string {
  return [
    `scenario seed ${result.scenario.seed} (replay: CADRE_SEED=${result.scenario.seed} CADRE_MODEL_CHECK_SCENARIOS=1)`,
    ...describeScenario(result.scenario).map((line) => `  ${line}`),
    "  trace:",
    ...result.trace.map((line) => `    ${line}`),
    "  violations:",
    ...result.violations.map((v) => `    [${v.invariant}] ${v.message}`),
    ...(withLogs ? ["  work logs:", ...result.logs.map((line) => `    ${line}`)] : []),
  ].join("\n");
}

/**
 * Violations grouped by kind (ids, names and numbers taken out), each with how many, in
 * how many scenarios, and example seeds — those no worker death touched first (the
 * others marked *).
 */
export function summarizeByKind(
  violations: readonly (Violation & { seed: number })[],
  disturbed: ReadonlySet<number>,
): string[] {
  const kinds = new Map<string, { count: number; seeds: number[]; disturbed: number }>();
  for (const v of violations) {
    const kind = violationKind(v);
    const group = kinds.get(kind) ?? { count: 0, seeds: [], disturbed: 0 };
    group.count += 1;
    if (v.invariant !== "0 worker crashed" && disturbed.has(v.seed)) group.disturbed += 1;
    if (!group.seeds.includes(v.seed)) group.seeds.push(v.seed);
    kinds.set(kind, group);
  }
  return [...kinds.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, group]) => {
      const seeds = [
        ...group.seeds.filter((seed) => !disturbed.has(seed)),
        ...group.seeds.filter((seed) => disturbed.has(seed)).map((seed) => `${seed}*`),
      ];
      const note = group.disturbed ? ` (${group.disturbed} while a worker died)` : "";
      return `  ${kind}\n      ×${group.count} in ${group.seeds.length} scenario(s)${note}, seeds ${seeds.slice(0, 6).join(", ")}`;
    });
}
