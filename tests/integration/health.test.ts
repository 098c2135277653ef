import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabase } from "@/lib/db/client";
import { createTestDatabase, type TestDatabase } from "../support/database";

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
  it("answers 200 {status: ok} when the database answers", async () => {
    const { GET } = await import("@/app/api/health/route");
    const response = await GET();
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
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
