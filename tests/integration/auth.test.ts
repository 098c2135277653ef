// Sign-in (issue 5, item 7), with APP_PASSWORD set for this file's process: every API route
// found on disk answers 401 without a session, also with the forged `x-middleware-subrequest`
// header that skipped middleware in CVE-2025-29927; /api/health stays open; sign-in is
// rate-limited; the cookie is httpOnly; foreign and null Origins get 403 even signed in.
import { randomBytes, randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { NextRequest } from "next/server";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CLIENT_ADDRESS_HEADER, sessionTokensIn } from "@/lib/auth/auth-rules";
import { signInThrottle } from "@/lib/auth/sign-in-throttle";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

const PASSWORD = vi.hoisted(() => {
  // Before any module reads the environment: env() is parsed once per process.
  const password = "correct horse battery staple";
  process.env.APP_PASSWORD = password;
  return password;
});

const ORIGIN = "http://localhost:3000";
const FORGED = { "x-middleware-subrequest": "middleware:middleware:middleware:middleware:middleware" };
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] as const;

/** Reachable signed out, with what a bare request gets; everything else must be 401. */
const PUBLIC: Record<string, number> = {
  "GET /api/health": 200,
  "POST /api/auth/sign-in": 400, // no body
  "POST /api/auth/sign-out": 200,
  "POST /api/hooks/[teamId]": 404, // a random team id; a real one would want a signature
  "POST /api/act": 404, // no token: an action link's token is the credential for its one item
  "POST /api/slack/actions": 404, // Slack buttons are off without SLACK_SIGNING_SECRET; with it, Slack's signature
};

type Handler = (request: Request, context: { params: Promise<Record<string, string | string[]>> }) => Promise<Response>;
type ApiRoute = {
  pattern: string;
  url: string;
  params: Record<string, string | string[]>;
  handlers: Partial<Record<(typeof METHODS)[number], Handler>>;
};

/** Every route.ts under src/app/api, so a new route cannot be forgotten. */
function routeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return routeFiles(full);
    return entry.name === "route.ts" ? [full] : [];
  });
}

async function loadApiRoutes(): Promise<ApiRoute[]> {
  const root = path.resolve("src/app/api");
  const routes: ApiRoute[] = [];
  for (const file of routeFiles(root).sort()) {
    const segments = path.relative(root, path.dirname(file)).split(path.sep);
    const params: Record<string, string | string[]> = {};
    const urlSegments = segments.map((segment) => {
      const [, catchAll, name] = /^\[(\.\.\.)?(\w+)\]$/.exec(segment) ?? [];
      if (!name) return segment;
      const value = randomUUID();
      params[name] = catchAll ? [value] : value;
      return value;
    });
    const module = (await import(file)) as Record<string, unknown>;
    const handlers: ApiRoute["handlers"] = {};
    for (const method of METHODS)
      if (typeof module[method] === "function") handlers[method] = module[method] as Handler;
    routes.push({
      pattern: `/api/${segments.join("/")}`,
      url: `${ORIGIN}/api/${urlSegments.join("/")}`,
      params,
      handlers,
    });
  }
  return routes;
}

let database: TestDatabase;
let routes: ApiRoute[];
let auth: typeof import("@/lib/auth/auth");
let signIn: Handler;
let signOut: Handler;

beforeAll(async () => {
  database = await createWebTestDatabase();
  routes = await loadApiRoutes();
  auth = await import("@/lib/auth/auth");
  signIn = routes.find((route) => route.pattern === "/api/auth/sign-in")!.handlers.POST!;
  signOut = routes.find((route) => route.pattern === "/api/auth/sign-out")!.handlers.POST!;
});

afterAll(async () => {
  await closeWebTestDatabase(database);
  console.log(
    `[auth] API routes found: ${figures.routes} (${figures.handlers} handlers); without a session 401: ${figures.unauthorized}, ` +
      `with a forged x-middleware-subrequest 401: ${figures.forged}, open: ${figures.open} (${Object.keys(PUBLIC).join(", ")}); ` +
      `signed in and working: ${figures.working}; foreign/null Origin with the cookie 403: ${figures.foreignOrigin}; ` +
      `wrong passwords before 429: ${figures.wrongBefore429}; proxy checks: ${figures.proxy}`,
  );
});

const figures = {
  routes: 0,
  handlers: 0,
  unauthorized: 0,
  forged: 0,
  open: 0,
  working: 0,
  foreignOrigin: 0,
  wrongBefore429: 0,
  proxy: 0,
};

function call(
  route: ApiRoute,
  method: (typeof METHODS)[number],
  headers: Record<string, string> = {},
  init: RequestInit = {},
): Promise<Response> {
  const request = new Request(route.url, { method, headers, ...init });
  return route.handlers[method]!(request, { params: Promise.resolve(route.params) });
}

function api(pattern: string): ApiRoute {
  const found = routes.find((route) => route.pattern === pattern);
  if (!found) throw new Error(`No route ${pattern}`);
  return found;
}

async function errorCode(response: Response): Promise<string> {
  expect(response.headers.get("content-type")).toMatch(/application\/json/);
  return ((await response.json()) as { error: { code: string } }).error.code;
}

function signInRequest(password: unknown, headers: Record<string, string> = {}): Request {
  return new Request(`${ORIGIN}/api/auth/sign-in`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ password }),
  });
}

/** As the web server stamps each request with its connection's address (scripts/lib/client-address.mjs). */
function from(address: string): Record<string, string> {
  return { [CLIENT_ADDRESS_HEADER]: address };
}

async function signedInCookie(client = `198.51.100.${Math.floor(Math.random() * 200) + 1}`): Promise<string> {
  const response = await signIn(signInRequest(PASSWORD, from(client)), { params: Promise.resolve({}) });
  expect(response.status).toBe(200);
  return response.headers.get("set-cookie")!.split(";")[0]!;
}

/** Closes a streaming body (the live-events route) so the test does not hang on it. */
async function settle(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {});
}

describe("every API route, signed out", () => {
  it("finds the routes on disk", () => {
    figures.routes = routes.length;
    figures.handlers = routes.reduce((sum, route) => sum + Object.keys(route.handlers).length, 0);
    expect(routes.length).toBeGreaterThanOrEqual(20);
    for (const key of Object.keys(PUBLIC)) {
      const [method, pattern] = key.split(" ") as [(typeof METHODS)[number], string];
      expect(api(pattern).handlers[method], key).toBeDefined();
    }
  });

  it("answers 401 without a session, also with a forged x-middleware-subrequest header; only the public routes open", async () => {
    for (const route of routes) {
      for (const method of Object.keys(route.handlers) as (typeof METHODS)[number][]) {
        const key = `${method} ${route.pattern}`;
        for (const headers of [{}, FORGED, { cookie: "cadre_session=not-a-session" }] as Record<string, string>[]) {
          const response = await call(route, method, headers);
          if (key in PUBLIC) {
            expect(response.status, key).toBe(PUBLIC[key]);
            await settle(response);
            continue;
          }
          expect(response.status, key).toBe(401);
          expect(await errorCode(response)).toBe("unauthorized:session");
          if (headers === FORGED) figures.forged += 1;
          else if (Object.keys(headers).length === 0) figures.unauthorized += 1;
        }
        if (key in PUBLIC) figures.open += 1;
      }
    }
    expect(figures.unauthorized).toBe(figures.handlers - Object.keys(PUBLIC).length);
  });

  it("keeps /api/health open: 200 {status: ok, …}", async () => {
    const response = await call(api("/api/health"), "GET");
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: "ok", database: "ok" });
  });

  it("refuses a session token that is well formed but unknown, and one that has expired", async () => {
    const forged = `cadre_session=${randomBytes(32).toString("base64url")}`;
    expect((await call(api("/api/teams"), "GET", { cookie: forged })).status).toBe(401);

    const cookie = await signedInCookie();
    expect((await call(api("/api/teams"), "GET", { cookie })).status).toBe(200);
    await database.sql`update sessions set expires_at = now() - interval '1 second'`;
    expect((await call(api("/api/teams"), "GET", { cookie })).status).toBe(401);
  });
});

describe("signing in", () => {
  const warnings: string[] = [];
  beforeAll(() => {
    vi.spyOn(console, "warn").mockImplementation((line: string) => void warnings.push(line));
  });
  afterAll(() => {
    vi.mocked(console.warn).mockRestore();
    // Every failure reaches the log, with the client it came from.
    expect(warnings).toContain("[auth] failed sign-in from 203.0.113.7");
  });

  const attempt = (password: string, headers: Record<string, string>) =>
    signIn(signInRequest(password, headers), { params: Promise.resolve({}) });

  /** The message of a 429, after checking it carries Retry-After (1–60 s) and no cookie. */
  async function refused(response: Response): Promise<string> {
    expect(response.status).toBe(429);
    const retryAfter = Number(response.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(response.headers.get("set-cookie")).toBeNull();
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("rate_limited:sign_in");
    expect(error.message).toContain(`Try again in ${retryAfter} second`);
    return error.message;
  }

  /** The known-device cookie a successful sign-in sets (`cadre_device=…`). */
  function deviceCookieOf(response: Response): string {
    const cookie = response.headers.getSetCookie().find((value) => value.startsWith("cadre_device="));
    expect(cookie).toBeDefined();
    return cookie!.split(";")[0]!;
  }

  it("refuses a wrong password with 401, and the 6th failure within a minute from one address with 429 and Retry-After, even with the right password", async () => {
    signInThrottle.clear();
    const client = from("203.0.113.7");
    for (let guess = 1; guess <= 5; guess++) {
      const response = await attempt(`guess ${guess}`, client);
      expect(response.status).toBe(401);
      expect(await errorCode(response)).toBe("unauthorized:password");
      expect(response.headers.get("set-cookie")).toBeNull();
      figures.wrongBefore429 += 1;
    }
    for (const password of ["guess 6", PASSWORD]) {
      expect(await refused(await attempt(password, client))).toMatch(
        /^Too many wrong passwords from this address\. Try again in \d+ seconds?; until then no password from it is checked\.$/,
      );
    }
    // Another address is not locked out by this one.
    expect((await attempt(PASSWORD, from("203.0.113.8"))).status).toBe(200);
  });

  it("counts by the connection's address: an X-Forwarded-For of the client's own choosing changes nothing without TRUST_PROXY", async () => {
    signInThrottle.clear();
    for (let guess = 1; guess <= 5; guess++) {
      expect((await attempt("wrong", { ...from("203.0.113.9"), "x-forwarded-for": `10.0.0.${guess}` })).status).toBe(
        401,
      );
    }
    await refused(await attempt(PASSWORD, { ...from("203.0.113.9"), "x-forwarded-for": "10.0.0.99" }));
    signInThrottle.clear();
  });

  it("holds strangers back together, so rotating addresses gains an attacker nothing, while the person's own browser still signs in", async () => {
    signInThrottle.clear();
    // The person signed in from this browser before: it holds a known-device cookie.
    const device = deviceCookieOf(await attempt(PASSWORD, from("198.51.100.20")));
    // An attacker with a new address for every guess: after 20 in a minute, strangers wait.
    const { strangers } = signInThrottle.limits;
    for (let guess = 0; guess < strangers; guess++)
      expect((await attempt("wrong", from(`192.0.2.${guess}`))).status).toBe(401);
    for (const password of ["wrong", PASSWORD]) {
      const message = await refused(await attempt(password, from("192.0.2.250")));
      expect(message).toContain("Too many wrong passwords from browsers that have not signed in here before");
      expect(message).toContain("A browser that has signed in here before can still sign in.");
    }
    // The person's browser, from its own address or any other, signs in regardless, and keeps its device.
    const again = await attempt(PASSWORD, { ...from("198.51.100.20"), cookie: device });
    expect(again.status).toBe(200);
    expect(deviceCookieOf(again)).toBe(device);
    expect((await attempt(PASSWORD, { ...from("192.0.2.251"), cookie: device })).status).toBe(200);
    // A made-up or tampered device cookie is a stranger's.
    const [name, value] = device.split("=") as [string, string];
    const tampered = `${name}=${value.slice(0, 23)}${value[23] === "A" ? "B" : "A"}${value.slice(24)}`;
    for (const cookie of [tampered, `cadre_device=${"A".repeat(22)}.${"B".repeat(43)}`]) {
      await refused(await attempt(PASSWORD, { ...from("198.51.100.20"), cookie }));
    }
    signInThrottle.clear();
  });

  it("holds a known browser back by its own failures only", async () => {
    signInThrottle.clear();
    const device = deviceCookieOf(await attempt(PASSWORD, from("198.51.100.30")));
    for (let guess = 1; guess <= signInThrottle.limits.perDevice; guess++) {
      expect((await attempt("wrong", { ...from(`192.0.2.${guess}`), cookie: device })).status).toBe(401);
    }
    expect(await refused(await attempt(PASSWORD, { ...from("198.51.100.30"), cookie: device }))).toMatch(
      /^Too many wrong passwords from this browser\. Try again in \d+ seconds?\.$/,
    );
    // Its failures were not a stranger's: another browser at the same address still signs in.
    expect((await attempt(PASSWORD, from("198.51.100.30"))).status).toBe(200);
    signInThrottle.clear();
  });

  it("sets an httpOnly, SameSite=Lax, Path=/ session cookie (Secure over https) and stores only a hash of its token", async () => {
    signInThrottle.clear();
    const response = await signIn(signInRequest(PASSWORD), { params: Promise.resolve({}) });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ signedIn: true });
    const [cookie, device] = response.headers.getSetCookie() as [string, string];
    // The known-device cookie goes only to sign-in and sign-out, never to a page or another site.
    expect(device.split(";").map((part) => part.trim())).toEqual([
      expect.stringMatching(/^cadre_device=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/),
      "Path=/api/auth",
      "HttpOnly",
      "SameSite=Strict",
      `Max-Age=${365 * 24 * 60 * 60}`,
    ]);
    const [pair, ...attributes] = cookie.split(";").map((part) => part.trim());
    expect(pair).toMatch(/^cadre_session=[A-Za-z0-9_-]{43}$/);
    expect(attributes).toEqual(
      expect.arrayContaining(["Path=/", "HttpOnly", "SameSite=Lax", `Max-Age=${30 * 24 * 60 * 60}`]),
    );
    expect(attributes).not.toContain("Secure");
    const token = pair!.split("=")[1]!;
    const stored = await database.sql<{ token_hash: string }[]>`select token_hash from sessions`;
    expect(stored.some((row) => row.token_hash.includes(token))).toBe(false);

    const overHttps = await signIn(signInRequest(PASSWORD, { "x-forwarded-proto": "https" }), {
      params: Promise.resolve({}),
    });
    // Over https both are `__Host-` cookies: Secure, Path=/, no Domain, so no neighbouring subdomain can plant one.
    const [httpsSession, httpsDevice] = overHttps.headers.getSetCookie() as [string, string];
    expect(httpsSession).toMatch(/^__Host-cadre_session=[A-Za-z0-9_-]{43}; Path=\/; .*; Secure$/);
    expect(httpsDevice).toMatch(/^__Host-cadre_device=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}; Path=\/; .*; Secure$/);
    expect(`${httpsSession};${httpsDevice}`).not.toMatch(/Domain=/i);
    const httpsCookie = httpsSession.split(";")[0]!;
    expect((await call(api("/api/teams"), "GET", { cookie: httpsCookie })).status).toBe(200);
  });

  it("does not let a planted duplicate cookie shadow the real one (cookie tossing)", async () => {
    signInThrottle.clear();
    const first = await attempt(PASSWORD, from("198.51.100.40"));
    const session = first.headers.getSetCookie()[0]!.split(";")[0]!;
    const device = deviceCookieOf(first);
    // Eight of each, as a sibling subdomain can plant over http (one per longer path), well-formed all.
    const plantedSession = Array.from(
      { length: 8 },
      () => `cadre_session=${randomBytes(32).toString("base64url")}`,
    ).join("; ");
    const plantedDevice = Array.from(
      { length: 8 },
      (_, index) => `cadre_device=${"A".repeat(21)}${index}.${"B".repeat(43)}`,
    ).join("; ");
    // A planted session before (and after) the real one: the real one still counts, for the API and for pages.
    for (const cookie of [`${plantedSession}; ${session}`, `${session}; ${plantedSession}`]) {
      expect((await call(api("/api/teams"), "GET", { cookie })).status).toBe(200);
      expect(await auth.checkPageAccess({ host: "localhost:3000", sessionTokens: sessionTokensIn(cookie) })).toEqual({
        allowed: true,
      });
    }
    // A planted device cookie before the real one: the person's browser is still known while strangers wait.
    for (let guess = 0; guess < signInThrottle.limits.strangers; guess++)
      expect((await attempt("wrong", from(`192.0.2.${guess}`))).status).toBe(401);
    expect((await attempt(PASSWORD, { ...from("198.51.100.40"), cookie: `${plantedDevice}; ${device}` })).status).toBe(
      200,
    );
    signInThrottle.clear();
  });

  it("checks at most the limit of passwords whose bodies arrive together: the rest answer 429 unread", async () => {
    signInThrottle.clear();
    // 200 attempts from one address, each with its body held back until all have been let in.
    const releases: Array<() => void> = [];
    const held = (password: string) => {
      const body = new TextEncoder().encode(JSON.stringify({ password }));
      return new ReadableStream<Uint8Array>({
        start(controller) {
          releases.push(() => {
            controller.enqueue(body);
            controller.close();
          });
        },
      });
    };
    const answers = Array.from({ length: 200 }, (_, index) =>
      signIn(
        new Request(`${ORIGIN}/api/auth/sign-in`, {
          method: "POST",
          headers: { "content-type": "application/json", ...from("203.0.113.50") },
          body: held(index === 199 ? PASSWORD : `guess ${index}`),
          duplex: "half",
        } as RequestInit),
        { params: Promise.resolve({}) },
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const release of releases) release();
    const statuses = (await Promise.all(answers)).map((response) => response.status);
    const count = (status: number) => statuses.filter((each) => each === status).length;
    console.log(
      `[sign-in] 200 held-back bodies from one address: ${count(401)} × 401, ${count(429)} × 429, ${count(200)} × 200`,
    );
    expect(count(401) + count(200)).toBeLessThanOrEqual(signInThrottle.limits.perClient);
    expect(count(429)).toBeGreaterThanOrEqual(200 - signInThrottle.limits.perClient);
    expect(count(200)).toBe(0); // the right password came last, long after the limit was reached
    signInThrottle.clear();
  });

  it("refuses bad sign-in bodies with 400, and a sign-in posted from another site with 403", async () => {
    for (const body of [
      "{",
      JSON.stringify({}),
      JSON.stringify({ password: 42 }),
      JSON.stringify({ password: "x", user: "admin" }),
    ]) {
      const response = await signIn(
        new Request(`${ORIGIN}/api/auth/sign-in`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        }),
        {
          params: Promise.resolve({}),
        },
      );
      expect(response.status).toBe(400);
    }
    // The right password, but not sent as JSON (a form on another page could send this without a preflight): 415.
    const asText = await signIn(
      new Request(`${ORIGIN}/api/auth/sign-in`, { method: "POST", body: JSON.stringify({ password: PASSWORD }) }),
      { params: Promise.resolve({}) },
    );
    expect(asText.status).toBe(415);
    expect(await errorCode(asText)).toBe("unsupported_media_type:content_type");
    expect(asText.headers.get("set-cookie")).toBeNull();
    const crossSite = await signIn(signInRequest(PASSWORD, { origin: "https://evil.example" }), {
      params: Promise.resolve({}),
    });
    expect(crossSite.status).toBe(403);
    expect(crossSite.headers.get("set-cookie")).toBeNull();
  });
});

describe("signed in", () => {
  it("every route works with the cookie (nothing answers 401 or 5xx)", async () => {
    const cookie = await signedInCookie();
    for (const route of routes) {
      for (const method of Object.keys(route.handlers) as (typeof METHODS)[number][]) {
        if (route.pattern === "/api/auth/sign-out") continue; // it would end the session; tested below
        const controller = new AbortController();
        const response = await call(route, method, { cookie, origin: ORIGIN }, { signal: controller.signal });
        const key = `${method} ${route.pattern}`;
        expect(response.status, key).not.toBe(401);
        expect(response.status, key).toBeLessThan(500);
        controller.abort();
        await settle(response);
        figures.working += 1;
      }
    }
  });

  it("creates and reads a team", async () => {
    const cookie = await signedInCookie();
    const created = await call(
      api("/api/teams"),
      "POST",
      { cookie, origin: ORIGIN, "content-type": "application/json" },
      {
        body: JSON.stringify({ name: "Signed in", mission: "Prove the cookie works." }),
      },
    );
    expect(created.status).toBe(201);
    const { teams } = (await (await call(api("/api/teams"), "GET", { cookie })).json()) as {
      teams: { name: string }[];
    };
    expect(teams.map((team) => team.name)).toContain("Signed in");
  });

  it("refuses state-changing requests from a foreign or null Origin with 403, even with the cookie, and changes nothing", async () => {
    const cookie = await signedInCookie();
    const { team } = await createTeamFixture(database.db, { name: "Target" });
    const teamRoute = {
      ...api("/api/teams/[teamId]"),
      url: `${ORIGIN}/api/teams/${team.id}`,
      params: { teamId: team.id },
    };
    const hostile: Record<string, string>[] = [
      { origin: "https://evil.example" },
      { origin: "null" },
      { origin: "http://localhost:3000.evil.example" },
      { "sec-fetch-site": "cross-site" },
    ];
    const [before] = await database.sql`select count(*)::int as n from teams`;
    for (const headers of hostile) {
      const attempts = [
        call(
          api("/api/teams"),
          "POST",
          { cookie, ...headers, "content-type": "text/plain" },
          { body: JSON.stringify({ name: "CSRF", mission: "m" }) },
        ),
        call(teamRoute, "PATCH", { cookie, ...headers }, { body: JSON.stringify({ name: "Renamed by evil" }) }),
        call(teamRoute, "DELETE", { cookie, ...headers }),
        call(api("/api/inbox/read-all"), "POST", { cookie, ...headers }),
      ];
      for (const response of await Promise.all(attempts)) {
        expect(response.status).toBe(403);
        expect(await errorCode(response)).toBe("forbidden:origin");
        figures.foreignOrigin += 1;
      }
    }
    const [after] = await database.sql`select count(*)::int as n from teams`;
    expect(after!.n).toBe(before!.n);
    const [target] = await database.sql`select name from teams where id = ${team.id}`;
    expect(target!.name).toBe("Target");
    // X-Forwarded-Host is the client's word unless the operator declared a proxy (TRUST_PROXY, unset
    // here; tests/integration/trust-proxy.test.ts sets it): naming the foreign origin in it does not help.
    const patch = (headers: Record<string, string>) =>
      teamRoute.handlers.PATCH!(
        new Request(`http://127.0.0.1:3000/api/teams/${team.id}`, {
          method: "PATCH",
          headers: { cookie, "content-type": "application/json", ...headers },
          body: JSON.stringify({ name: "Renamed" }),
        }),
        { params: Promise.resolve({ teamId: team.id }) },
      );
    const forged = await patch({
      origin: "http://evil.example",
      host: "127.0.0.1:3000",
      "x-forwarded-host": "evil.example",
    });
    expect(forged.status).toBe(403);
    expect(await errorCode(forged)).toBe("forbidden:origin");
    expect(
      (
        await patch({
          origin: "https://cadre.example.org",
          host: "127.0.0.1:3000",
          "x-forwarded-host": "cadre.example.org",
        })
      ).status,
    ).toBe(403);
    const [unchanged] = await database.sql`select name from teams where id = ${team.id}`;
    expect(unchanged!.name).toBe("Target");
    // Same origin, or behind a reverse proxy that passes the Host through, is fine.
    expect((await patch({ origin: "https://cadre.example.org", host: "cadre.example.org" })).status).toBe(200);
  });

  it("sign-out ends the session (the old cookie stops working) and clears the cookie; a form post is sent to /sign-in", async () => {
    const cookie = await signedInCookie();
    const response = await signOut(
      new Request(`${ORIGIN}/api/auth/sign-out`, { method: "POST", headers: { cookie, origin: ORIGIN } }),
      {
        params: Promise.resolve({}),
      },
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("set-cookie")).toMatch(/^cadre_session=; Path=\/; HttpOnly; SameSite=Lax; Max-Age=0/);
    expect((await call(api("/api/teams"), "GET", { cookie })).status).toBe(401);

    const other = await signedInCookie();
    const form = await signOut(
      new Request(`${ORIGIN}/api/auth/sign-out`, {
        method: "POST",
        headers: { cookie: other, "content-type": "application/x-www-form-urlencoded" },
        body: "",
      }),
      { params: Promise.resolve({}) },
    );
    expect(form.status).toBe(303);
    expect(form.headers.get("location")).toBe("/sign-in");
    expect((await call(api("/api/teams"), "GET", { cookie: other })).status).toBe(401);
  });
});

describe("pages", () => {
  it("the page check wants a live session", async () => {
    const cookie = await signedInCookie();
    const token = cookie.split("=")[1];
    expect(await auth.checkPageAccess({ host: "localhost:3000", sessionTokens: [] })).toEqual({
      allowed: false,
      reason: "sign-in",
    });
    expect(
      await auth.checkPageAccess({ host: "localhost:3000", sessionTokens: [randomBytes(32).toString("base64url")] }),
    ).toEqual({ allowed: false, reason: "sign-in" });
    expect(await auth.checkPageAccess({ host: "cadre.example.org", sessionTokens: [token!] })).toEqual({
      allowed: true,
    });
  });
});

describe("proxy.ts", () => {
  async function runProxy(pathname: string, headers: Record<string, string> = {}, method = "GET") {
    const { proxy } = await import("@/proxy");
    figures.proxy += 1;
    return proxy(new NextRequest(`${ORIGIN}${pathname}`, { method, headers }));
  }
  const passedOn = (response: Response) => response.headers.get("x-middleware-next") === "1";

  it("sends a signed-out page visit to /sign-in, with the way back", async () => {
    const response = await runProxy("/teams/abc?tab=log");
    expect(response.status).toBe(307);
    expect(response.headers.get("location")).toBe(`${ORIGIN}/sign-in?next=${encodeURIComponent("/teams/abc?tab=log")}`);
  });

  it("answers a signed-out API request 401, also with the forged x-middleware-subrequest header", async () => {
    for (const headers of [{}, FORGED]) {
      const response = await runProxy("/api/teams", headers);
      expect(response.status).toBe(401);
      expect(await errorCode(response)).toBe("unauthorized:session");
    }
  });

  it("lets the public paths through: health, sign-in, sign-out, webhooks", async () => {
    for (const [pathname, method] of [
      ["/api/health", "GET"],
      ["/sign-in", "GET"],
      ["/api/auth/sign-in", "POST"],
      ["/api/auth/sign-out", "POST"],
      [`/api/hooks/${randomUUID()}`, "POST"],
    ] as const) {
      expect(passedOn(await runProxy(pathname, {}, method)), pathname).toBe(true);
    }
  });

  it("checks the session in the database; the handler behind it checks again on its own", async () => {
    const forged = `cadre_session=${randomBytes(32).toString("base64url")}`;
    expect((await runProxy("/api/teams", { cookie: forged })).status).toBe(401);
    expect((await runProxy("/teams", { cookie: forged })).status).toBe(307);
    expect((await runProxy("/teams", { cookie: "cadre_session=short" })).status).toBe(307);
    const cookie = await signedInCookie();
    expect(passedOn(await runProxy("/teams", { cookie }))).toBe(true);
    expect(passedOn(await runProxy("/api/teams", { cookie, ...FORGED }))).toBe(true);
    // A request that never met the proxy gets nothing either.
    expect((await call(api("/api/teams"), "GET", { cookie: forged, ...FORGED })).status).toBe(401);
  });

  it("lets a request on when the database cannot be asked, and the route behind it fails closed (503)", async () => {
    const { createDatabase } = await import("@/lib/db/client");
    const holder = globalThis as { cadreDatabase?: ReturnType<typeof createDatabase> };
    const healthy = holder.cadreDatabase;
    holder.cadreDatabase = createDatabase("postgres://postgres@127.0.0.1:1/none", { max: 1 });
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const cookie = `cadre_session=${randomBytes(32).toString("base64url")}`;
      expect(passedOn(await runProxy("/api/teams", { cookie }))).toBe(true);
      const response = await call(api("/api/teams"), "GET", { cookie });
      expect(response.status).toBe(503);
      expect(await errorCode(response)).toBe("unavailable:database");
    } finally {
      errors.mockRestore();
      await holder.cadreDatabase.close();
      holder.cadreDatabase = healthy;
    }
  });

  it("without APP_PASSWORD lets localhost through and refuses other Host names (DNS rebinding)", async () => {
    delete process.env.APP_PASSWORD;
    try {
      expect(passedOn(await runProxy("/teams", { host: "localhost:3000" }))).toBe(true);
      expect(passedOn(await runProxy("/api/teams", { host: "127.0.0.1:3000" }))).toBe(true);
      expect((await runProxy("/teams", { host: "rebound.evil.example:3000" })).status).toBe(403);
      expect((await runProxy("/api/teams", { host: "rebound.evil.example:3000" })).status).toBe(403);
      expect(passedOn(await runProxy("/api/health", { host: "rebound.evil.example:3000" }))).toBe(true);
    } finally {
      process.env.APP_PASSWORD = PASSWORD;
    }
  });
});

describe("listening address", () => {
  it("binds 0.0.0.0 with APP_PASSWORD and 127.0.0.1 without, saying so at start; both start scripts pass it to next", async () => {
    const { webHost } = await import("../../scripts/lib/processes");
    const lines: string[] = [];
    const log = vi.spyOn(console, "log").mockImplementation((line: string) => void lines.push(line));
    try {
      expect(webHost()).toBe("0.0.0.0");
      delete process.env.APP_PASSWORD;
      expect(webHost()).toBe("127.0.0.1");
    } finally {
      process.env.APP_PASSWORD = PASSWORD;
      log.mockRestore();
    }
    expect(lines).toEqual([
      "[cadre] APP_PASSWORD is not set: listening on 127.0.0.1 only. Set APP_PASSWORD to require sign-in and listen on all interfaces.",
    ]);
    expect(readFileSync("scripts/start.ts", "utf8")).toMatch(/args: \["start", "--hostname", host,/);
    expect(readFileSync("scripts/dev.ts", "utf8")).toMatch(/args: \["dev", "--hostname", host,/);
  });
});
