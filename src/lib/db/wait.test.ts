import { describe, expect, it } from "vitest";
import { LastErrorLine } from "../../../scripts/lib/processes";
import { databaseNotReadyYet, databaseUnavailableReason } from "./errors";

describe("databaseNotReadyYet", () => {
  it("waits for a database that is starting, full or not answering yet, not for one that refuses for good", () => {
    expect(databaseNotReadyYet(Object.assign(new Error("sorry, too many clients already"), { code: "53300" }))).toMatch(
      /too many clients/,
    );
    expect(databaseNotReadyYet(Object.assign(new Error("the database system is starting up"), { code: "57P03" }))).toBe(
      "it is starting up",
    );
    expect(
      databaseNotReadyYet(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })),
    ).toMatch(/connection refused/);
    expect(databaseNotReadyYet(Object.assign(new Error('database "x" does not exist'), { code: "3D000" }))).toBeNull();
    expect(
      databaseNotReadyYet(
        Object.assign(new Error('password authentication failed for user "cadre"'), { code: "28P01" }),
      ),
    ).toBeNull();
  });
});

describe("LastErrorLine", () => {
  it("keeps the line that says what went wrong, not the stack or Node's footer", () => {
    const errors = new LastErrorLine();
    errors.add('[worker] could not start: database "x" does not exist\n');
    expect(errors.last()).toBe('[worker] could not start: database "x" does not exist');
    errors.add(
      "file:///app/src/worker/index.ts:3\n  throw new Error('boom');\n        ^\n\nTypeError: Cannot read properties of undefined (reading 'x')\n    at main (file:///app/src/worker/index.ts:3:9)\n",
    );
    errors.add("    at process.processTicksAndRejections (node:internal/process/task_queues:105:5)\n\nNode.js v24.1.0");
    expect(errors.last()).toBe("TypeError: Cannot read properties of undefined (reading 'x')");
  });
});

describe("databaseUnavailableReason", () => {
  it("finds the database's absence through drizzle's wrapper, and nothing else", () => {
    const wrapped = (cause: Error) => new Error("Failed query: select 1\nparams: ", { cause });
    expect(
      databaseUnavailableReason(
        wrapped(Object.assign(new Error("sorry, too many clients already"), { code: "53300" })),
      ),
    ).toMatch(/too many clients/);
    expect(
      databaseUnavailableReason(
        wrapped(Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" })),
      ),
    ).toMatch(/closed the connection/);
    expect(
      databaseUnavailableReason(
        wrapped(Object.assign(new Error("write CONNECTION_CLOSED"), { code: "CONNECTION_CLOSED" })),
      ),
    ).toMatch(/connection closed/);
    expect(databaseUnavailableReason(wrapped(Object.assign(new Error("duplicate key"), { code: "23505" })))).toBeNull();
    expect(databaseUnavailableReason(new TypeError("x is undefined"))).toBeNull();
  });
});
