// A page asked for while the database is down answers 503 with Retry-After and a plain page
// that loads itself again, within the probe's few seconds (never a hang, never Next's 500), and
// renders again once the database is back. Against a Postgres of the test's own, stopped and
// started again on the same port.
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { NextRequest } from "next/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres, type LocalPostgres } from "../../scripts/lib/embedded-postgres";

const dataDir = path.join(os.tmpdir(), `cadre-page-outage-${process.pid}`);
let server: LocalPostgres;
let port: number | undefined;

async function startServer() {
  server = await startEmbeddedPostgres({ dataDir, database: "cadre", persistent: true, port });
  port = server.port;
}

beforeAll(async () => {
  await startServer();
  // Read once per process (env()), so before anything reads it. No password: loopback pages pass the gate.
  process.env.DATABASE_URL = server.url;
}, 120_000);

afterAll(async () => {
  const { database } = await import("@/lib/db/client");
  await database().close();
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

async function askForPage(pathname: string) {
  const { proxy } = await import("@/proxy");
  const started = Date.now();
  const response = await proxy(
    new NextRequest(`http://localhost:3000${pathname}`, { headers: { host: "localhost:3000" } }),
  );
  return { response, ms: Date.now() - started };
}

describe("pages while the database is down", () => {
  it("503 with Retry-After and a page that tries again, then the page again once the database is back", {
    timeout: 120_000,
  }, async () => {
    const before = await askForPage("/teams");
    expect(before.response.status).toBe(200); // passed on to the page (NextResponse.next)

    await server.stop();
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the last answer's second
    const during = await askForPage("/teams");
    expect(during.response.status).toBe(503);
    expect(during.response.headers.get("retry-after")).toBe("5");
    expect(during.response.headers.get("content-security-policy")).toBeTruthy();
    const page = await during.response.text();
    expect(page).toContain("The database is not answering; this page tries again by itself");
    expect(page).toMatch(/http-equiv="refresh"/);
    expect(page).not.toMatch(/ECONNREFUSED|select|postgres/i);
    expect(during.ms).toBeLessThan(5_000);

    await startServer();
    let after = await askForPage("/teams");
    for (let i = 0; i < 20 && after.response.status !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      after = await askForPage("/teams");
    }
    expect(after.response.status).toBe(200);
  });
});
