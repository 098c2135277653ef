// Output handling in a real browser (issue 5, item 6): hostile text in every place a person,
// a model, a tool or another system can put it — names, missions, instructions, chat
// messages, tool results, knowledge items, reports, briefings, webhooks — must stay inert on
// every page that shows it. Each payload tries to run `window.__pwned = "Pnn"` (or an alert)
// or to make the browser load something from a foreign host; the test watches for both
// while it visits the pages, and checks the DOM the content produced.
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createInboxItem } from "@/lib/db/queries/inbox-items";
import { createKnowledgeItem } from "@/lib/db/queries/knowledge-items";
import { signedWebhookHeaders } from "@/lib/http/webhook-signature";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import { buildIfStale, launchChromium, settle, shoot, startApp, type AppServer } from "./app-server";

const b64 = (text: string) => Buffer.from(text).toString("base64");

/** Each payload carries its marker (P01…) so the page text shows it arrived, and a hit says which one ran. */
const PAYLOADS: string[] = [
  `P01 <script>window.__pwned='P01'</script>`,
  `P02 <img src=x onerror="window.__pwned='P02'">`,
  `P03 <svg onload="window.__pwned='P03'"></svg>`,
  `P04 <iframe srcdoc="<script>parent.__pwned='P04'</script>"></iframe>`,
  `[P05 markdown link](javascript:window.__pwned='P05')`,
  `P06 <a href="JaVaScRiPt:window.__pwned='P06'">mixed case</a>`,
  `[P07 entity link](&#106;avascript:window.__pwned='P07')`,
  `P08 <javascript:window.__pwned='P08'>`,
  `[P09 data link](data:text/html;base64,${b64("<script>parent.__pwned='P09'</script>")})`,
  `![P10 foreign image](http://evil.example/P10.png)`,
  `[P11 reference link][p11]\n\n[p11]: javascript:window.__pwned='P11'`,
  `P12 <math><mtext><table><mglyph><style><img src=x onerror="window.__pwned='P12'">`,
  `P13 <style>@import 'http://evil.example/P13.css'; body { background: url(http://evil.example/P13.png) }</style>`,
  `P14 <object data="javascript:window.__pwned='P14'"></object><embed src="javascript:window.__pwned='P14'">`,
  `P15 <details open ontoggle="window.__pwned='P15'"><summary>x</summary></details>`,
  `P16 <a href="&#x6A;avascript:window.__pwned='P16'">hex entity</a>`,
  `[P17 tab in scheme](java&#9;script:window.__pwned='P17')`,
  `![P18 data svg](data:image/svg+xml;base64,${b64(`<svg xmlns="http://www.w3.org/2000/svg" onload="parent.__pwned='P18'"/>`)})`,
  `P19 <img src="http://evil.example/P19.png">`,
  `P20 <form action="javascript:window.__pwned='P20'"><button>go</button></form>`,
  `P21 <meta http-equiv="refresh" content="0;url=javascript:window.__pwned='P21'">`,
  `P22 <base href="http://evil.example/P22/">`,
  `P23 <link rel="stylesheet" href="http://evil.example/P23.css">`,
  `P24 <video><source onerror="window.__pwned='P24'"></video>`,
  `P25 <input autofocus onfocus="window.__pwned='P25'">`,
  `[P26 protocol-relative](//evil.example/P26)`,
  `[P27 <img src=x onerror="window.__pwned='P27'">](https://example.com/P27)`,
  `P28 <svg><a xlink:href="javascript:window.__pwned='P28'"><text x="20" y="20">x</text></a></svg>`,
  `P29 <noscript><p title="</noscript><img src=x onerror=window.__pwned='P29'>">`,
  `P30 "><img src=x onerror=alert('P30')>`,
  `[P31 title breakout](https://example.com/P31 "t\\" onmouseover=\\"window.__pwned='P31'")`,
  `P32 <a href="data:text/html,<script>alert('P32')</script>">data html</a> <https://evil.example/P32>`,
];
const ALL = PAYLOADS.join("\n\n");
const MARKERS = PAYLOADS.map((payload) => /P\d\d/.exec(payload)![0]);

/** What the fake Tavily answers: the first result is what the offline model records, reports and briefs. */
const SEARCH_RESULTS = [
  {
    title: `P10 ![t](http://evil.example/P10.png)`,
    url: "javascript:window.__pwned='P05'",
    content: [PAYLOADS[4]!, PAYLOADS[1]!, PAYLOADS[6]!, PAYLOADS[10]!].join("\n"),
  },
  ...PAYLOADS.slice(11).map((payload, index) => ({
    title: `Result ${index + 2}: ${payload.slice(0, 60)}`,
    url: `https://example.com/${index}`,
    content: payload,
  })),
];

let database: TestDatabase;
let tavily: FakeTavily;
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const executed: string[] = [];
const foreignRequests: string[] = [];
const places: string[] = [];

const isLoopback = (raw: string) => {
  try {
    const url = new URL(raw);
    return (
      ["http:", "https:", "ws:", "wss:"].includes(url.protocol) &&
      ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)
    );
  } catch {
    return false;
  }
};

async function api<T>(method: string, route: string, body?: unknown): Promise<T> {
  const response = await fetch(`${app.url}${route}`, {
    method,
    headers: body === undefined ? undefined : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${route} → ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

type Inspection = { markers: string[]; unsafe: string[]; elements: string[]; handlers: string[] };

/**
 * The DOM the content produced, inside <main> (the app's content area; the navigation
 * carries no user text): no active elements, no inline handlers, links http(s) only.
 */
function inspect(target: Page): Promise<Inspection> {
  return target.evaluate((markers) => {
    const main = document.querySelector("main")!;
    for (const details of main.querySelectorAll("details")) details.open = true; // tool calls, instructions: show everything
    const text = main.textContent ?? "";
    const active =
      "script, iframe, frame, img, svg, math, object, embed, style, link, meta, base, video, audio, source, picture, canvas, portal";
    // The usage charts are the app's own SVG (recharts draws names as text nodes in it); anything else is content's.
    const elements = [...main.querySelectorAll(active)]
      .filter((element) => !element.closest(".recharts-wrapper"))
      .map((element) => element.outerHTML.slice(0, 120));
    // Only the app's own forms, inputs and buttons; none from content (which is always inside .markdown).
    elements.push(
      ...[
        ...main.querySelectorAll(
          ".markdown form, .markdown button, .markdown textarea, .markdown select, .markdown input:not([type=checkbox][disabled])",
        ),
      ].map((element) => element.outerHTML.slice(0, 120)),
    );
    const handlers = [...main.querySelectorAll("*")].flatMap((element) =>
      element
        .getAttributeNames()
        .filter(
          (name) =>
            /^on/i.test(name) || ["srcdoc", "formaction", "xlink:href", "background"].includes(name.toLowerCase()),
        )
        .map((name) => `${element.tagName} ${name}`),
    );
    const unsafe: string[] = [];
    for (const element of main.querySelectorAll("[href], [src], [action], [data], [poster], [ping]")) {
      for (const name of ["href", "src", "action", "data", "poster", "ping"]) {
        const value = element.getAttribute(name);
        if (value === null) continue;
        // Resolved as the browser would follow it: relative app links are http on this host.
        let protocol = "";
        try {
          protocol = new URL(value, location.href).protocol;
        } catch {
          protocol = "unparsable";
        }
        const insideContent = element.closest(".markdown") !== null;
        const absoluteHttp = /^https?:\/\//i.test(value);
        // Content may only link (never load), and only to absolute http(s) URLs; the app's own links are same-origin.
        const loads = name !== "href" && name !== "action";
        if (loads || !["http:", "https:"].includes(protocol) || (insideContent && !absoluteHttp)) {
          unsafe.push(`${element.tagName} ${name}=${value.slice(0, 80)}`);
        }
      }
    }
    return { markers: markers.filter((marker) => text.includes(marker)), unsafe, elements, handlers };
  }, MARKERS);
}

describe("hostile output in Chromium", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    tavily = await startFakeTavily(() => ({ results: SEARCH_RESULTS }));
    app = await startApp({ DATABASE_URL: database.url, TAVILY_API_KEY: "tvly-test", TAVILY_BASE_URL: tavily.url });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(10_000);

    // Anything that runs reports here, from any frame, before the page could hide it.
    await context.exposeBinding(
      "__cadreExecuted",
      ({ frame }, what: string) => void executed.push(`${what} on ${frame.url()}`),
    );
    await context.addInitScript(() => {
      const report = (what: string) =>
        (window as unknown as { __cadreExecuted?: (what: string) => void }).__cadreExecuted?.(what);
      Object.defineProperty(window, "__pwned", {
        configurable: false,
        get: () => undefined,
        set: (value) => report(`__pwned=${String(value)}`),
      });
    });
    const watched = new WeakSet<Page>();
    const watchDialogs = (opened: Page) => {
      if (watched.has(opened)) return;
      watched.add(opened);
      opened.on("dialog", (dialog) => {
        executed.push(`${dialog.type()}(${dialog.message()})`);
        void dialog.dismiss().catch(() => {});
      });
    };
    context.on("page", watchDialogs);
    // Nothing may leave this machine: record and refuse every request to another host.
    context.on("request", (request) => {
      if (!isLoopback(request.url())) foreignRequests.push(`${request.resourceType()} ${request.url().slice(0, 120)}`);
    });
    await context.route(
      (url) => !isLoopback(url.toString()),
      (route) => route.abort(),
    );
    page = await context.newPage();
    watchDialogs(page);
  }, 300_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") console.error(app?.output().split("\n").slice(-40).join("\n"));
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await tavily?.close();
    await database?.drop();
  }, 60_000);

  it("sees it when something does run, load or link where it should not (a control for the checks below)", async () => {
    // A page on Cadre's origin that Cadre never serves, so without its Content-Security-Policy
    // (which would block both): the control is for these detectors, not for the policy.
    await page.route(`${app.url}/detector-control`, (route) =>
      route.fulfill({ contentType: "text/html", body: "<!doctype html><title>control</title>" }),
    );
    await page.goto(`${app.url}/detector-control`);
    await page.setContent(
      `<main><div class="markdown"><img src="/x" onerror="window.__pwned='control'"><a href="javascript:void 0">x</a><img src="http://evil.example/control.png"></div></main>`,
    );
    await expect.poll(() => executed.length).toBeGreaterThan(0);
    expect(executed[0]).toContain("__pwned=control");
    await expect.poll(() => foreignRequests.some((request) => request.includes("evil.example/control.png"))).toBe(true);
    const found = await inspect(page);
    expect(found.elements.length).toBe(2);
    expect(found.handlers).toEqual(["IMG onerror"]);
    expect(found.unsafe.filter((link) => link.startsWith("A href=javascript:"))).toHaveLength(1);
    executed.length = 0;
    foreignRequests.length = 0;
  });

  it(`keeps ${PAYLOADS.length} payloads inert in names, chat, tool results, knowledge, reports, briefings and webhooks`, async () => {
    expect(PAYLOADS.length).toBeGreaterThanOrEqual(20);
    expect(new Set(MARKERS).size).toBe(PAYLOADS.length);

    // Names, mission and instructions through the API (names are short: one payload each).
    const { team, lead } = await api<{ team: { id: string }; lead: { id: string } }>("POST", "/api/teams", {
      name: `${PAYLOADS[29]!} Lab`,
      mission: ALL,
      leadName: PAYLOADS[2]!,
      instructions: ALL,
    });
    const { agent: scout } = await api<{ agent: { id: string } }>("POST", `/api/teams/${team.id}/agents`, {
      name: `Scout ${PAYLOADS[1]!}`,
      instructions: ALL,
      parentAgentId: lead.id,
    });
    places.push(
      "team name",
      "team mission",
      "lead name",
      "lead instructions",
      "subordinate name",
      "subordinate instructions",
    );

    // A chat message through the page. It asks for research, so it also becomes a task, the
    // lead's delegation and the subordinate's search, whose results (the fake Tavily's) are
    // recorded as knowledge, reported to the lead and briefed to the person.
    await page.goto(`${app.url}/teams/${team.id}/chat`);
    await settle(page);
    const box = page.getByRole("textbox", { name: "Message" });
    const text = `Please research the hostile-content corpus below, round one, and keep every detail of it exactly as is.\n\n${ALL}`;
    await box.fill(text);
    // On a loaded machine the page can still be hydrating when the text goes in; the chat takes
    // it up once mounted, and if React reset the box meanwhile, the text goes in again.
    const send = page.getByRole("button", { name: "Send" });
    await send.click({ trial: true, timeout: 10_000 }).catch(() => box.fill(text));
    await send.click();
    await page.getByText("I've created a task for the team").waitFor({ timeout: 30_000 });
    await page.locator(".message-briefing").first().waitFor({ timeout: 90_000 });
    places.push(
      "chat message",
      "task title and description",
      "search tool results",
      "knowledge item (recorded by the model)",
      "report",
      "briefing (by the model)",
    );
    expect(tavily.requests.length).toBeGreaterThan(0);

    // A webhook delivery: the lead reads it in its work log and, since it asks for work,
    // delegates it too (a second search, knowledge item, report and briefing).
    const { secret } = await api<{ secret: string }>("POST", `/api/teams/${team.id}/webhook-secret`);
    const hook = JSON.stringify({ name: "alerts", text: `Please look into these alerts:\n\n${ALL}` });
    const delivered = await fetch(`${app.url}/api/hooks/${team.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...signedWebhookHeaders(secret, hook) },
      body: hook,
    });
    expect(delivered.status).toBe(202);
    const briefings = async () => (await api<{ items: unknown[] }>("GET", "/api/inbox")).items.length;
    await expect.poll(briefings, { timeout: 60_000, interval: 250 }).toBe(2);
    places.push("webhook message", "task delegated from a webhook");

    // Knowledge items and a briefing holding every payload, as a model could write them.
    for (const payload of PAYLOADS)
      await createKnowledgeItem(database.db, { agentId: scout.id, type: "fact", content: payload, confidence: 0.5 });
    const briefing = await createInboxItem(database.db, {
      teamId: team.id,
      agentId: lead.id,
      type: "alert",
      title: PAYLOADS[11]!,
      summary: PAYLOADS.slice(0, 12).join(" "),
      content: ALL,
    });
    places.push("knowledge items", "briefing title, summary and content");

    const { items } = await api<{ items: { id: string; title: string }[] }>("GET", "/api/inbox");
    const modelBriefing = items.find((item) => item.id !== briefing.id)!;
    expect(items).toHaveLength(3);

    const pages: [string, string][] = [
      // since you were last here: task results, briefings and knowledge of the last day
      ["home", "/"],
      ["teams", "/teams"],
      ["team", `/teams/${team.id}`],
      ["team agents", `/teams/${team.id}/agents`],
      ["team tools", `/teams/${team.id}/tools`],
      ["team notifications", `/teams/${team.id}/notifications`],
      ["team settings", `/teams/${team.id}/settings`],
      ["chat", `/teams/${team.id}/chat`],
      ["lead", `/agents/${lead.id}`],
      ["subordinate", `/agents/${scout.id}`],
      ["inbox", "/inbox"],
      ["model briefing", `/inbox/${modelBriefing.id}`],
      ["briefing", `/inbox/${briefing.id}`],
      ["knowledge", "/knowledge"],
      ["knowledge search", `/knowledge?q=${encodeURIComponent(PAYLOADS[1]!)}&agentId=${scout.id}`],
      // the chats' and work logs' snippets, each match marked
      ["conversation search", `/teams/${team.id}/search?q=${encodeURIComponent(MARKERS.slice(0, 16).join(" or "))}`],
    ];
    const seen = new Set<string>();
    const unsafeLinks: string[] = [];
    const injected: string[] = [];
    for (const [name, path] of pages) {
      await page.goto(`${app.url}${path}`);
      await settle(page);
      if (name === "lead")
        await page.getByText("[webhook:alerts]", { exact: false }).first().waitFor({ timeout: 20_000 });
      // settle gives a streamed page 3 s; under a full suite's load a page can take longer to
      // show its content (a CI run once inspected the chat before it had): wait for a payload.
      await page
        .waitForFunction(
          (markers) => markers.some((marker) => document.querySelector("main")?.textContent?.includes(marker)),
          MARKERS,
          { timeout: 20_000 },
        )
        .catch(() => {}); // none at all is what the assertion below reports
      await page.waitForTimeout(300); // an onerror or onload would have fired by now
      const found = await inspect(page);
      expect(found.markers.length, `${name}: payloads shown`).toBeGreaterThan(0);
      for (const marker of found.markers) seen.add(marker);
      unsafeLinks.push(...found.unsafe.map((link) => `${name}: ${link}`));
      injected.push(...[...found.elements, ...found.handlers].map((element) => `${name}: ${element}`));
      if (["chat", "subordinate", "knowledge", "briefing", "conversation search"].includes(name))
        await shoot(page, `hostile-${name.replace(/\W+/g, "-")}`);
    }
    // Still nothing after every page had its chance, and the worker's live updates re-rendered some.
    await page.waitForTimeout(500);

    console.log(
      `payloads tried: ${PAYLOADS.length}, places: ${places.length}, pages: ${pages.length}, ` +
        `executed: ${executed.length}, foreign requests: ${foreignRequests.length}, unsafe links: ${unsafeLinks.length}, injected elements: ${injected.length}`,
    );
    expect(executed).toEqual([]);
    expect(foreignRequests).toEqual([]);
    expect(unsafeLinks).toEqual([]);
    expect(injected).toEqual([]);
    // Every payload reached a page (as text), so the checks above saw all of them.
    expect(MARKERS.filter((marker) => !seen.has(marker))).toEqual([]);
  }, 240_000);
});
