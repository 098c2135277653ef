// Hostile HTTP against the real server (issue 10): what fails inside Next before any handler
// runs, or only shows in the web process's memory, needs `npm start` itself (web only, here).
//
// - Paths Next cannot decode: a JSON 400 for the API, the not-found page for pages; nothing
//   answered 500, nothing logged as an error.
// - Bodies not sent as JSON: 415; X-Forwarded-Host without TRUST_PROXY: ignored (403).
// - The live-events stream: 1 000 HEAD requests, 500 aborted GETs and 20 readers that stop
//   reading, each followed by a burst of events, measured in the web process's resident memory
//   (printed); the stuck readers must be dropped and the memory must come back down.
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { buildIfStale, startApp, webServerRssMb, type AppServer } from "./app-server";

let database: TestDatabase;
let app: AppServer;

beforeAll(async () => {
  buildIfStale();
  database = await createTestDatabase();
  app = await startApp({ DATABASE_URL: database.url }, ["--web-only"]);
}, 300_000);

afterAll(async () => {
  await app?.stop();
  await database?.drop();
}, 60_000);

/** A request sent exactly as written: fetch() would normalise a malformed escape away. */
function raw(
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; type: string; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${app.url}/`,
      { method, path, headers: options.headers, agent: false },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (body += chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            type: String(response.headers["content-type"] ?? ""),
            body,
            headers: response.headers,
          }),
        );
      },
    );
    request.on("error", reject);
    request.end(options.body);
  });
}

describe("requests Next itself would answer 500", () => {
  it("answers paths it cannot decode with a JSON 400 (API) or the not-found page (pages)", async () => {
    const logBefore = app.output().length;
    for (const path of [
      "/api/agents/%",
      "/api/agents/%ZZ/messages",
      "/api/teams/%E0%A4%A",
      "/api/hooks/%",
      "/api/agents/%C0%80/tasks",
    ]) {
      for (const method of ["GET", "POST", "DELETE"]) {
        const response = await raw(
          method,
          path,
          method === "POST" ? { headers: { "content-type": "application/json" }, body: "{}" } : {},
        );
        expect({ path, method, status: response.status }).toEqual({ path, method, status: 400 });
        expect(response.type).toMatch(/^application\/json/);
        expect(JSON.parse(response.body)).toMatchObject({ error: { code: "bad_request:path" } });
      }
    }
    for (const path of ["/teams/%", "/teams/%ZZ/chat", "/agents/%E0%A4%A", "/inbox/%"]) {
      const response = await raw("GET", path);
      expect({ path, status: response.status }).toEqual({ path, status: 404 });
      expect(response.type).toMatch(/^text\/html/);
      expect(response.body).toContain("There is nothing here");
    }
    expect(app.output().slice(logBefore)).not.toMatch(/error|Internal Server Error/i);
  });

  it("answers a method Cadre serves nowhere with 405, its security headers and an Allow header, and logs no stack", async () => {
    const logBefore = app.output().length;
    for (const [method, path] of [
      ["TRACE", "/"],
      ["TRACE", "/api/teams"],
      ["PROPFIND", "/teams"],
      ["MKCOL", "/api/health"],
      ["PURGE", "/sign-in"],
    ] as const) {
      for (let repeat = 0; repeat < 3; repeat++) {
        const response = await raw(method, path);
        expect({ method, path, status: response.status }).toEqual({ method, path, status: 405 });
        expect(response.headers.allow).toBe(
          path.startsWith("/api") ? "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS" : "GET, HEAD",
        );
        expect(response.headers["x-frame-options"]).toBe("DENY");
        expect(response.headers["content-security-policy"]).toContain("default-src 'none'");
        expect(JSON.parse(response.body)).toMatchObject({ error: { code: "method_not_allowed:http" } });
      }
    }
    // A page is read, never written to: any other method is a 405 that names GET and HEAD.
    for (const [method, path] of [
      ["PUT", "/act"],
      ["DELETE", "/sign-in"],
      ["POST", "/teams"],
      ["PATCH", "/"],
      ["OPTIONS", "/inbox"],
    ] as const) {
      const response = await raw(method, path);
      expect({ method, path, status: response.status }).toEqual({ method, path, status: 405 });
      expect(response.headers.allow).toBe("GET, HEAD");
      expect(response.headers["x-frame-options"]).toBe("DENY");
    }
    await pause(300);
    expect(app.output().slice(logBefore)).not.toMatch(/error|^\s+at /im);
  });

  it("answers an API path no route serves with the API's JSON 404, not an HTML page", async () => {
    for (const [method, path] of [
      ["GET", "/api/nope"],
      ["GET", "/api/teams/x/nothing/here"],
      ["DELETE", "/api/whatever"],
    ] as const) {
      const response = await raw(method, path, { headers: { origin: app.url } });
      expect({ method, path, status: response.status }).toEqual({ method, path, status: 404 });
      expect(response.type).toMatch(/^application\/json/);
      expect(JSON.parse(response.body)).toMatchObject({
        error: { code: "not_found:route", message: expect.stringContaining(path) },
      });
    }
    // Real routes still answer as before.
    expect((await raw("GET", "/api/health")).status).toBe(200);
  });

  it("takes JSON bodies only as application/json, and X-Forwarded-Host only from a declared proxy", async () => {
    const team = JSON.stringify({ name: "Posted", mission: "m" });
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const response = await raw("POST", "/api/teams", { headers: { "content-type": type }, body: team });
      expect({ type, status: response.status }).toEqual({ type, status: 415 });
    }
    const forged = await raw("POST", "/api/teams", {
      headers: {
        "content-type": "application/json",
        origin: "http://evil.example",
        "x-forwarded-host": "evil.example",
      },
      body: team,
    });
    expect(forged.status).toBe(403);
    expect(await database.sql`select 1 from teams where name = 'Posted'`).toHaveLength(0);
    expect(
      (await raw("POST", "/api/teams", { headers: { "content-type": "application/json; charset=utf-8" }, body: team }))
        .status,
    ).toBe(201);
    expect((await raw("POST", "/api/inbox/read-all")).status).toBe(200); // no body: no Content-Type needed
  });
});

// ---------------------------------------------------------------------------------------------

/** `count` live events, about `bytes` each (distinct payloads: Postgres folds identical ones). */
async function emitEvents(count: number, bytes: number): Promise<void> {
  await database.sql`
    select pg_notify('cadre_events', json_build_object('table', 'teams', 'op', 'update', 'id', gen_random_uuid(), 'pad', repeat('x', ${bytes}))::text)
      from generate_series(1, ${count})`;
}

/**
 * Waits until the server has handed out every event sent before: opens a stream, sends a probe
 * event, reads until it arrives. A flood still in flight may drop the probe's own stream (it
 * too has only MAX_UNREAD_BYTES of slack); then it tries again on a new one.
 */
async function drained(): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const controller = new AbortController();
    try {
      const response = await fetch(`${app.url}/api/events`, { signal: controller.signal });
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      const probe = `probe-${attempt}-${Date.now()}`;
      let text = "";
      let probed = false;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        if (!probed && text.includes("event: ready")) {
          probed = true;
          await database.sql`select pg_notify('cadre_events', json_build_object('table', 'teams', 'op', 'update', 'id', ${probe}::text)::text)`;
        }
        if (text.includes(`"id":"${probe}"`)) return;
        text = text.slice(-200);
      }
    } finally {
      controller.abort();
    }
  }
  throw new Error("no live-events stream delivered the probe in 20 attempts");
}

async function inParallel(count: number, width: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the live-events stream on the real server", () => {
  const figures: string[] = [];
  afterAll(() => console.log(`[live events leak] web process RSS: ${figures.join("; ")}`));

  it("keeps no subscriber for HEAD requests, aborted GETs or readers that stop reading", {
    timeout: 300_000,
  }, async () => {
    // Warm up first (route modules loaded, the heap grown to its working size), so what is
    // measured after is what the requests keep, not what serving any request costs once.
    await drained();
    await inParallel(1_000, 20, async () => void (await fetch(`${app.url}/api/events`, { method: "HEAD" })));
    await emitEvents(200, 300);
    await drained();
    const start = webServerRssMb(app);
    figures.push(`start (warmed up) ${start} MB`);

    // 1 000 HEAD requests, then 1 500 events: a subscriber left by each would buffer every event.
    await inParallel(1_000, 20, async () => {
      const response = await fetch(`${app.url}/api/events`, { method: "HEAD" });
      expect(response.status).toBe(200);
    });
    await emitEvents(1_500, 300);
    await drained();
    await pause(500);
    const afterHead = webServerRssMb(app);
    figures.push(`after 1000 HEAD + 1500 events ${afterHead} MB`);
    expect(afterHead - start, "MB grown after the HEAD requests").toBeLessThan(150);

    // 500 GETs, half aborted before the answer, half after it started streaming; then events.
    await inParallel(500, 25, async (index) => {
      const controller = new AbortController();
      const response = fetch(`${app.url}/api/events`, { signal: controller.signal });
      if (index % 2 === 0) controller.abort();
      else await (await response).body!.getReader().read();
      controller.abort();
      await response.catch(() => undefined);
    });
    await pause(500);
    await emitEvents(1_500, 300);
    await drained();
    const afterAborts = webServerRssMb(app);
    figures.push(`after 500 aborted GETs + 1500 events ${afterAborts} MB`);
    expect(afterAborts - start, "MB grown after the aborted GETs").toBeLessThan(150);

    // 20 readers that take the answer and then stop reading; 8 000 events of ~2 KB each fill
    // their sockets and then the server's buffer, past which each must be dropped.
    const ended: boolean[] = [];
    const stuck = await Promise.all(
      Array.from(
        { length: 20 },
        (_, index) =>
          new Promise<http.IncomingMessage>((resolve, reject) => {
            http
              .get(`${app.url}/api/events`, { agent: false }, (response) => {
                response.pause();
                response.on("end", () => (ended[index] = true));
                response.on("error", () => (ended[index] = true));
                resolve(response);
              })
              .on("error", reject);
          }),
      ),
    );
    for (let burst = 0; burst < 8; burst++) await emitEvents(1_000, 2_000);
    await drained();
    const whileStuck = webServerRssMb(app);
    figures.push(`with 20 stuck readers after 8000 × 2 KB events ${whileStuck} MB`);
    for (const response of stuck) response.resume();
    const deadline = Date.now() + 30_000;
    while (ended.filter(Boolean).length < stuck.length && Date.now() < deadline) await pause(100);
    figures.push(`stuck readers dropped ${ended.filter(Boolean).length}/${stuck.length}`);
    for (const response of stuck) response.destroy();
    expect(ended.filter(Boolean).length, "stuck readers whose stream the server ended").toBe(stuck.length);
    expect(whileStuck - start, "MB held for the stuck readers").toBeLessThan(250);
    await drained();
    const end = webServerRssMb(app);
    figures.push(`end ${end} MB`);
  });
});
