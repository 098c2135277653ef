// A failed query's error, as anything may print it (Next logs a failed render's error itself,
// util.inspect and all), carries the SQL but never the values the query was given.
// patches/drizzle-orm+*.patch keeps them out of drizzle's message; postgres.js hides its own.
import { inspect } from "node:util";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { teams } from "@/lib/db/schema";
import { createTestDatabase, type TestDatabase } from "../support/database";

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase({ max: 2 });
});
afterAll(async () => {
  await database?.drop();
});

const SECRET = "sk-secret-value-4711";

async function failure(query: Promise<unknown>): Promise<unknown> {
  try {
    await query;
  } catch (error) {
    return error;
  }
  throw new Error("the query did not fail");
}

describe("a failed query's error", () => {
  it("names the query and leaves its values out of its message, its inspection and its causes", async () => {
    // (Postgres's own words may quote a value it could not take, "invalid input syntax …: \"x\"";
    // these failures are of the other kind: the statement, not the value, is at fault.)
    const errors = [
      await failure(database.db.execute(sql`select ${SECRET} from no_such_table`)),
      await failure(database.db.select().from(teams).where(sql`${teams.name} = ${SECRET} and no_such_column`)),
    ];
    for (const error of errors) {
      expect(String(error)).toMatch(/Failed query/);
      expect(inspect(error, { depth: 10 })).not.toContain(SECRET);
      expect(String((error as Error).cause)).not.toContain(SECRET);
      expect(JSON.stringify(error)).not.toContain(SECRET);
    }
  });
});
