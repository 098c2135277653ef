// Security headers on the real server (issue 25, item 3): a local-only Cadre needs no sign-in, so
// a site that framed it could lure a click on Approve, Delete team or Test connection.
//
// - Every kind of answer carries X-Frame-Options, CSP with frame-ancestors 'none', nosniff,
//   Referrer-Policy and Permissions-Policy, each once: pages (with a fresh nonce that Next puts
//   on its scripts), API answers, API and page 404s, errors the proxy and handlers write, the
//   streamed live events, Next's static files and the icons; with sign-in on, the redirect to
//   the sign-in page, the API's 401 and the sign-in page.
// - In Chromium, the main pages of the production build run their scripts under that policy
//   with no CSP violation and no console error (after a control proving an injected inline
//   handler is both blocked and reported), and a page on another origin cannot frame Cadre
//   (a frame of its own, the control, loads).
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordUsage } from "@/lib/db/queries/usage";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { buildIfStale, launchChromium, screenshotDir, settle, shoot, startApp, type AppServer } from "./app-server";

let database: TestDatabase;
let app: AppServer;
const team = { id: "", lead: "", scout: "" };

beforeAll(async () => {
  buildIfStale();
  database = await createTestDatabase();
  app = await startApp({ DATABASE_URL: database.url }, ["--web-only"]);
  const created = await fetch(`${app.url}/api/teams`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "Framed", mission: "Watch the solar market.", leadName: "Framed Lead" }),
  });
  expect(created.status).toBe(201);
  const body = (await created.json()) as { team: { id: string }; lead: { id: string } };
  Object.assign(team, { id: body.team.id, lead: body.lead.id });
  const scout = await fetch(`${app.url}/api/teams/${team.id}/agents`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "Scout", instructions: "Searches the web.", parentAgentId: team.lead }),
  });
  expect(scout.status).toBe(201);
  team.scout = ((await scout.json()) as { agent: { id: string } }).agent.id;
  // Usage, so the usage page draws its chart (inline style attributes).
  await recordUsage(database.db, {
    agentId: team.lead,
    purpose: "work",
    model: "gpt-4.1-mini",
    inputTokens: 40_000,
    outputTokens: 4_000,
    cachedTokens: 0,
  });
}, 300_000);

afterAll(async () => {
  await app?.stop();
  await database?.drop();
}, 60_000);

type Answer = { status: number; headers: http.IncomingHttpHeaders; body: string };

/** A request sent exactly as written (fetch() would normalise a malformed escape and refuses a Host header). */
function raw(
  method: string,
  pathname: string,
  options: { headers?: Record<string, string>; body?: string; headersOnly?: boolean } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${app.url}/`,
      { method, path: pathname, headers: options.headers, agent: false },
      (response) => {
        const answer = { status: response.statusCode ?? 0, headers: response.headers };
        if (options.headersOnly) {
          resolve({ ...answer, body: "" });
          response.destroy(); // a stream that never ends
          return;
        }
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (body += chunk));
        response.on("end", () => resolve({ ...answer, body }));
      },
    );
    request.on("error", reject);
    request.end(options.body);
  });
}

/** The headers every answer must carry, each exactly once (a header set twice reads "DENY, DENY"). */
function expectSecurityHeaders(what: string, answer: Answer): string {
  const csp = answer.headers["content-security-policy"];
  expect({ what, csp: typeof csp }).toEqual({ what, csp: "string" });
  expect({
    what,
    frameAncestors: /(^|;)\s*frame-ancestors 'none'\s*(;|$)/.test(String(csp)),
    policies: String(csp).split(/\s*,\s*/).length,
    frameOptions: answer.headers["x-frame-options"],
    contentTypeOptions: answer.headers["x-content-type-options"],
    referrerPolicy: answer.headers["referrer-policy"],
    permissionsPolicy: /camera=\(\)/.test(String(answer.headers["permissions-policy"])),
  }).toEqual({
    what,
    frameAncestors: true,
    policies: 1,
    frameOptions: "DENY",
    contentTypeOptions: "nosniff",
    referrerPolicy: "strict-origin-when-cross-origin",
    permissionsPolicy: true,
  });
  return String(csp);
}

describe("security headers on every answer", () => {
  it("puts them on pages, with a fresh nonce on each that Next gives its scripts", async () => {
    const nonces: string[] = [];
    const pages: Array<[string, number]> = [
      ["/", 200],
      [`/teams/${team.id}`, 200],
      [`/agents/${team.lead}`, 200],
      ["/no-such-page", 404],
    ];
    for (const [pathname, status] of pages) {
      const page = await raw("GET", pathname);
      expect({ pathname, status: page.status }).toEqual({ pathname, status });
      const csp = expectSecurityHeaders(pathname, page);
      for (const directive of [
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "connect-src 'self'",
        "img-src 'self' data: blob:",
      ]) {
        expect(csp).toContain(directive);
      }
      expect(csp).not.toContain("unsafe-eval"); // only `npm run dev` needs it
      const nonce = /script-src [^;]*'nonce-([^']+)'/.exec(csp)?.[1];
      expect(nonce, csp).toBeTruthy();
      nonces.push(nonce!);
      const scripts = [...page.body.matchAll(/<script\b[^>]*>/g)].map((match) => match[0]);
      expect(scripts.length).toBeGreaterThan(0);
      expect(scripts.filter((tag) => !tag.includes(`nonce="${nonce}"`))).toEqual([]);
    }
    expect(new Set(nonces).size).toBe(nonces.length);
  });

  it("puts them on API answers, 404s, errors, the event stream and static files", async () => {
    const home = await raw("GET", "/");
    const chunk = /<script[^>]+src="(\/_next\/static\/[^"]+)"/.exec(home.body)?.[1];
    const stylesheet = /<link[^>]+href="(\/_next\/static\/[^"]+\.css)"/.exec(home.body)?.[1];
    expect(chunk && stylesheet).toBeTruthy();
    const requests: Array<[string, number, string, string, Parameters<typeof raw>[2]?]> = [
      ["an API answer", 200, "GET", "/api/teams"],
      ["an API path that does not exist", 404, "GET", "/api/no-such-thing"],
      ["an API id that is not one", 404, "GET", "/api/agents/not-an-id"],
      ["an API id of nothing", 404, "GET", "/api/teams/00000000-0000-4000-8000-000000000000"],
      ["a body that is not JSON", 415, "POST", "/api/teams", { headers: { "content-type": "text/plain" }, body: "{}" }],
      ["a path the proxy refuses", 400, "GET", "/api/agents/%ZZ"],
      ["a page path the proxy sends to not-found", 404, "GET", "/teams/%ZZ"],
      ["a page that does not exist", 404, "GET", "/no-such-page"],
      // Decided before the page streams (app/found.ts): a real 404 with the not-found page.
      ["a team that does not exist", 404, "GET", "/teams/00000000-0000-4000-8000-000000000000"],
      ["a foreign Host", 403, "GET", "/", { headers: { host: "evil.example" } }],
      ["a foreign Host on the API", 403, "GET", "/api/teams", { headers: { host: "evil.example" } }],
      ["the live-events stream", 200, "GET", "/api/events", { headersOnly: true }],
      ["the health probe", 200, "GET", "/api/health"],
      ["a script chunk", 200, "GET", chunk!],
      ["a stylesheet", 200, "GET", stylesheet!],
      ["a static file that does not exist", 404, "GET", "/_next/static/chunks/no-such-chunk.js"],
      ["the favicon", 200, "GET", "/favicon.ico"],
      ["the icon", 200, "GET", "/icon.svg"],
      ["the web manifest", 200, "GET", "/manifest.webmanifest"],
    ];
    for (const [what, status, method, pathname, options] of requests) {
      const answer = await raw(method, pathname, options);
      expect({ what, status: answer.status }).toEqual({ what, status });
      const csp = expectSecurityHeaders(what, answer);
      // The API and Next's files load nothing; page paths keep a page's policy (a 404 is a page).
      if (/^\/(api|_next|favicon)/.test(pathname))
        expect({ what, csp }).toEqual({ what, csp: expect.stringContaining("default-src 'none'") });
    }
  });
});

describe("security headers with sign-in on", () => {
  let guarded: AppServer;
  beforeAll(async () => {
    guarded = await startApp({ DATABASE_URL: database.url, APP_PASSWORD: "security-headers-test" }, ["--web-only"]);
  }, 120_000);
  afterAll(async () => await guarded?.stop(), 60_000);

  it("puts them on the redirect to sign-in, the API's 401 and the sign-in page", async () => {
    const answers: Array<[string, Response, number]> = [
      ["the redirect to sign-in", await fetch(`${guarded.url}/teams`, { redirect: "manual" }), 307],
      ["the API's 401", await fetch(`${guarded.url}/api/teams`), 401],
      ["the sign-in page", await fetch(`${guarded.url}/sign-in`), 200],
    ];
    for (const [what, response, status] of answers) {
      expect({ what, status: response.status }).toEqual({ what, status });
      await response.arrayBuffer();
      expectSecurityHeaders(what, { status: response.status, headers: Object.fromEntries(response.headers), body: "" });
    }
  });
});

describe("in Chromium", () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let foreign: http.Server;
  let foreignUrl = "";
  /** CSP violations, console errors and uncaught errors of `page`, each with the address it happened on. */
  const problems: string[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    // Reported to this process as they happen, so a page that moves on cannot lose them; the
    // listener is in place before the page's own scripts, which a policy might block.
    await context.exposeBinding(
      "__cadreCspViolation",
      ({ frame }, what: string) => void problems.push(`${frame.url()}: violation: ${what}`),
    );
    await context.addInitScript(() => {
      const report = (window as unknown as { __cadreCspViolation: (what: string) => void }).__cadreCspViolation;
      document.addEventListener("securitypolicyviolation", (event) =>
        report(
          `${event.effectiveDirective} blocked ${event.blockedURI || "inline"} (${event.sourceFile}:${event.lineNumber})`,
        ),
      );
    });
    page = await context.newPage();
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`${page.url()}: console: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`${page.url()}: page error: ${error.message}`));

    // Another origin (another port) with a page that frames Cadre, and a frame of its own as the control.
    foreign = http.createServer((request, response) => {
      response.setHeader("content-type", "text/html");
      if (request.url === "/own") return void response.end("<!doctype html><p>own frame content</p>");
      response.end(`<!doctype html><h1>Win a prize</h1>
        <iframe id="own" src="/own"></iframe>
        <iframe id="cadre" src="${app.url}/teams/${team.id}" width="1200" height="800"></iframe>`);
    });
    await new Promise<void>((resolve) => foreign.listen(0, "127.0.0.1", resolve));
    foreignUrl = `http://127.0.0.1:${(foreign.address() as AddressInfo).port}`;
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => foreign?.close(resolve));
  });

  it("blocks and reports an injected inline handler (the control for what follows)", async () => {
    await page.goto(`${app.url}/`);
    await settle(page);
    await page.evaluate(() =>
      document.body.insertAdjacentHTML(
        "beforeend",
        `<img src="data:," onload="window.__pwned = 1" onerror="window.__pwned = 1">`,
      ),
    );
    await expect.poll(() => problems.join("\n")).toContain("violation: script-src-attr blocked inline");
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(problems.join("\n")).toMatch(/console: .*Content Security Policy/);
    problems.length = 0;
  });

  it("runs the main pages under the policy with no violation and no console error", async () => {
    // Home, teams, a team (overview, chat, timeline, settings, tools), a work log, a chat, usage, inbox, knowledge.
    const pages = [
      "/",
      "/teams",
      `/teams/${team.id}`,
      `/teams/${team.id}/chat`,
      `/agents/${team.scout}`,
      `/agents/${team.scout}/chat`,
      `/teams/${team.id}/timeline`,
      `/teams/${team.id}/settings`,
      `/teams/${team.id}/tools`,
      "/usage",
      "/inbox",
      "/knowledge",
    ];
    for (const pathname of pages) {
      await page.goto(`${app.url}${pathname}`);
      await settle(page);
      // Next's client runtime ran (it sets window.next): the page's scripts were allowed, not just its HTML shown.
      await page.waitForFunction(
        () => Boolean((window as unknown as { next?: { version?: string } }).next?.version),
        undefined,
        { timeout: 15_000 },
      );
      await page.waitForTimeout(300); // late chunks, the live-events connection
    }
    // A client-side navigation loads further chunks under the policy too.
    await page.goto(`${app.url}/teams`);
    await settle(page);
    await page.getByRole("link", { name: "Usage" }).first().click();
    await page.waitForURL(`${app.url}/usage`);
    await settle(page);
    expect(problems).toEqual([]);

    await page.goto(`${app.url}/teams/${team.id}`);
    await settle(page);
    await shoot(page, "csp-team-overview");
    expect(problems).toEqual([]);
    console.log(`[security headers] screenshot: ${path.join(screenshotDir, "csp-team-overview-1440.png")}`);
  });

  it("cannot be framed by a page on another origin", async () => {
    const framing = await context.newPage();
    const refusals: string[] = [];
    framing.on("console", (message) => void refusals.push(message.text()));
    await framing.goto(foreignUrl);
    const own = await (await framing.$("#own"))!.contentFrame();
    await expect
      .poll(async () => own!.evaluate(() => document.body?.innerText ?? ""), { timeout: 10_000 })
      .toContain("own frame content");
    const cadre = await (await framing.$("#cadre"))!.contentFrame();
    await framing.waitForTimeout(1_500); // time enough to load the team page had it been allowed
    const text = await cadre!.evaluate(() => document.body?.innerText ?? "").catch(() => "");
    expect({ showsCadre: /Framed|Cadre/.test(text) }).toEqual({ showsCadre: false });
    // Chromium says why: the frame's policy, not a network failure.
    expect(refusals.join("\n")).toMatch(/Framing '[^']+' violates .*frame-ancestors 'none'/);
    await framing.close();
  });
});
