// The Postgres driver (postgres.js, patched by patches/postgres+*.patch) when a connection's
// backend goes away under it. Upstream issue porsager/postgres#1208: on a reserved connection
// the next query threw an uncaught TypeError from a timer (the process died); with a plain
// "drop the write" fix (#1154's) it waited forever instead. Either would stop a worker: its
// liveness lock is such a connection, and a failover or a killed backend is enough.
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";

let database: TestDatabase;
const clients: postgres.Sql[] = [];
beforeAll(async () => {
  database = await createTestDatabase({ max: 2 });
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.end({ timeout: 1 }).catch(() => {})));
  await database?.drop();
});

function client(options: postgres.Options<Record<string, never>> = {}): postgres.Sql {
  const sql = postgres(database.url, { onnotice: () => {}, ...options });
  clients.push(sql);
  return sql;
}

/** The query's outcome within `ms`: "resolved", a rejection's code, or "hung". */
async function settleWithin(query: Promise<unknown>, ms = 5_000): Promise<string> {
  const hung = new Promise<string>((resolve) => setTimeout(() => resolve("hung"), ms).unref());
  return Promise.race([
    query.then(
      () => "resolved",
      (error: { code?: string }) => error.code ?? String(error),
    ),
    hung,
  ]);
}

describe("postgres.js when a backend is terminated", () => {
  // What the patch guarantees: no uncaught TypeError from a write on a connection with no
  // socket (the process survived: vitest fails a file on any uncaught error), a pool that
  // serves new queries afterwards, and no query that waits forever: one sent in the instant
  // between the backend's RST (the socket's 'error') and its 'close' is settled by the close
  // (unpatched: "hung ×3" of 15 here; see docs/decisions/2026-11-25-postgres-driver-patch.md).
  it("a reserved connection whose backend was killed: no uncaught error, and the pool goes on (porsager/postgres#1208)", async () => {
    const seen: string[] = [];
    for (let round = 0; round < 5; round++) {
      const sql = client({ max: 2 });
      const killer = client({ max: 1 });
      const reserved = await sql.reserve();
      const { pid } = (await reserved<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!;
      await killer`select pg_terminate_backend(${pid})`;
      for (let i = 0; i < 3; i++) seen.push(await settleWithin(reserved`select 1`, 2_000));
      reserved.release();
      expect(await settleWithin(client({ max: 1 })`select 1`)).toBe("resolved");
    }
    // Every query after the kill settled as a closed connection or waited; none succeeded on a dead backend.
    expect(seen.filter((outcome) => outcome === "resolved")).toEqual([]);
    console.log(`[driver] queries on a reserved connection after its backend was killed: ${tally(seen)}`);
    expect(seen.filter((outcome) => outcome === "hung")).toEqual([]);
  });

  // Still open: in about one run in five under this load a few queries of every kind still wait
  // past 10 s (a connect is given 3), e.g. "hung (transaction) ×2, hung (sleep) ×1, hung
  // (parameters) ×2" of 240 — a whole connection stalled, cause not found yet; the tally says
  // how often. Unpatched it is most runs. The reserved path (above) is at zero.
  it("backends killed again and again under load: the pool goes on, and the hangs are counted", async () => {
    // connect_timeout well inside the 10 s a query is given: a slow reconnect is not a hang.
    const sql = client({ max: 4, connect_timeout: 3, connection: { application_name: "cadre-driver-load" } });
    const killer = client({ max: 1 });
    const outcomes: string[] = [];
    let running = true;
    const kills = (async () => {
      let killed = 0;
      while (running) {
        const rows = await killer<{ killed: boolean }[]>`
          select pg_terminate_backend(pid) as killed from pg_stat_activity
          where application_name = 'cadre-driver-load' and pid <> pg_backend_pid()`;
        killed += rows.length;
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
      return killed;
    })();
    const load = Array.from({ length: 12 }, async (_, lane) => {
      for (let i = 0; i < 20; i++) {
        // Plain, with parameters (described first), in a transaction and on a reserved connection.
        const query =
          i % 4 === 0
            ? sql`select pg_sleep(0.005)`
            : i % 4 === 1
              ? sql`select ${lane}::int + ${i}::int as n`
              : i % 4 === 2
                ? sql.begin((tx) => tx`select 1`)
                : sql.reserve().then(async (reserved) => {
                    try {
                      return await reserved`select ${i}::int`;
                    } finally {
                      reserved.release();
                    }
                  });
        const outcome = await settleWithin(query, 10_000);
        outcomes.push(
          outcome === "hung" ? `hung (${["sleep", "parameters", "transaction", "reserved"][i % 4]})` : outcome,
        );
      }
    });
    await Promise.all(load);
    running = false;
    const killed = await kills;
    console.log(`[driver] ${outcomes.length} queries while ${killed} backends were killed: ${tally(outcomes)}`);
    expect(killed).toBeGreaterThan(0);
    // The last kill's goodbye may reach one more query; the one after it must succeed.
    await settleWithin(sql`select 1`);
    expect(await settleWithin(sql`select 1`)).toBe("resolved");
  }, 120_000);

  it("a pooled connection whose backend was killed is replaced: later queries succeed", async () => {
    const sql = client({ max: 1 });
    const killer = client({ max: 1 });
    const { pid } = (await sql<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!;
    await killer`select pg_terminate_backend(${pid})`;
    // The backend's goodbye (57P01) may reach a query or two sent as it arrives.
    await settleWithin(sql`select 1`, 2_000);
    await settleWithin(sql`select 1`, 2_000);
    expect(await settleWithin(client({ max: 1 })`select 1`)).toBe("resolved");
  });
});

function tally(outcomes: string[]): string {
  const counts = new Map<string, number>();
  for (const outcome of outcomes) counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
  return [...counts].map(([outcome, count]) => `${outcome} ×${count}`).join(", ");
}
