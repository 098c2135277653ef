import "server-only";
// How many Postgres connections one Cadre process may open, and whether the server has room
// for them. A stock Postgres allows 100 (3 of them reserved for superusers); the defaults let
// a web server and two workers fit with room to spare for psql, backups and a migration.
import type postgres from "postgres";
import { env } from "@/lib/env";

export type ProcessRole = "web" | "worker";

/**
 * Connections a process holds beside its pools: every process one LISTEN of its own (live
 * events in the web process, stop requests in a worker; db/listener.ts) and pg-boss's LISTEN;
 * a worker also its liveness lock (worker/liveness.ts).
 */
const DEDICATED: Record<ProcessRole, number> = { web: 2, worker: 3 };

export type ConnectionBudget = {
  /** Cadre's query pool. */
  queries: number;
  /** pg-boss's pool. */
  jobs: number;
  /** Everything this process may open at once: both pools and its dedicated connections. */
  total: number;
};

/**
 * How a process's DATABASE_POOL_SIZE is shared: pg-boss's pool a third (at least 2: a fetch
 * and a send at once), Cadre's queries the rest (at least 2).
 */
export function connectionBudget(role: ProcessRole, size: number = env().DATABASE_POOL_SIZE): ConnectionBudget {
  const jobs = Math.max(2, Math.round(size / 3));
  const queries = Math.max(2, size - jobs);
  return { queries, jobs, total: queries + jobs + DEDICATED[role] };
}

export type ConnectionRoom = {
  maxConnections: number;
  /** Slots only superusers may take (superuser_reserved_connections, and reserved_connections from Postgres 16). */
  reserved: number;
  inUse: number;
};

/** What the server allows and holds now; one query. */
async function readConnectionRoom(sql: postgres.Sql): Promise<ConnectionRoom> {
  const [row] = await sql<{ max_connections: number; reserved: number; in_use: number }[]>`
    select current_setting('max_connections')::int as max_connections,
           current_setting('superuser_reserved_connections')::int
             + coalesce(nullif(current_setting('reserved_connections', true), '')::int, 0) as reserved,
           (select count(*)::int from pg_stat_activity where backend_type = 'client backend') as in_use`;
  return { maxConnections: row!.max_connections, reserved: row!.reserved, inUse: row!.in_use };
}

/**
 * The start-up line about connections, and a warning when the server has too little room:
 * fewer free slots than this process may open, or too few in all for a web server and two
 * workers. Reserved slots count as taken: Cadre should not rely on connecting as a superuser.
 */
export function describeConnectionRoom(
  role: ProcessRole,
  budget: ConnectionBudget,
  room: ConnectionRoom,
  poolSize: number,
): { line: string; warning: string | null } {
  const usable = room.maxConnections - room.reserved;
  const free = Math.max(0, usable - room.inUse);
  const line =
    `database: this ${role === "web" ? "web server" : "worker"} may open up to ${budget.total} connections ` +
    `(DATABASE_POOL_SIZE=${poolSize}: ${budget.queries} for queries, ${budget.jobs} for the job queue, ${DEDICATED[role]} dedicated); ` +
    `the server allows ${room.maxConnections} (${room.reserved} reserved), ${room.inUse} in use.`;
  const webAndTwoWorkers = connectionBudget("web", poolSize).total + 2 * connectionBudget("worker", poolSize).total;
  const fix =
    "Raise max_connections on the server or lower DATABASE_POOL_SIZE (at least 4); until then requests may wait or answer 503 when connections run out.";
  if (free < budget.total) {
    return {
      line,
      warning: `only ${free} connections are free on the database and this ${role === "web" ? "web server" : "worker"} may need ${budget.total}. ${fix}`,
    };
  }
  if (usable < webAndTwoWorkers) {
    return {
      line,
      warning: `the database allows ${usable} connections, fewer than a web server and two workers may open (${webAndTwoWorkers}). ${fix}`,
    };
  }
  return { line, warning: null };
}

/**
 * Says at start-up how many connections this process may open and warns when the server has
 * too little room. Never fails the start: a check that cannot run is one line too.
 */
export async function reportConnectionRoom(
  sql: postgres.Sql,
  role: ProcessRole,
  log: (line: string) => void,
): Promise<void> {
  const poolSize = env().DATABASE_POOL_SIZE;
  const budget = connectionBudget(role, poolSize);
  try {
    const { line, warning } = describeConnectionRoom(role, budget, await readConnectionRoom(sql), poolSize);
    log(`[${role}] ${line}`);
    if (warning) log(`[${role}] warning: ${warning}`);
  } catch (error) {
    log(
      `[${role}] database: this process may open up to ${budget.total} connections; could not read the server's limit (${error instanceof Error ? error.message.split("\n")[0] : String(error)}).`,
    );
  }
}
