import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabase } from "@/lib/db/client";
import { createTask } from "@/lib/db/queries/tasks";
import { registerWorker } from "@/lib/db/queries/workers";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTeamFixture } from "../support/fixtures";

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
  process.env.DATABASE_URL = database.url;
});
afterAll(async () => {
  const holder = globalThis as { cadreDatabase?: { close: () => Promise<void> } };
  await holder.cadreDatabase?.close();
  delete holder.cadreDatabase;
  await database?.drop();
});

describe("GET /api/health", () => {
  it("answers 200 with the database, the workers and the backlog when the database answers", async () => {
    const { GET } = await import("@/app/api/health/route");
    const response = await GET();
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: "ok",
      database: "ok",
      workers: { alive: 0, lastSeenAt: null },
      backlog: { agents: 0, oldestWaitingSince: null },
    });
  });

  it("answers 200 degraded while a task waits and no worker is alive, ok again once one is", async () => {
    const { GET } = await import("@/app/api/health/route");
    const { lead } = await createTeamFixture(database.db);
    const task = await createTask(database.db, { agentId: lead.id, source: "user", title: "Research prices" });
    const waiting = await GET();
    expect(waiting.status).toBe(200);
    expect(await waiting.json()).toEqual({
      status: "degraded",
      database: "ok",
      workers: { alive: 0, lastSeenAt: null },
      backlog: { agents: 1, oldestWaitingSince: task.createdAt.toISOString() },
    });

    await registerWorker(database.db, "health-test:1");
    const served = await (await GET()).json();
    expect(served).toMatchObject({ status: "ok", workers: { alive: 1 }, backlog: { agents: 1 } });
    expect(Date.parse(served.workers.lastSeenAt)).toBeGreaterThan(Date.now() - 60_000);
  });

  it("answers 503 with a JSON error when the database does not", async () => {
    const holder = globalThis as { cadreDatabase?: ReturnType<typeof createDatabase> };
    const healthy = holder.cadreDatabase;
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    holder.cadreDatabase = createDatabase("postgres://postgres@127.0.0.1:1/none", { max: 1 });
    try {
      const { GET } = await import("@/app/api/health/route");
      const response = await GET();
      expect(response.status).toBe(503);
      const body = await response.json();
      expect(body.error.code).toBe("unavailable:database");
      expect(body.error.message).toMatch(/database does not answer/);
    } finally {
      await holder.cadreDatabase.close();
      holder.cadreDatabase = healthy;
    }
  });
});
