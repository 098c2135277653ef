// TRUST_PROXY=1 (issue 10, item 4): behind a reverse proxy the operator declares, the
// X-Forwarded-Host it sets names this server for the Origin check; without it (auth.test.ts)
// the header counts for nothing. env() is read once per process, hence a file of its own.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

vi.hoisted(() => {
  process.env.TRUST_PROXY = "1";
  delete process.env.APP_PASSWORD;
});

let database: TestDatabase;
let team: typeof import("@/app/api/teams/[teamId]/route");

beforeAll(async () => {
  database = await createWebTestDatabase();
  team = await import("@/app/api/teams/[teamId]/route");
});

afterAll(async () => {
  await closeWebTestDatabase(database);
});

describe("TRUST_PROXY=1", () => {
  it("accepts the origin the proxy forwarded for, and still refuses any other", async () => {
    const { team: target } = await createTeamFixture(database.db, { name: "Behind a proxy" });
    const patch = (origin: string, name: string) =>
      team.PATCH(
        new Request(`http://127.0.0.1:3000/api/teams/${target.id}`, {
          method: "PATCH",
          headers: {
            origin,
            host: "127.0.0.1:3000",
            "x-forwarded-host": "cadre.example.org",
            "content-type": "application/json",
          },
          body: JSON.stringify({ name }),
        }),
        { params: Promise.resolve({ teamId: target.id }) },
      );
    expect((await patch("https://evil.example", "Evil")).status).toBe(403);
    expect((await patch("https://cadre.example.org", "Renamed")).status).toBe(200);
    const [row] = await database.sql`select name from teams where id = ${target.id}`;
    expect(row!.name).toBe("Renamed");
  });
});
