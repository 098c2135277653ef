import { inspect } from "node:util";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { describe, expect, it } from "vitest";
import { describeForLog, loggable } from "./log";

const failedQuery = () =>
  new DrizzleQueryError(
    'select * from "sessions" where "token_hash" = $1',
    ["secret-hash"],
    Object.assign(new Error("sorry, too many clients already"), { code: "53300" }),
  );

describe("loggable", () => {
  it("keeps the query and its cause but not the parameters", () => {
    const shown = inspect(loggable(failedQuery()), { depth: 5 });
    expect(shown).toContain('Failed query: select * from "sessions"');
    expect(shown).toContain("too many clients");
    expect(shown).not.toContain("secret-hash");
    expect(shown).toMatch(/\n\s+at /); // the stack stays
  });
  it("finds the parameters further down a cause chain", () => {
    const wrapped = new Error("Could not start", { cause: failedQuery() });
    expect(inspect(loggable(wrapped), { depth: 5 })).not.toContain("secret-hash");
  });
  it("leaves other errors as they are", () => {
    const error = new Error("plain");
    expect(loggable(error)).toBe(error);
    expect(loggable("text")).toBe("text");
  });
});

describe("describeForLog", () => {
  it("is one line of messages without parameters", () => {
    expect(describeForLog(failedQuery())).toBe(
      'Failed query: select * from "sessions" where "token_hash" = $1: sorry, too many clients already',
    );
  });
});
