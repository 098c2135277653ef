// Nothing internal reaches the person: after a full flow on the production build (a research
// request to a lead with two subordinates, a question answered, an approval decided, a
// subordinate stopped mid-search, the database refusing connections while work runs), every
// page's visible text is scanned for ids, the engine's phrases (from formats.ts and
// prompts.ts), SQL, stack traces and raw tool names. A control first proves the detectors fire.
import path from "node:path";
import postgres from "postgres";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { workSessions } from "@/lib/db/schema";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import { enginePhrases, scanPage, type Finding } from "../support/internal-text";
import {
  buildIfStale,
  callApi,
  launchChromium,
  screenshotDir as shots,
  settle,
  shoot,
  startApp,
  type ApiRequest,
  type AppServer,
} from "./app-server";

const LIVE = 60_000; // the worker's sessions come first on a loaded machine

let database: TestDatabase;
let tavily: FakeTavily;
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let team: { id: string; leadId: string; scoutId: string; sageId: string };

/** Searches whose query says "hold" wait until released (once per word: a retry searches freely): a subordinate caught mid-search. */
const held = new Map<string, () => void>();
const released = new Set<string>();
function release(word: string): void {
  released.add(word);
  for (const [query, go] of held) {
    if (!query.includes(word)) continue;
    go();
    held.delete(query);
  }
}

const call = <T>(pathname: string, init?: ApiRequest) => callApi<T>(app.url, pathname, init);

async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeout = LIVE): Promise<void> {
  const deadline = Date.now() + timeout;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

type ApiTask = { id: string; title: string; status: string };
const tasksOf = async (agentId: string) =>
  (await call<{ tasks: ApiTask[] }>(`/api/agents/${agentId}/tasks`)).body.tasks;
const pendingApprovals = async (agentId: string) =>
  (
    await call<{ approvals: { id: string; status: string }[] }>(`/api/agents/${agentId}/approvals`)
  ).body.approvals.filter((approval) => approval.status === "pending");

async function giveTask(agentId: string, title: string, description = ""): Promise<ApiTask> {
  const { status, body } = await call<{ task: ApiTask }>(`/api/agents/${agentId}/tasks`, {
    method: "POST",
    body: { title, description },
  });
  expect(status).toBe(201);
  return body.task;
}

async function allQuiet(): Promise<boolean> {
  for (const agentId of [team.leadId, team.scoutId, team.sageId]) {
    if ((await tasksOf(agentId)).some((task) => ["pending", "in_progress"].includes(task.status))) return false;
  }
  const running = await database.db.select({ status: workSessions.status }).from(workSessions);
  return running.every((session) => session.status !== "running");
}

function report(findings: Map<string, Finding[]>): string {
  return [...findings]
    .filter(([, found]) => found.length > 0)
    .map(
      ([where, found]) =>
        `${where}\n${found.map((finding) => `  [${finding.detector}] ${JSON.stringify(finding.match)} in …${finding.context}…`).join("\n")}`,
    )
    .join("\n");
}

describe("Nothing internal reaches the person", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    tavily = await startFakeTavily(async ({ query }) => {
      if (/hold/.test(query) && ![...released].some((word) => query.includes(word)))
        await new Promise<void>((resolve) => held.set(query, resolve));
      return {
        results: [
          { title: `About ${query}`, url: "https://example.com/about", content: `What the web says about ${query}.` },
          { title: `${query}: the latest`, url: "https://example.com/latest", content: `Recent news on ${query}.` },
        ],
      };
    });
    app = await startApp({ DATABASE_URL: database.url, TAVILY_API_KEY: "tvly-test", TAVILY_BASE_URL: tavily.url });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
  }, 300_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page
        ?.screenshot({
          path: path.join(shots, `failed-plain-words-${test.task.name.replace(/\W+/g, "-").slice(0, 60)}.png`),
          fullPage: true,
        })
        .catch(() => {});
      console.error(app?.output().split("\n").slice(-60).join("\n"));
    }
  });

  afterAll(async () => {
    for (const go of held.values()) go();
    await browser?.close();
    await app?.stop();
    await tavily?.close();
    await database?.drop();
  }, 60_000);

  it("detects ids, engine phrases, SQL, stacks and raw tool names planted on a page (the control)", async () => {
    const phrases = enginePhrases();
    // Derived from the modules: the wrap-up prompt and a log input's id mark are among them.
    expect(phrases.some((phrase) => phrase.startsWith("(Session ending)"))).toBe(true);
    expect(phrases).toContain("(task id:");
    await page.setContent(`<main>
      <p>Delegated with agentId: 693bf141-0c1e-4a52-9d7f-2f0a3c1b9e11</p>
      <p>(Session ending) Decide whether to brief the person. Otherwise reply exactly: No briefing needed.</p>
      <p>Failed query: select "id", "agent_id" from "work_sessions" where "id" = $1 params: abc</p>
      <p>TypeError: boom
    at run (/app/src/lib/agents/agent.ts:120:7)</p>
      <p>Scout wants to use tavilySearch</p>
      <ul><li class="policy-row">Read a web page <code>readWebPage</code></li></ul>
      <p>Elsewhere code styling is no excuse: <code>createInboxItem</code></p>
      <details><summary>Details</summary>insert into "tasks" values (1)</details>
    </main>`);
    const found = await scanPage(page, phrases);
    const by = (detector: Finding["detector"]) =>
      found.filter((finding) => finding.detector === detector).map((finding) => finding.match);
    expect(by("uuid")).toEqual(["693bf141-0c1e-4a52-9d7f-2f0a3c1b9e11"]);
    expect(by("engine phrase").some((match) => match.startsWith("(Session ending)"))).toBe(true);
    expect(by("sql")).toEqual(
      expect.arrayContaining([expect.stringMatching(/^select/), "Failed query", "params:", "insert into"]),
    );
    expect(by("stack").length).toBeGreaterThan(0);
    // A tool's technical name as code in a settings list is allowed; anywhere else, not.
    expect(by("tool name")).toEqual(["createInboxItem", "tavilySearch"]);
  });

  it("runs a research request, a question, an approval, a stopped subordinate and a database hiccup", async () => {
    const created = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
      method: "POST",
      body: { name: "Battery desk", mission: "Follow battery research.", leadName: "Rosa" },
    });
    expect(created.status).toBe(201);
    const teamId = created.body.team.id;
    const scout = await call<{ agent: { id: string } }>(`/api/teams/${teamId}/agents`, {
      method: "POST",
      body: { name: "Scout", instructions: "You research." },
    });
    const sage = await call<{ agent: { id: string } }>(`/api/teams/${teamId}/agents`, {
      method: "POST",
      body: { name: "Sage", instructions: "You research too." },
    });
    team = { id: teamId, leadId: created.body.lead.id, scoutId: scout.body.agent.id, sageId: sage.body.agent.id };

    // 1. Research, with reading a page held for the person's approval.
    expect(
      (
        await call(`/api/teams/${teamId}/tool-policies`, {
          method: "PUT",
          body: { toolName: "readWebPage", policy: "ask" },
        })
      ).status,
    ).toBe(200);
    const research = await giveTask(team.leadId, "Research solid-state batteries");
    await waitFor(
      "Scout's page read to wait for approval",
      async () => (await pendingApprovals(team.scoutId)).length > 0,
    );
    const [approval] = await pendingApprovals(team.scoutId);
    expect(
      (await call(`/api/approvals/${approval!.id}/decision`, { method: "POST", body: { decision: "approve" } })).status,
    ).toBe(200);
    await waitFor(
      "the research to complete",
      async () => (await tasksOf(team.leadId)).find((task) => task.id === research.id)?.status === "completed",
    );
    expect(
      (
        await call(`/api/teams/${teamId}/tool-policies`, {
          method: "PUT",
          body: { toolName: "readWebPage", policy: null },
        })
      ).status,
    ).toBe(200);

    // 2. A question for the person, answered.
    const compare = await giveTask(team.leadId, "Compare the two battery offers", "ask me first");
    type Item = { id: string; question: { id: string; status: string } | null };
    let questionId = "";
    await waitFor("the lead's question", async () => {
      const { body } = await call<{ items: Item[] }>("/api/inbox?type=question");
      questionId = body.items.find((item) => item.question?.status === "open")?.question?.id ?? "";
      return questionId !== "";
    });
    expect(
      (await call(`/api/questions/${questionId}/answer`, { method: "POST", body: { answer: "Price matters most." } }))
        .status,
    ).toBe(200);
    await waitFor(
      "the comparison to complete",
      async () => (await tasksOf(team.leadId)).find((task) => task.id === compare.id)?.status === "completed",
    );

    // 3. A subordinate stopped mid-search: its task ends unfinished.
    await giveTask(team.sageId, "Research hold sodium-ion batteries");
    await waitFor("Sage's search to be under way", () => [...held.keys()].some((query) => query.includes("sodium")));
    expect((await call(`/api/agents/${team.sageId}/stop`, { method: "POST" })).status).toBe(200);
    release("sodium");

    // 4. The database refuses connections for a few seconds while Scout searches.
    const grid = await giveTask(team.leadId, "Research hold grid storage");
    await waitFor("Scout's search to be under way", () => [...held.keys()].some((query) => query.includes("grid")));
    const admin = postgres(inject("databaseAdminUrl"), { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`alter database ${database.name} allow_connections false`);
      await admin.unsafe(
        `select pg_terminate_backend(pid) from pg_stat_activity where datname = '${database.name}' and pid <> pg_backend_pid()`,
      );
      release("grid");
      await new Promise((resolve) => setTimeout(resolve, 5_000));
    } finally {
      await admin.unsafe(`alter database ${database.name} allow_connections true`);
      await admin.end({ timeout: 5 });
    }
    await waitFor(
      "the grid research to end after the hiccup",
      async () => (await tasksOf(team.leadId)).find((task) => task.id === grid.id)?.status === "completed",
      180_000,
    );
    await waitFor("the team to fall quiet", allQuiet, 120_000);

    // The hiccup reached the engine as the raw driver error the pages must not show.
    const ended = await database.db
      .select({ status: workSessions.status, error: workSessions.error })
      .from(workSessions);
    expect(ended.filter((session) => session.status === "interrupted" && session.error).length).toBeGreaterThan(0);
    expect(ended.some((session) => session.status === "stopped")).toBe(true);
  }, 420_000);

  it("shows no id, engine phrase, SQL, stack or raw tool name on any page, at 1440 and 375 px", async () => {
    const phrases = enginePhrases();
    const agentIds = [team.leadId, team.scoutId, team.sageId];
    const sessions = await database.db.select({ id: workSessions.id }).from(workSessions);
    const { body: inbox } = await call<{ items: { id: string }[] }>("/api/inbox?limit=50");
    const pages: [string, string][] = [
      ["home", "/"],
      ["teams", "/teams"],
      ["team", `/teams/${team.id}`],
      ...["agents", "tools", "notifications", "settings"].map((section): [string, string] => [
        `team-${section}`,
        `/teams/${team.id}/${section}`,
      ]),
      // Stories, each opened to its steps (see below), and every step of the flat view.
      ["timeline", `/teams/${team.id}/timeline`],
      ["timeline-steps", `/teams/${team.id}/timeline?view=steps`],
      ["search", `/teams/${team.id}/search?q=batteries`],
      ...agentIds.flatMap((id, index): [string, string][] => [
        [`agent-${index}`, `/agents/${id}`],
        [`chat-${index}`, `/agents/${id}/chat`],
      ]),
      ...sessions.map((session, index): [string, string] => [`session-${index}`, `/sessions/${session.id}`]),
      ["inbox", "/inbox"],
      ...inbox.items.map((item, index): [string, string] => [`inbox-item-${index}`, `/inbox/${item.id}`]),
      ["knowledge", "/knowledge"],
      ["usage", "/usage"],
    ];
    expect(sessions.length).toBeGreaterThanOrEqual(6);
    expect(inbox.items.length).toBeGreaterThanOrEqual(3);

    const findings = new Map<string, Finding[]>();
    let said = "";
    for (const [name, pathname] of pages) {
      await page.goto(`${app.url}${pathname}`);
      await settle(page);
      if (name === "timeline") {
        const open = page.getByRole("button", { name: "Show steps" });
        const stories = await open.count();
        expect(stories).toBeGreaterThanOrEqual(2);
        for (let i = 0; i < stories; i++) await open.first().click();
        await expect
          .poll(() =>
            page
              .getByRole("list", { name: /^Steps of/ })
              .locator(":scope > li")
              .count(),
          )
          .toBeGreaterThan(10);
        await page
          .getByText("Loading the steps…")
          .first()
          .waitFor({ state: "detached" })
          .catch(() => {});
      }
      said += await page.evaluate(() => document.body.innerText);
      const title = await page
        .locator("h1")
        .first()
        .textContent()
        .catch(() => "");
      findings.set(`${name} (${pathname.replace(/[0-9a-f-]{36}/g, ":id")}, "${title}")`, await scanPage(page, phrases));
      await shoot(page, `plain-words-${name}`);
    }
    const text = report(findings);
    const total = [...findings.values()].reduce((sum, found) => sum + found.length, 0);
    console.log(`pages scanned: ${pages.length}, findings: ${total}\n${text}`);
    expect(text).toBe("");
    // What happened is still told, in words: the hiccup (a lost connection, or a worker that stopped responding), the Stop, the wrap-up, the approval.
    expect(said).toMatch(
      /(?:The database was unavailable|Its worker stopped responding) — the work will be retried automatically\./,
    );
    for (const words of ["Stopped by you.", "Wrapped up the session", "Scout wants to read a web page"])
      expect(said).toContain(words);
  }, 600_000);
});
