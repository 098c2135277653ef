// Sign-in and request bodies on the real server (issue 25, item 5), with APP_PASSWORD set:
//
// - Sign-in throttling that slows an attacker without locking the person out: one address is
//   held back after 5 wrong passwords; an attacker rotating addresses (TRUST_PROXY=1, so
//   X-Forwarded-For counts) at 20+ wrong passwords a minute holds strangers back, but the browser
//   that signed in before (its known-device cookie) still signs in; every 429 carries Retry-After
//   and says what happens next. Without TRUST_PROXY, neither X-Forwarded-For nor a forged
//   x-cadre-client-address changes who a request counts as.
// - A request without a session and with a half-sent body gets its 401 at once, before the body
//   is complete (Next's proxy no longer waits for it), and 30 parallel 10 MB bodies are not kept
//   in the web server's memory (figures printed).
// - A client that gives up half-way through its body is one line in the log, with no stack.
import http from "node:http";
import net from "node:net";
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { buildIfStale, startApp, webServerRssMb, type AppServer } from "./app-server";

const PASSWORD = "sign-in and bodies";
let database: TestDatabase;
let app: AppServer;
/** The person's own browser, signed in before anyone guessed: its session and known-device cookies. */
const owner = { session: "", device: "" };

beforeAll(async () => {
  buildIfStale();
  database = await createTestDatabase();
  app = await startApp({ DATABASE_URL: database.url, APP_PASSWORD: PASSWORD, TRUST_PROXY: "1" }, ["--web-only"]);
  const signedIn = await signIn(app, PASSWORD, { "x-forwarded-for": "198.51.100.20" });
  expect(signedIn.status).toBe(200);
  Object.assign(owner, {
    session: cookieOf(signedIn.cookies, "cadre_session"),
    device: cookieOf(signedIn.cookies, "cadre_device"),
  });
}, 300_000);

afterAll(async () => {
  await app?.stop();
  await database?.drop();
}, 60_000);

type SignInAnswer = { status: number; retryAfter: string | null; message: string; cookies: string[] };

async function signIn(
  server: AppServer,
  password: string,
  headers: Record<string, string> = {},
): Promise<SignInAnswer> {
  const response = await fetch(`${server.url}/api/auth/sign-in`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ password }),
  });
  const body = (await response.json()) as { error?: { message: string } };
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    message: body.error?.message ?? "",
    cookies: response.headers.getSetCookie(),
  };
}

/** `name=value` of the cookie called `name` among Set-Cookie values. */
function cookieOf(cookies: string[], name: string): string {
  const found = cookies.find((cookie) => cookie.startsWith(`${name}=`));
  expect(found, `a ${name} cookie`).toBeDefined();
  return found!.split(";")[0]!;
}

/** A 429 as the person meets it: Retry-After in seconds (1–60) and a message that says when and what next. */
function expectHeldBack(answer: SignInAnswer, words: RegExp): void {
  expect(answer.status).toBe(429);
  const seconds = Number(answer.retryAfter);
  expect(seconds).toBeGreaterThanOrEqual(1);
  expect(seconds).toBeLessThanOrEqual(60);
  expect(answer.message).toContain(`Try again in ${seconds} second`);
  expect(answer.message).toMatch(words);
  expect(answer.cookies).toEqual([]);
}

type Answer = { status: number; ms: number; headers: http.IncomingHttpHeaders; body: string };
type HalfSent = { answer: Promise<Answer>; request: http.ClientRequest };

/**
 * A request whose body is half-sent and never finished: 50 000 bytes of a declared 100 000
 * (or of a chunked body). The path is sent exactly as written. The caller ends it (destroy).
 */
function sendHalf(
  server: AppServer,
  method: string,
  pathname: string,
  options: { headers?: Record<string, string>; chunked?: boolean } = {},
): HalfSent {
  const started = Date.now();
  const headers = {
    "content-type": "application/json",
    ...(options.chunked ? { "transfer-encoding": "chunked" } : { "content-length": "100000" }),
    ...options.headers,
  };
  const request = http.request(`${server.url}/`, { method, path: pathname, headers, agent: false });
  const answer = new Promise<Answer>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no answer within 10 s to ${method} ${pathname} while its body was half-sent`)),
      10_000,
    );
    request.on("response", (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => {
        clearTimeout(timer);
        resolve({ status: response.statusCode ?? 0, ms: Date.now() - started, headers: response.headers, body });
      });
    });
    request.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
  answer.catch(() => {}); // a test that only aborts never awaits it
  request.write("x".repeat(50_000));
  return { answer, request };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("signing in while someone guesses", () => {
  it("holds one address back after 5 wrong passwords, even when the 6th is right", async () => {
    const address = { "x-forwarded-for": "203.0.113.7" };
    for (let guess = 1; guess <= 5; guess++) expect((await signIn(app, `guess ${guess}`, address)).status).toBe(401);
    expectHeldBack(
      await signIn(app, PASSWORD, address),
      /^Too many wrong passwords from this address\. Try again in \d+ seconds?; until then no password from it is checked\.$/,
    );
  });

  it("does not stop the person who signed in before while an attacker rotates addresses at 20+ wrong passwords a minute", async () => {
    const started = Date.now();
    const statuses: number[] = [];
    for (let guess = 0; guess < 30; guess++) {
      const answer = await signIn(app, `guess ${guess}`, { "x-forwarded-for": `192.0.2.${guess}` });
      statuses.push(answer.status);
      if (answer.status === 429)
        expectHeldBack(
          answer,
          /browsers that have not signed in here before.*A browser that has signed in here before can still sign in\./,
        );
    }
    const attackSeconds = (Date.now() - started) / 1000;
    expect(attackSeconds).toBeLessThan(60); // 30 wrong passwords within a minute
    // 401 until all strangers together have 20 failures in the minute (the first test's 5 count too), then 429.
    const wrong = statuses.filter((status) => status === 401).length;
    expect(wrong).toBeGreaterThanOrEqual(15);
    expect(wrong).toBeLessThanOrEqual(20);
    expect(statuses.slice(wrong).every((status) => status === 429)).toBe(true);
    // A stranger is held back now, right password or not ...
    expectHeldBack(
      await signIn(app, PASSWORD, { "x-forwarded-for": "198.51.100.21" }),
      /A browser that has signed in here before can still sign in\./,
    );
    // ... but the person's browser signs in, from its own address or a new one.
    for (const address of ["198.51.100.20", "198.51.100.99"]) {
      const again = await signIn(app, PASSWORD, { "x-forwarded-for": address, cookie: owner.device });
      expect({ address, status: again.status }).toEqual({ address, status: 200 });
      const session = cookieOf(again.cookies, "cadre_session");
      expect((await fetch(`${app.url}/api/teams`, { headers: { cookie: session } })).status).toBe(200);
    }
    console.log(
      `[sign-in] ${statuses.length} wrong passwords from as many addresses in ${attackSeconds.toFixed(1)} s: ${wrong} answered 401, ${statuses.length - wrong} held back (429); the known browser signed in twice meanwhile`,
    );
  });

  describe("a burst of held-back bodies, on a server no one has guessed at yet", () => {
    let fresh: AppServer;
    beforeAll(async () => {
      fresh = await startApp({ DATABASE_URL: database.url, APP_PASSWORD: PASSWORD, TRUST_PROXY: "1" }, ["--web-only"]);
    }, 120_000);
    afterAll(async () => await fresh?.stop(), 60_000);

    it("checks at most 5 of 200 passwords whose bodies are held back and then sent at once; the rest answer 429", async () => {
      const { port } = new URL(fresh.url);
      const connections = await Promise.all(
        Array.from(
          { length: 200 },
          (_, index) =>
            new Promise<{ socket: net.Socket; body: string; status: Promise<number> }>((resolve, reject) => {
              // The last one carries the right password: it must not get through either.
              const body = JSON.stringify({ password: index === 199 ? PASSWORD : `burst ${index}` });
              const socket = net.connect(Number(port), "127.0.0.1", () => {
                socket.write(
                  `POST /api/auth/sign-in HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Forwarded-For: 203.0.113.99\r\n` +
                    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`,
                );
                let answer = "";
                const status = new Promise<number>((settled) => {
                  socket.on("data", (chunk) => (answer += chunk.toString()));
                  socket.on("close", () => settled(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)));
                  socket.on("error", () => settled(0));
                });
                resolve({ socket, body, status });
              });
              socket.on("error", reject);
            }),
        ),
      );
      await pause(500); // every connection in, every body held back
      for (const { socket, body } of connections) socket.write(body);
      const statuses = await Promise.all(connections.map(({ status }) => status));
      const count = (status: number) => statuses.filter((each) => each === status).length;
      console.log(
        `[sign-in] 200 held-back bodies from one address, sent at once: ${count(401)} × 401, ${count(429)} × 429, ${count(200)} × 200, other ${200 - count(401) - count(429) - count(200)}`,
      );
      expect(count(401)).toBeLessThanOrEqual(5);
      expect(count(200)).toBe(0);
      expect(count(429)).toBeGreaterThanOrEqual(195);
    }, 60_000);
  });

  describe("without TRUST_PROXY", () => {
    let direct: AppServer;
    beforeAll(async () => {
      direct = await startApp({ DATABASE_URL: database.url, APP_PASSWORD: PASSWORD, TRUST_PROXY: "0" }, ["--web-only"]);
    }, 120_000);
    afterAll(async () => await direct?.stop(), 60_000);

    it("counts the connection's address: a forged X-Forwarded-For or x-cadre-client-address changes nothing", async () => {
      for (let guess = 1; guess <= 5; guess++) {
        const forged = { "x-forwarded-for": `10.0.0.${guess}`, "x-cadre-client-address": `10.1.0.${guess}` };
        expect((await signIn(direct, `guess ${guess}`, forged)).status).toBe(401);
      }
      expectHeldBack(
        await signIn(direct, PASSWORD, { "x-forwarded-for": "10.0.0.99", "x-cadre-client-address": "10.1.0.99" }),
        /from this address/,
      );
      expect(direct.output()).toContain("[auth] failed sign-in from 127.0.0.1");
    });
  });
});

describe("bodies from strangers", () => {
  it("answers a half-sent body without a session with 401 at once, before the body is complete", async () => {
    const forgedSession = `cadre_session=${randomBytes(32).toString("base64url")}`;
    const cases: Array<[string, string, string, Parameters<typeof sendHalf>[3]]> = [
      ["a declared 100 KB body", "POST", "/api/teams", {}],
      ["a chunked body", "POST", `/api/agents/${randomUUID()}/chat`, { chunked: true }],
      ["a made-up session cookie", "PATCH", `/api/teams/${randomUUID()}`, { headers: { cookie: forgedSession } }],
    ];
    const times: string[] = [];
    for (const [what, method, pathname, options] of cases) {
      const { answer, request } = sendHalf(app, method, pathname, options);
      try {
        const { status, ms, headers, body } = await answer;
        expect({ what, status }).toEqual({ what, status: 401 });
        expect(JSON.parse(body)).toMatchObject({ error: { code: "unauthorized:session" } });
        expect({ what, ms: ms < 3_000 }).toEqual({ what, ms: true });
        expect(request.writableEnded).toBe(false); // the rest of the body was never sent
        // The answer still carries the security headers, though the proxy did not write it.
        expect({ what, frame: headers["x-frame-options"], csp: headers["content-security-policy"] }).toEqual({
          what,
          frame: "DENY",
          csp: expect.stringContaining("default-src 'none'"),
        });
        times.push(`${what} ${ms} ms`);
      } finally {
        request.destroy();
      }
    }
    console.log(`[bodies] 401 to a half-sent body: ${times.join("; ")}`);
  });

  it("answers a half-sent body to a path with a % at once: 400 (API) when undecodable, 405 (a page takes no body), else 401", async () => {
    for (const [pathname, status] of [
      ["/api/teams/%", 400],
      ["/api/agents/%41bc/stop", 401], // decodable: the route's own check refuses it, unread
      ["/teams/%ZZ", 405], // a page is answered for GET and HEAD only, before its path is read
    ] as const) {
      const { answer, request } = sendHalf(app, "POST", pathname);
      try {
        const answered = await answer;
        expect({ pathname, status: answered.status, fast: answered.ms < 3_000 }).toEqual({
          pathname,
          status,
          fast: true,
        });
        expect(request.writableEnded).toBe(false);
        expect(answered.headers["x-frame-options"]).toBe("DENY");
        if (status === 400) expect(JSON.parse(answered.body)).toMatchObject({ error: { code: "bad_request:path" } });
      } finally {
        request.destroy();
      }
    }
  });

  it("keeps no stranger's body in memory: 30 parallel 10 MB bodies", { timeout: 120_000 }, async () => {
    const HUNG_UP = -1;
    const tenMegabytes = 10 * 1024 * 1024;
    const chunk = Buffer.alloc(1024 * 1024, "x");
    /** Sends the whole body unless the server hangs up first; resolves with the answer's status. */
    const sendWhole = () =>
      new Promise<number>((resolve, reject) => {
        let status = 0;
        const request = http.request(`${app.url}/api/teams`, {
          method: "POST",
          agent: false,
          headers: { "content-type": "application/json", "content-length": String(tenMegabytes) },
        });
        request.on("response", (response) => {
          status = response.statusCode ?? 0;
          response.resume();
          response.on("end", () => resolve(status));
        });
        // The server may answer and hang up before the body is through: a write then fails
        // (EPIPE, ECONNRESET) before the answer is read. That is the refusal this test wants.
        request.on("error", (error: NodeJS.ErrnoException) =>
          status || error.code === "EPIPE" || error.code === "ECONNRESET" ? resolve(status || HUNG_UP) : reject(error),
        );
        let sent = 0;
        const write = () => {
          while (sent < tenMegabytes) {
            sent += chunk.length;
            if (!request.write(chunk)) return void request.once("drain", write);
          }
          request.end();
        };
        write();
      });
    await sendWhole(); // warm up: the route loaded, the heap at its working size
    const before = webServerRssMb(app);
    const statuses = await Promise.all(Array.from({ length: 30 }, sendWhole));
    const after = webServerRssMb(app);
    console.log(`[bodies] web server RSS around 30 parallel unauthenticated 10 MB bodies: ${before} MB → ${after} MB`);
    // Each refused: a 401, or the connection closed on the body before the 401 was read.
    expect(statuses.filter((status) => status !== 401 && status !== HUNG_UP)).toEqual([]);
    // Buffered, they would take 300 MB; read and dropped as they come, next to nothing.
    expect(after - before, "MB grown").toBeLessThan(60);
  });
});

describe("a client that gives up half-way through its body", () => {
  it("is one line in the log, with no stack", async () => {
    const logBefore = app.output().length;
    const givenUp: Array<[string, string, Record<string, string>]> = [
      ["signed in, to a route that reads the body", "/api/teams", { cookie: owner.session }],
      ["signed out", "/api/teams", {}],
      // Answered at once by the web server's preload (scripts/lib/client-address.mjs), its body unread: nothing to log.
      ["to a path Next cannot decode", "/api/teams/%ZZ", {}],
    ];
    for (const [, pathname, headers] of givenUp) {
      const { request } = sendHalf(app, "POST", pathname, { headers });
      await pause(300);
      request.destroy();
    }
    await expect
      .poll(() => app.output().slice(logBefore), { timeout: 10_000 })
      .toContain(
        "[http] POST /api/teams: the request body stopped after 50,000 bytes (the client closed the connection); the request was dropped.",
      );
    await pause(500);
    const log = app.output().slice(logBefore);
    expect(log).not.toMatch(/ECONNRESET|Error: aborted|^\s+at /m);
    expect(log.trim().split("\n")).toHaveLength(1);
  });
});
