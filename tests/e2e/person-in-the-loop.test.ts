// The person in the loop in a real browser (Debian's Chromium through playwright-core) against
// the production build and a worker, with the offline model and a local fake Tavily: the
// person sets a tool to "Ask me first" on the team page, answers a lead's question in the
// inbox and in the chat, and approves, edits and approves, and denies held tool calls — each
// decision checked where it lands (the search that ran, the work log, the task).
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import {
  buildIfStale,
  launchChromium,
  screenshotDir as shots,
  settle,
  shoot,
  startApp,
  type AppServer,
  callApi,
  type ApiRequest,
} from "./app-server";

const LIVE = 20_000; // the product promises about a second; the worker's turn comes first on a loaded machine

let database: TestDatabase;
let tavily: FakeTavily;
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;

type Team = { id: string; leadId: string; leadName: string };
let offers: Team; // asks the person a question (default policies)
let batteries: Team; // its searches wait for approval

type ApiApproval = {
  id: string;
  toolCallId: string;
  toolName: string;
  input: Record<string, unknown>;
  status: string;
  approvedInput: unknown;
  decisionNote: string | null;
};
type ApiTask = { id: string; title: string; status: string; result: string | null };
type ApiMessage = {
  role: string;
  content: string;
  toolCallId: string | null;
  toolCalls: { toolCallId: string; toolName: string; args: unknown }[] | null;
};

const call = <T>(pathname: string, init?: ApiRequest) => callApi<T>(app.url, pathname, init);

async function createTeam(name: string, leadName: string): Promise<Team> {
  const { status, body } = await call<{ team: { id: string }; lead: { id: string; name: string } }>("/api/teams", {
    method: "POST",
    body: { name, mission: `${name}: keep me informed.`, leadName },
  });
  expect(status).toBe(201);
  return { id: body.team.id, leadId: body.lead.id, leadName: body.lead.name };
}

async function giveTask(agentId: string, title: string, description = ""): Promise<ApiTask> {
  const { status, body } = await call<{ task: ApiTask }>(`/api/agents/${agentId}/tasks`, {
    method: "POST",
    body: { title, description },
  });
  expect(status).toBe(201);
  return body.task;
}

async function taskStatus(agentId: string, taskId: string): Promise<string | undefined> {
  const { body } = await call<{ tasks: ApiTask[] }>(`/api/agents/${agentId}/tasks`);
  return body.tasks.find((task) => task.id === taskId)?.status;
}

async function approvalsOf(agentId: string): Promise<ApiApproval[]> {
  return (await call<{ approvals: ApiApproval[] }>(`/api/agents/${agentId}/approvals`)).body.approvals;
}

async function workLog(agentId: string): Promise<ApiMessage[]> {
  return (await call<{ messages: ApiMessage[] }>(`/api/agents/${agentId}/messages?mode=background&limit=500`)).body
    .messages;
}

/** The card of the held call whose arguments mention `text` (cards are articles named for who wants what). */
function approvalCard(scope: Page | Locator, text: string): Locator {
  return scope.locator("article.approval").filter({ hasText: text });
}

/** The same card by its approval's id: once decided, a card in a list folds its arguments away. */
async function pinned(card: Locator): Promise<Locator> {
  await card.waitFor({ timeout: LIVE });
  return card.page().locator(`article.approval[data-approval-id="${await card.getAttribute("data-approval-id")}"]`);
}

function searched(query: string): number {
  return tavily.requests.filter((request) => request.body.query === query).length;
}

describe("The person in the loop, in a browser", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    tavily = await startFakeTavily();
    app = await startApp({ DATABASE_URL: database.url, TAVILY_API_KEY: "tvly-test", TAVILY_BASE_URL: tavily.url });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    offers = await createTeam("Offers desk", "Ada");
    batteries = await createTeam("Battery desk", "Rosa");
  }, 300_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page
        ?.screenshot({
          path: path.join(shots, `failed-pitl-${test.task.name.replace(/\W+/g, "-").slice(0, 60)}.png`),
          fullPage: true,
        })
        .catch(() => {});
      console.error(app?.output().split("\n").slice(-40).join("\n"));
    }
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await tavily?.close();
    await database?.drop();
  }, 60_000);

  it("sets tool policies in the team page's Approvals section, for the team and for one agent", async () => {
    await page.goto(`${app.url}/teams/${batteries.id}/tools`);
    await settle(page);
    const section = page.getByRole("region", { name: "Approvals" });
    const search = section.getByLabel("Policy for tavilySearch", { exact: true });
    expect(await search.inputValue()).toBe("");
    await search.selectOption({ label: "Ask me first" });
    await section.getByText("Saved: tavilySearch is now ask me first.").waitFor();

    // The chat's createTask asks too, for the lead only (an override of the team's setting), under
    // "For one agent", folded while no agent has a setting of its own.
    await section.getByText("For one agent").click();
    await section.getByLabel("Agent", { exact: true }).selectOption({ label: `${batteries.leadName} (lead)` });
    const createTask = section.getByLabel(`${batteries.leadName}'s policy for createTask`, { exact: true });
    expect(await createTask.locator("option").first().textContent()).toBe("Team setting (run without asking)");
    await createTask.selectOption("ask");
    await section.getByText(`Saved: createTask for ${batteries.leadName} is now ask me first.`).waitFor();

    const { body } = await call<{ team: Record<string, string>; agents: Record<string, Record<string, string>> }>(
      `/api/teams/${batteries.id}/tool-policies`,
    );
    expect(body.team).toEqual({ tavilySearch: "ask" });
    expect(body.agents).toEqual({ [batteries.leadId]: { createTask: "ask" } });

    await page.reload();
    await settle(page);
    expect(await section.getByLabel("Policy for tavilySearch", { exact: true }).inputValue()).toBe("ask");
    // Open by itself now that the lead has a setting of its own.
    expect(
      await section.getByLabel(`${batteries.leadName}'s policy for createTask`, { exact: true }).inputValue(),
    ).toBe("ask");
    await section.scrollIntoViewIfNeeded();
    await shoot(page, "pitl-team-approvals");
  }, 60_000);

  it("shows a lead's question and a held call in the inbox as they arrive, marked as waiting", async () => {
    await page.goto(`${app.url}/inbox`);
    await settle(page);
    await page.getByText("Nothing in your inbox yet").waitFor();

    const compare = await giveTask(offers.leadId, "Compare the two offers", "ask me first");
    const question = page.getByRole("article", {
      name: `${offers.leadName} asks: Before I start on "Compare the two offers"`,
      exact: false,
    });
    await question.waitFor({ timeout: LIVE });
    await question.getByRole("textbox", { name: "Answer", exact: true }).waitFor();
    expect(await taskStatus(offers.leadId, compare.id)).toBe("waiting_input");

    await giveTask(batteries.leadId, "Research solid-state batteries");
    const held = approvalCard(page, "Research solid-state batteries");
    await held.waitFor({ timeout: LIVE });
    await page
      .locator(".inbox-waiting")
      .getByRole("link", { name: `${batteries.leadName} wants to search the web` })
      .waitFor();
    for (const name of ["Approve", "Edit and approve", "Deny"])
      await held.getByRole("button", { name, exact: true }).waitFor();
    expect(await page.locator(".inbox-item.inbox-waiting").count()).toBe(2);
    await page.getByTestId("inbox-badge").filter({ hasText: "2" }).waitFor({ timeout: LIVE });
    await shoot(page, "pitl-inbox");

    // Filters: by type in the URL, the current one marked, an empty state of its own.
    await page.getByRole("link", { name: "Approvals", exact: true }).click();
    await page.waitForURL("**/inbox?type=approval");
    await settle(page);
    expect(await page.getByRole("link", { name: "Approvals", exact: true }).getAttribute("aria-current")).toBe("page");
    await approvalCard(page, "Research solid-state batteries").waitFor();
    expect(await page.locator("article.question").count()).toBe(0);
    await page.getByRole("link", { name: "Alerts", exact: true }).click();
    await page.waitForURL("**/inbox?type=alert");
    await page.getByText("No alerts").waitFor();
    await page.getByRole("link", { name: "All", exact: true }).click();
    await page.waitForURL(/\/inbox$/);
    await settle(page);

    // The question's own page has the same answer box.
    await page.getByRole("link", { name: `${offers.leadName} asks:`, exact: false }).click();
    await page.waitForURL(/\/inbox\/[0-9a-f-]{36}$/);
    await settle(page);
    await page
      .getByRole("article", { name: `${offers.leadName} asks:`, exact: false })
      .getByRole("button", { name: "Send answer", exact: true })
      .waitFor();
    await shoot(page, "pitl-item-question");
    await page.goto(`${app.url}/inbox`);
    await settle(page);
  }, 90_000);

  it("answers the question in the inbox; the lead's task goes on, and a second answer is refused", async () => {
    const question = page.getByRole("article", { name: `${offers.leadName} asks:`, exact: false });
    await question
      .getByRole("textbox", { name: "Answer", exact: true })
      .fill("Price matters most, then the notice period.");
    await question.getByRole("button", { name: "Send answer", exact: true }).click();
    await question.getByText("Answered").waitFor();
    await question.getByText("Price matters most, then the notice period.").waitFor();
    expect(await question.getByRole("textbox", { name: "Answer" }).count()).toBe(0);

    // The answer is in the lead's work log and the task goes on from it (the offline model searches for it, then briefs).
    const [compare] = (await call<{ tasks: ApiTask[] }>(`/api/agents/${offers.leadId}/tasks`)).body.tasks;
    await expect.poll(() => taskStatus(offers.leadId, compare!.id), { timeout: 30_000 }).toBe("completed");
    const log = await workLog(offers.leadId);
    expect(
      log.some(
        (message) => message.role === "user" && message.content.includes("Price matters most, then the notice period."),
      ),
    ).toBe(true);
    expect(searched("Price matters most, then the notice period.")).toBe(1);

    const { body: item } = await call<{ items: { question: { id: string; status: string } | null }[] }>(
      `/api/inbox?type=question`,
    );
    const questionId = item.items[0]!.question!.id;
    expect(item.items[0]!.question!.status).toBe("answered");
    const again = await call<{ error: { code: string; message: string } }>(`/api/questions/${questionId}/answer`, {
      method: "POST",
      body: { answer: "Again" },
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("conflict:question_answered");
  }, 60_000);

  it("approves a held search in the inbox: it runs once, as the model sent it", async () => {
    const held = await pinned(approvalCard(page, "Research solid-state batteries"));
    await held.getByRole("button", { name: "Approve", exact: true }).click();
    await held.getByText("Approved", { exact: true }).waitFor();
    await expect.poll(() => searched("Research solid-state batteries"), { timeout: 30_000 }).toBe(1);
    const [task] = (await call<{ tasks: ApiTask[] }>(`/api/agents/${batteries.leadId}/tasks`)).body.tasks.filter(
      (t) => t.title === "Research solid-state batteries",
    );
    await expect.poll(() => taskStatus(batteries.leadId, task!.id), { timeout: 30_000 }).toBe("completed");
    await held.getByText("it ran").waitFor({ timeout: LIVE });
  }, 60_000);

  it("edits a held search's arguments before approving: bad JSON and bad input are explained, the edit is what runs", async () => {
    const task = await giveTask(batteries.leadId, "Research sodium-ion cells");
    const held = await pinned(approvalCard(page, "Research sodium-ion cells"));
    await held.getByRole("button", { name: "Edit and approve", exact: true }).click();
    const args = held.getByRole("textbox", { name: "Arguments (JSON)", exact: true });
    expect(JSON.parse(await args.inputValue())).toEqual({ query: "Research sodium-ion cells" });

    await args.fill('{ "query": "sodium-ion cell costs 2025", }');
    await held.getByRole("button", { name: "Approve with changes", exact: true }).click();
    await held.getByRole("alert").filter({ hasText: "not valid JSON" }).waitFor();
    await args.fill('{ "query": 42 }');
    await held.getByRole("button", { name: "Approve with changes", exact: true }).click();
    // The server's own words: the field that does not fit the tool.
    await held
      .getByRole("alert")
      .filter({ hasText: "does not fit tavilySearch" })
      .filter({ hasText: "query" })
      .waitFor();
    await args.fill(JSON.stringify({ query: "sodium-ion cell costs 2025" }, null, 2));
    await shoot(page, "pitl-approval-edit");

    await held.getByRole("button", { name: "Approve with changes", exact: true }).click();
    await held.getByText("Approved with changes").waitFor();
    await expect.poll(() => searched("sodium-ion cell costs 2025"), { timeout: 30_000 }).toBe(1);
    expect(searched("Research sodium-ion cells")).toBe(0);
    const approval = (await approvalsOf(batteries.leadId)).find(
      (candidate) => candidate.input.query === "Research sodium-ion cells",
    )!;
    expect(approval).toMatchObject({ status: "approved", approvedInput: { query: "sodium-ion cell costs 2025" } });
    await expect.poll(() => taskStatus(batteries.leadId, task.id), { timeout: 30_000 }).toBe("completed");
    // The search's result in the work log is the edited search's.
    const result = (await workLog(batteries.leadId)).find(
      (message) => message.role === "tool" && message.toolCallId === approval.toolCallId,
    );
    expect(result?.content).toContain("sodium-ion cell costs 2025");
  }, 90_000);

  it("denies a held search on the item page with a reason the agent is told", async () => {
    const task = await giveTask(batteries.leadId, "Research flow batteries");
    await expect
      .poll(
        async () =>
          (await approvalsOf(batteries.leadId)).some((approval) => approval.input.query === "Research flow batteries"),
        { timeout: LIVE },
      )
      .toBe(true);
    const { body } = await call<{ items: { id: string; approval: { input: { query?: string } } | null }[] }>(
      `/api/inbox?type=approval`,
    );
    const item = body.items.find((candidate) => candidate.approval?.input.query === "Research flow batteries")!;

    await page.goto(`${app.url}/inbox/${item.id}`);
    await settle(page);
    const held = await pinned(approvalCard(page, "Research flow batteries"));
    await page.getByRole("heading", { level: 1, name: `${batteries.leadName} wants to search the web` }).waitFor();
    await page.getByRole("link", { name: "Open work log" }).waitFor();
    await shoot(page, "pitl-item");

    await held.getByRole("button", { name: "Deny", exact: true }).click();
    const reason = held.getByRole("textbox", { name: "Reason", exact: true });
    await reason.waitFor();
    await held.getByRole("button", { name: "Deny call", exact: true }).click();
    await held.getByRole("alert").filter({ hasText: "Say why" }).waitFor();
    await reason.fill("Flow batteries are out of scope this quarter.");
    await shoot(page, "pitl-approval-deny");
    await held.getByRole("button", { name: "Deny call", exact: true }).click();
    await held.getByText("Denied:").waitFor();
    await held.getByText("Flow batteries are out of scope this quarter.").waitFor();

    // The model is told, in the work log, and does not run it.
    await expect.poll(() => taskStatus(batteries.leadId, task.id), { timeout: 30_000 }).toBe("completed");
    expect(searched("Research flow batteries")).toBe(0);
    const approval = (await approvalsOf(batteries.leadId)).find(
      (candidate) => candidate.input.query === "Research flow batteries",
    )!;
    const log = await workLog(batteries.leadId);
    expect(log.find((message) => message.role === "tool" && message.toolCallId === approval.toolCallId)?.content).toBe(
      "Denied by the person: Flow batteries are out of scope this quarter.",
    );
    await page.getByRole("link", { name: "Open work log" }).click();
    await page.waitForURL(`**/agents/${batteries.leadId}`);
    await settle(page);
    await page
      .locator(`article.approval[data-approval-id="${approval.id}"]`)
      .getByText("Flow batteries are out of scope this quarter.")
      .waitFor();
    const denied = page.locator("details.tool", {
      hasText: "Denied by the person: Flow batteries are out of scope this quarter.",
    });
    await denied.locator("summary").click();
    await denied.getByText("Denied by the person: Flow batteries are out of scope this quarter.").waitFor();
    await shoot(page, "pitl-work-log");

    // Decided once: a second decision is refused with a reason.
    const again = await call<{ error: { code: string } }>(`/api/approvals/${approval.id}/decision`, {
      method: "POST",
      body: { decision: "approve" },
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("conflict:approval_decided");
  }, 90_000);

  it("answers a question in the chat, where it arrives live with its answer box", async () => {
    await page.goto(`${app.url}/teams/${batteries.id}/chat`);
    await settle(page);
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    await giveTask(batteries.leadId, "Choose a cell supplier", "ask me first");
    const question = page.getByRole("article", {
      name: `${batteries.leadName} asks: Before I start on "Choose a cell supplier"`,
      exact: false,
    });
    await question.waitFor({ timeout: LIVE });
    await page.locator(".message-question").filter({ hasText: "Question for you" }).waitFor();
    await question.getByRole("textbox", { name: "Answer", exact: true }).fill("Whoever ships within a month.");
    await question.getByRole("button", { name: "Send answer", exact: true }).click();
    await question.getByText("Answered").waitFor();
    expect(await question.getByRole("textbox", { name: "Answer" }).count()).toBe(0);
  }, 60_000);

  it("holds a chat tool call for approval inline; approving it there lets the reply go on without a reload", async () => {
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("please research tidal power");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    const held = await pinned(
      page
        .locator(".messages")
        .getByRole("article", { name: `${batteries.leadName} wants to create a task`, exact: false }),
    );
    await page.locator("details.tool", { hasText: "createTask" }).getByText("waits for your approval").waitFor();
    await page.getByRole("button", { name: "Send", exact: true }).waitFor(); // the reply's stream has ended
    await shoot(page, "pitl-chat-approval");

    await held.getByRole("button", { name: "Approve", exact: true }).click();
    await held.getByText("Approved", { exact: true }).waitFor();
    // A worker resumes the reply: the task is made and the lead says so, here, live.
    await page.getByText("I've created a task for the team: please research tidal power").waitFor({ timeout: LIVE });
    const { body } = await call<{ tasks: ApiTask[] }>(`/api/agents/${batteries.leadId}/tasks`);
    expect(body.tasks.filter((task) => task.title === "please research tidal power")).toHaveLength(1);
    await page.locator("details.tool", { hasText: "createTask" }).getByText("done").waitFor();
    await shoot(page, "pitl-chat-approved");
  }, 90_000);

  it("reads well in dark mode", async () => {
    await page.emulateMedia({ colorScheme: "dark" });
    try {
      await page.goto(`${app.url}/inbox`);
      await settle(page);
      await page.locator("article.approval").first().waitFor();
      await shoot(page, "pitl-inbox-dark");
    } finally {
      await page.emulateMedia({ colorScheme: "light" });
    }
  }, 30_000);
});
