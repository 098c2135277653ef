import { describe, expect, it } from "vitest";
import { connectionBudget, describeConnectionRoom } from "./connection-budget";

describe("connectionBudget", () => {
  it("lets a web server and two workers fit a stock Postgres with the default pool", () => {
    const web = connectionBudget("web", 10);
    const worker = connectionBudget("worker", 10);
    expect(web).toEqual({ queries: 7, jobs: 3, total: 12 });
    expect(worker.total).toBe(13);
    expect(web.total + 2 * worker.total).toBeLessThanOrEqual((100 - 3) * 0.5);
  });
  it("keeps two connections for each pool at the smallest size", () => {
    expect(connectionBudget("worker", 4)).toEqual({ queries: 2, jobs: 2, total: 7 });
  });
});

describe("describeConnectionRoom", () => {
  const budget = connectionBudget("worker", 10);
  it("states the budget and the server's limit, with no warning when there is room", () => {
    const { line, warning } = describeConnectionRoom(
      "worker",
      budget,
      { maxConnections: 100, reserved: 3, inUse: 20 },
      10,
    );
    expect(line).toBe(
      "database: this worker may open up to 13 connections (DATABASE_POOL_SIZE=10: 7 for queries, 3 for the job queue, 3 dedicated); the server allows 100 (3 reserved), 20 in use.",
    );
    expect(warning).toBeNull();
  });
  it("warns when fewer connections are free than this process may open", () => {
    const { warning } = describeConnectionRoom("worker", budget, { maxConnections: 100, reserved: 3, inUse: 90 }, 10);
    expect(warning).toMatch(
      /^only 7 connections are free on the database and this worker may need 13\. Raise max_connections/,
    );
  });
  it("warns when the server is too small for a web server and two workers", () => {
    const { warning } = describeConnectionRoom(
      "web",
      connectionBudget("web", 10),
      { maxConnections: 40, reserved: 3, inUse: 1 },
      10,
    );
    expect(warning).toMatch(/allows 37 connections, fewer than a web server and two workers may open \(38\)/);
  });
});
