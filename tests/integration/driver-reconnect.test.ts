// Connections cut while queries are being written (a failover, a killed backend): the pool
// must serve the next queries, and nothing may throw outside a query. postgres.js 3.4.9
// forgot a cleared write timer on close, so a connection cut at the wrong moment never wrote
// again (CONNECT_TIMEOUT for good) or threw an uncaught TypeError that ended the worker;
// scripts/patch-postgres.mjs (postinstall) mends it.
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";

let database: TestDatabase;
let admin: postgres.Sql;
const uncaught: unknown[] = [];
const onUncaught = (error: unknown) => uncaught.push(error);

beforeAll(async () => {
  database = await createTestDatabase({ max: 1 });
  admin = postgres(database.url, { max: 1, onnotice: () => {} });
  process.on("uncaughtException", onUncaught);
});
afterAll(async () => {
  process.off("uncaughtException", onUncaught);
  await admin?.end({ timeout: 5 });
  await database?.drop();
});

describe("the database driver, when connections are cut mid-write", () => {
  it("serves every query afterwards and throws nothing outside a query", { timeout: 90_000 }, async () => {
    const pool = postgres(database.url, { max: 4, onnotice: () => {}, connect_timeout: 3, application_name: "cut-me" });
    try {
      // Many small queries keep writes scheduled (the driver batches them per tick) while the backends are killed.
      for (let round = 0; round < 40; round++) {
        // A query that fails sends the next at once, as a worker's loop or a retry does: that
        // write is scheduled in the very tick the dying connection is closed.
        const query = (i: number, retries: number): Promise<unknown> =>
          pool`select ${"x".repeat(200 + i)}::text as v, pg_sleep(0.001)`.catch(() => (retries > 0 ? query(i, retries - 1) : null));
        const burst = Array.from({ length: 40 }, (_, i) => query(i, 3));
        await new Promise((resolve) => setTimeout(resolve, round % 5));
        await admin`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'cut-me'`;
        await Promise.all(burst);
      }
      const started = Date.now();
      const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => pool`select ${i}::int as i`));
      const failed = results.filter((result) => result.status === "rejected").map((result) => String((result as PromiseRejectedResult).reason));
      console.log(`[driver reconnect] 40 rounds of cuts; afterwards ${40 - failed.length}/40 queries answered in ${Date.now() - started} ms; uncaught: ${uncaught.length}`);
      expect(failed).toEqual([]);
      expect(uncaught).toEqual([]);
    } finally {
      await pool.end({ timeout: 5 });
    }
  });
});
