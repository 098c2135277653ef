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
  it("a reserved connection's next queries fail as CONNECTION_CLOSED: no crash, no hang (porsager/postgres#1208)", async () => {
    const sql = client({ max: 2 });
    const killer = client({ max: 1 });
    const reserved = await sql.reserve();
    const { pid } = (await reserved<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!;
    await killer`select pg_terminate_backend(${pid})`;
    // The first query after the kill may see the close itself; the next ones meet a connection with no socket.
    const outcomes = [
      await settleWithin(reserved`select 1`),
      await settleWithin(reserved`select 1`),
      await settleWithin(reserved`select 1`),
    ];
    expect(outcomes.slice(1)).toEqual(["CONNECTION_CLOSED", "CONNECTION_CLOSED"]);
    expect(outcomes[0]).not.toBe("hung");
    reserved.release();
    // The pool goes on: the released connection fails once more at most, then connects anew.
    const after = [await settleWithin(sql`select 1`), await settleWithin(sql`select 1`)];
    expect(after).not.toContain("hung");
    expect(after[1]).toBe("resolved");
  });

  it("a pooled connection whose backend was terminated serves the next queries", async () => {
    const sql = client({ max: 1 });
    const killer = client({ max: 1 });
    const { pid } = (await sql<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!;
    await killer`select pg_terminate_backend(${pid})`;
    // The backend's goodbye (57P01) may reach a query or two sent as it arrives; none hangs, and then all succeed.
    const outcomes: string[] = [];
    for (let i = 0; i < 5; i++) outcomes.push(await settleWithin(sql`select ${i}::int as n`));
    expect(outcomes).not.toContain("hung");
    expect(outcomes.slice(2)).toEqual(["resolved", "resolved", "resolved"]);
  });

  it("queries written in the tick the backend goes away settle, and the pool recovers", async () => {
    const sql = client({ max: 1 });
    const killer = client({ max: 1 });
    for (let round = 0; round < 5; round++) {
      const { pid } = (await sql<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!;
      const kill = killer`select pg_terminate_backend(${pid})`;
      // Small writes scheduled while the close arrives: each must settle one way or the other.
      const racing = Array.from({ length: 20 }, (_, i) => settleWithin(sql`select pg_sleep(0.005), ${i}::int`));
      await kill;
      expect(await Promise.all(racing)).not.toContain("hung");
      // A query may still meet the dying backend (57P01) once; the one after it gets a new connection.
      const next = [await settleWithin(sql`select 1`), await settleWithin(sql`select 1`)];
      expect(next).not.toContain("hung");
      expect(next[1]).toBe("resolved");
    }
  });
});
