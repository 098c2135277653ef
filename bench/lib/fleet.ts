import { readdirSync, readFileSync } from "node:fs";
import { inArray, sql } from "drizzle-orm";
import { assignTask } from "../../src/lib/domain/tasks";
import { agents, conversations, teams, workSessions } from "../../src/lib/db/schema";
import type { JobQueue } from "../../src/lib/jobs/job-queue";
import { waitFor } from "../../tests/support/worker-process";
import { roundsSinceTask, type ModelServer } from "./model-server";
import type { BenchDatabase } from "./postgres";

export type FleetAgent = { id: string; name: string; teamId: string };

/**
 * `teamCount` teams of `perTeam` agents (a lead and its subordinates), written in three
 * statements (teams, agents, their two conversations each): a thousand agents in well
 * under a second, the same rows createTeamWithLead and createSubordinate write.
 */
export async function createFleet(
  database: BenchDatabase,
  prefix: string,
  teamCount: number,
  perTeam: number,
): Promise<FleetAgent[]> {
  const { db } = database;
  const teamRows = await db
    .insert(teams)
    .values(
      Array.from({ length: teamCount }, (_, t) => ({
        name: `${prefix} team ${t}`,
        mission: "Work through what is given.",
      })),
    )
    .returning({ id: teams.id });
  const leads = await db
    .insert(agents)
    .values(
      teamRows.map((team, t) => ({
        teamId: team.id,
        name: `${prefix} ${t}.0`,
        role: "lead" as const,
        instructions: "",
      })),
    )
    .returning({ id: agents.id, name: agents.name, teamId: agents.teamId });
  const members =
    perTeam > 1
      ? await db
          .insert(agents)
          .values(
            leads.flatMap((lead, t) =>
              Array.from({ length: perTeam - 1 }, (_, i) => ({
                teamId: lead.teamId,
                parentAgentId: lead.id,
                name: `${prefix} ${t}.${i + 1}`,
                role: "subordinate" as const,
                instructions: "Do the task.",
              })),
            ),
          )
          .returning({ id: agents.id, name: agents.name, teamId: agents.teamId })
      : [];
  const all = [...leads, ...members];
  await db.insert(conversations).values(
    all.flatMap((agent) => [
      { agentId: agent.id, mode: "foreground" as const },
      { agentId: agent.id, mode: "background" as const },
    ]),
  );
  return all;
}

/** Every agent of the fleet answers its task with `toolRounds` web searches, then a line of text. */
export function scriptFleet(model: ModelServer, fleet: readonly FleetAgent[], toolRounds: number): void {
  for (const agent of fleet) {
    model.script(agent.name, ({ request }) =>
      roundsSinceTask(request) < toolRounds
        ? { toolCalls: [{ name: "tavilySearch", arguments: { query: "scale" } }] }
        : { text: "Task done." },
    );
  }
}

/**
 * One task for each agent, all at once; resolves when every agent's session has ended.
 * Returns the seconds from the first assignment to the last session's end (database clock).
 */
export async function runOneTaskEach(
  database: BenchDatabase,
  jobs: JobQueue,
  fleet: readonly FleetAgent[],
  title: string,
  timeoutMs = 600_000,
): Promise<{ seconds: number; sessions: number; kinds: string }> {
  const ids = fleet.map((agent) => agent.id);
  const [{ started }] = (await database.sql`select clock_timestamp()::text as started`) as unknown as [
    { started: string },
  ];
  // A few at a time: the bench process is one more client, not the figure.
  for (let i = 0; i < fleet.length; i += 20) {
    await Promise.all(
      fleet
        .slice(i, i + 20)
        .map((agent) => assignTask(database.db, jobs, { agentId: agent.id, source: "user", title })),
    );
  }
  const done = await waitFor(
    async () => {
      const [row] = await database.db.execute<{ busy: number; ended: string | null; sessions: number }>(sql`
        select (select count(*)::int from tasks where agent_id in ${ids} and status not in ('completed', 'failed', 'cancelled'))
             + (select count(*)::int from work_sessions where agent_id in ${ids} and status = 'running') as busy,
               (select max(ended_at) from work_sessions where agent_id in ${ids} and started_at >= ${started}) as ended,
               (select count(*)::int from work_sessions where agent_id in ${ids} and started_at >= ${started}) as sessions`);
      return row && row.busy === 0 ? row : null;
    },
    { timeoutMs, what: `every task of "${title}" to end` },
  );
  const kinds = await database.db.execute<{ kind: string; n: number }>(sql`
    select status || case when steps = 0 then ' (no step)' else '' end || coalesce(': ' || left(error, 70), '') as kind, count(*)::int as n
      from work_sessions where agent_id in ${ids} and started_at >= ${started} group by 1 order by 2 desc`);
  return {
    seconds: (new Date(done.ended!).getTime() - new Date(started).getTime()) / 1000,
    sessions: done.sessions,
    kinds: kinds.map((row) => `${row.n} ${row.kind}`).join(", "),
  };
}

/** The most sessions of one agent running at once, over these agents' whole history. */
export async function maxSessionsPerAgent(database: BenchDatabase, fleet: readonly FleetAgent[]): Promise<number> {
  const rows = await database.db
    .select({ agentId: workSessions.agentId, startedAt: workSessions.startedAt, endedAt: workSessions.endedAt })
    .from(workSessions)
    .where(
      inArray(
        workSessions.agentId,
        fleet.map((agent) => agent.id),
      ),
    );
  const byAgent = new Map<string, { at: number; delta: number }[]>();
  for (const row of rows) {
    const events = byAgent.get(row.agentId) ?? [];
    events.push(
      { at: row.startedAt.getTime(), delta: 1 },
      { at: row.endedAt?.getTime() ?? Number.POSITIVE_INFINITY, delta: -1 },
    );
    byAgent.set(row.agentId, events);
  }
  let max = 0;
  for (const events of byAgent.values()) {
    events.sort((a, b) => a.at - b.at || a.delta - b.delta);
    let current = 0;
    for (const event of events) {
      current += event.delta;
      max = Math.max(max, current);
    }
  }
  return max;
}

/** CPU time (user + system, ms) and resident memory (MiB) of a process, from /proc. */
export function processUsage(pid: number): { cpuMs: number; rssMiB: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of the line (11 and 12 after the name), in clock ticks (100 Hz on Linux).
    const cpuMs = (Number(fields[11]) + Number(fields[12])) * 10;
    const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN);
    return { cpuMs, rssMiB: rssKiB / 1024 };
  } catch {
    return { cpuMs: Number.NaN, rssMiB: Number.NaN };
  }
}

/** CPU ms of the Postgres backends serving this database now (they are local processes). */
export async function backendCpuMs(database: BenchDatabase): Promise<Map<number, number>> {
  const rows = (await database.sql`select pid from pg_stat_activity where datname = current_database()`) as unknown as {
    pid: number;
  }[];
  return new Map(rows.map((row) => [row.pid, processUsage(row.pid).cpuMs]));
}

/** CPU the backends spent between two readings (backends that closed in between are missed). */
export function backendCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, cpu] of after) if (Number.isFinite(cpu)) sum += cpu - (before.get(pid) ?? 0);
  return sum;
}

/** A process and everything it started, from /proc (the web server is a supervisor, `next start` and its server under it). */
function processTree(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(parents.get(tree[i]!) ?? []));
  return tree;
}

/** CPU and RSS of a process tree, summed. */
export function treeUsage(pid: number): { cpuMs: number; rssMiB: number } {
  return processTree(pid)
    .map(processUsage)
    .reduce((sum, usage) => ({ cpuMs: sum.cpuMs + (usage.cpuMs || 0), rssMiB: sum.rssMiB + (usage.rssMiB || 0) }), {
      cpuMs: 0,
      rssMiB: 0,
    });
}
