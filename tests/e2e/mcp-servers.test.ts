// MCP servers and tool scopes on the team page, in a real browser (Debian's Chromium through
// playwright-core) against the production build and a worker: the person adds a real stdio
// server (@modelcontextprotocol/server-everything) through the form and sees its tools after
// Test connection, adds one that cannot be reached and sees why, edits and deletes it, and
// narrows a subordinate's tools to two — each checked through the API, with screenshots.
import { createServer } from "node:net";
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { getMcpServer } from "@/lib/db/queries/mcp-servers";
import { createTestDatabase, type TestDatabase } from "../support/database";
import {
  buildIfStale,
  launchChromium,
  screenshotDir as shots,
  settle,
  shoot,
  startApp,
  type AppServer,
} from "./app-server";

const everythingServer = path.resolve(
  import.meta.dirname,
  "../../node_modules/@modelcontextprotocol/server-everything/dist/index.js",
);
const ENV_SECRET = "env-secret-value-7f3a";
const HEADER_SECRET = "Bearer header-secret-value-91c2";

let database: TestDatabase;
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let teamId = "";
let adaId = "";
let scoutId = "";
let closedPort = 0;

type ApiServer = {
  id: string;
  name: string;
  transport: string;
  url: string | null;
  command: string | null;
  args: string[];
  headerNames: string[];
  envNames: string[];
  enabled: boolean;
  callTimeoutMs: number;
  tools: { name: string; readOnly: boolean }[];
  lastConnectedAt: string | null;
  lastError: string | null;
};

async function call<T>(
  pathname: string,
  init: { method?: string; body?: unknown } = {},
): Promise<{ status: number; body: T; text: string }> {
  const response = await fetch(`${app.url}${pathname}`, {
    method: init.method ?? "GET",
    headers: init.body === undefined ? undefined : { "content-type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as T, text };
}

async function servers(): Promise<{ list: ApiServer[]; text: string }> {
  const { body, text } = await call<{ servers: ApiServer[] }>(`/api/teams/${teamId}/mcp-servers`);
  return { list: body.servers, text };
}

/** A port nothing listens on: bound once to get a free number, then closed. */
async function portWithNobody(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function section(): Locator {
  return page.getByRole("region", { name: "Tools and MCP servers" });
}

function serverCard(name: string): Locator {
  return section().getByRole("article", { name: `MCP server ${name}`, exact: true });
}

/** The section alone, for a closer look than the full-page shots give (and once in the dark scheme). */
async function shootSection(name: string): Promise<void> {
  await section().screenshot({ path: path.join(shots, `${name}-section.png`) });
}

async function openTeamPage(): Promise<void> {
  await page.goto(`${app.url}/teams/${teamId}/tools`);
  await settle(page);
}

/** The add form, opened from its button unless it is open already (it stays open after an add). */
async function addForm(): Promise<Locator> {
  const form = section().getByRole("form", { name: "Add an MCP server" });
  if (!(await form.isVisible())) await section().getByRole("button", { name: "Add an MCP server" }).click();
  await form.waitFor();
  return form;
}

async function addServer(fill: (form: Locator) => Promise<void>, name: string): Promise<Locator> {
  const form = await addForm();
  await fill(form);
  await form.getByRole("button", { name: "Add server" }).click();
  await form.getByText(`Added ${name}.`).waitFor();
  const card = serverCard(name);
  await card.waitFor();
  return card;
}

describe("MCP servers and tool scopes on the team page", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    app = await startApp({ DATABASE_URL: database.url });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    page.on("dialog", (dialog) => void (dialog.type() === "confirm" ? dialog.accept() : dialog.dismiss()));
    closedPort = await portWithNobody();

    const team = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
      method: "POST",
      body: { name: "Tool desk", mission: "Try the tools of MCP servers.", leadName: "Ada" },
    });
    expect(team.status).toBe(201);
    teamId = team.body.team.id;
    adaId = team.body.lead.id;
    const scout = await call<{ agent: { id: string } }>(`/api/teams/${teamId}/agents`, {
      method: "POST",
      body: { name: "Scout", instructions: "Searches the web.", parentAgentId: team.body.lead.id },
    });
    expect(scout.status).toBe(201);
    scoutId = scout.body.agent.id;
  }, 300_000);

  afterEach(async (test) => {
    if (test.task.result?.state === "fail") {
      await page
        ?.screenshot({
          path: path.join(shots, `failed-mcp-${test.task.name.replace(/\W+/g, "-").slice(0, 60)}.png`),
          fullPage: true,
        })
        .catch(() => {});
      console.error(app?.output().split("\n").slice(-40).join("\n"));
    }
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await database?.drop();
  }, 60_000);

  it("adds a real stdio server through the form, and Test connection lists its tools", async () => {
    await openTeamPage();
    await section().getByText("No MCP servers yet.").waitFor();

    const card = await addServer(async (form) => {
      await form.getByRole("radio", { name: "stdio: a command Cadre starts" }).check();
      await form.getByLabel("Server name", { exact: true }).fill("everything");
      await form.getByLabel("Command", { exact: true }).fill(process.execPath);
      await form.getByLabel("Arguments (optional)", { exact: true }).fill(`${everythingServer}\nstdio`);
      await form.getByLabel("Environment (optional)", { exact: true }).fill(`EVERYTHING_NOTE=${ENV_SECRET}`);
      await form.getByLabel("Call timeout (seconds)", { exact: true }).fill("20");
    }, "everything");

    // Saved as typed; the environment's value is never shown again, only its name.
    await card.getByText(`${process.execPath} ${everythingServer} stdio`).waitFor();
    await card.getByText("values hidden").waitFor();
    expect(await card.textContent()).toContain("EVERYTHING_NOTE");
    await card.getByText("Never connected yet.").waitFor();
    expect(await page.content()).not.toContain(ENV_SECRET);

    const started = Date.now();
    await card.getByRole("button", { name: "Test connection for everything" }).click();
    const listed = card.getByRole("list", { name: "Tools it listed" });
    await listed.waitFor({ timeout: 8_000 });
    expect(Date.now() - started).toBeLessThan(8_000);
    await card.getByText(/Connected in \d+(\.\d)? s: \d+ tools\./).waitFor();
    const names = await listed.getByRole("listitem").allTextContents();
    expect(names).toEqual(expect.arrayContaining(["echo", "get-sum"]));

    // The tools with their read-only marker, folded under the card.
    await card.getByText(`Tools of everything (${names.length})`).click();
    await card.locator(".mcp-tools li", { hasText: "get-sum" }).waitFor();

    const { list, text } = await servers();
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      name: "everything",
      transport: "stdio",
      command: process.execPath,
      args: [everythingServer, "stdio"],
      envNames: ["EVERYTHING_NOTE"],
      callTimeoutMs: 20_000,
      lastError: null,
    });
    expect(list[0]!.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["echo", "get-sum"]));
    expect(text).not.toContain(ENV_SECRET);

    // The Approvals section lists the server's tools (the page was refreshed after the test).
    await page
      .getByRole("region", { name: "Approvals" })
      .getByLabel("Policy for everything__echo", { exact: true })
      .waitFor();

    await card.scrollIntoViewIfNeeded();
    await shoot(page, "mcp-servers-tested");
    await shootSection("mcp-servers-tested");
  }, 60_000);

  it("shows why a server cannot be reached, in the test and after a reload", async () => {
    const card = await addServer(async (form) => {
      await form.getByRole("radio", { name: "HTTP: a streamable HTTP endpoint" }).check();
      await form.getByLabel("Server name", { exact: true }).fill("broken");
      await form.getByLabel("URL", { exact: true }).fill(`http://127.0.0.1:${closedPort}/mcp`);
      await form.getByLabel("Headers (optional)", { exact: true }).fill(`Authorization: ${HEADER_SECRET}\nX-Team=desk`);
    }, "broken");
    await card.getByText("values hidden").waitFor();
    expect(await card.textContent()).toMatch(/Authorization, X-Team/);

    const started = Date.now();
    await card.getByRole("button", { name: "Test connection for broken" }).click();
    const failed = card.getByText(/Test failed after \d+(\.\d)? s:/);
    await failed.waitFor({ timeout: 8_000 });
    expect(Date.now() - started).toBeLessThan(8_000);
    const { list } = await servers();
    const broken = list.find((server) => server.name === "broken")!;
    expect(broken.lastError).toBeTruthy();
    expect(await card.getByRole("status").textContent()).toContain(broken.lastError!);
    expect(broken.lastError).toContain("ECONNREFUSED");

    // A command that does not exist.
    const missing = await addServer(async (form) => {
      await form.getByRole("radio", { name: "stdio: a command Cadre starts" }).check();
      await form.getByLabel("Server name", { exact: true }).fill("missing");
      await form.getByLabel("Command", { exact: true }).fill("/nonexistent");
    }, "missing");
    await missing.getByRole("button", { name: "Test connection for missing" }).click();
    await missing.getByText(/Test failed after \d+(\.\d)? s: .*ENOENT/).waitFor({ timeout: 8_000 });
    expect(broken.headerNames.slice().sort()).toEqual(["Authorization", "X-Team"]);

    // The server's state is kept: after a reload the card still says why.
    await openTeamPage();
    await serverCard("broken").getByText("Could not connect").waitFor();
    expect(await page.content()).not.toContain("header-secret-value");
    // A bad name is refused with the server's own message, and nothing is added.
    const form = await addForm();
    await form.getByRole("radio", { name: "HTTP: a streamable HTTP endpoint" }).check();
    await form.getByLabel("Server name", { exact: true }).fill("two__parts");
    await form.getByLabel("URL", { exact: true }).fill("http://127.0.0.1:1/mcp");
    await form.getByRole("button", { name: "Add server" }).click();
    await form.getByRole("alert").getByText("no double underscore").waitFor();
    // A duplicate name too.
    await form.getByLabel("Server name", { exact: true }).fill("broken");
    await form.getByRole("button", { name: "Add server" }).click();
    await form.getByRole("alert").getByText('already has an MCP server named "broken"').waitFor();
    expect((await servers()).list).toHaveLength(3);
    await shootSection("mcp-servers-add-form");
    // Escape closes the form and gives the focus back to the button that opened it.
    await form.getByLabel("Server name", { exact: true }).focus();
    await page.keyboard.press("Escape");
    await form.waitFor({ state: "detached" });
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe("Add an MCP server");

    await serverCard("broken").scrollIntoViewIfNeeded();
    await shoot(page, "mcp-servers-error");
    await shootSection("mcp-servers-error");
  }, 60_000);

  it("edits a server without resending its secrets, turns it off and on, and deletes it", async () => {
    const card = serverCard("broken");
    await card.getByRole("button", { name: "Edit broken" }).click();
    const edit = section().getByRole("form", { name: "Edit broken" });
    await edit.getByText("Leave empty to keep the current values (Authorization, X-Team).").waitFor();
    await edit.getByLabel("Server name", { exact: true }).fill("unreachable");
    await edit.getByLabel("URL", { exact: true }).fill(`http://127.0.0.1:${closedPort}/other`);
    await edit.getByLabel("Call timeout (seconds)", { exact: true }).fill("5");
    await shoot(page, "mcp-servers-edit");
    await shootSection("mcp-servers-edit");
    await edit.getByRole("button", { name: "Save" }).click();
    const renamed = serverCard("unreachable");
    await renamed.waitFor();
    await renamed.getByText(`http://127.0.0.1:${closedPort}/other`).waitFor();

    let server = (await servers()).list.find((candidate) => candidate.name === "unreachable")!;
    expect(server).toMatchObject({ url: `http://127.0.0.1:${closedPort}/other`, callTimeoutMs: 5000 });
    expect(server.headerNames.slice().sort()).toEqual(["Authorization", "X-Team"]);
    // The header values were not sent back, so they were kept as they were.
    expect((await getMcpServer(database.db, server.id))!.headers).toEqual({
      Authorization: HEADER_SECRET,
      "X-Team": "desk",
    });

    // New header lines replace them whole.
    await renamed.getByRole("button", { name: "Edit unreachable" }).click();
    const again = section().getByRole("form", { name: "Edit unreachable" });
    await again.getByLabel("New headers", { exact: true }).fill("Authorization=Bearer new");
    await again.getByRole("button", { name: "Save" }).click();
    await renamed.getByRole("button", { name: "Edit unreachable" }).waitFor();
    await expect
      .poll(async () => (await getMcpServer(database.db, server.id))!.headers)
      .toEqual({ Authorization: "Bearer new" });

    await renamed.getByRole("button", { name: "Turn off unreachable" }).click();
    await renamed.getByText("Off: no agent is offered its tools.").waitFor();
    expect((await servers()).list.find((candidate) => candidate.id === server.id)!.enabled).toBe(false);
    await renamed.getByRole("button", { name: "Turn on unreachable" }).click();
    await renamed.getByRole("button", { name: "Turn off unreachable" }).waitFor();

    await renamed.getByRole("button", { name: "Delete unreachable" }).click();
    await renamed.waitFor({ state: "detached" });
    await serverCard("missing").getByRole("button", { name: "Delete missing" }).click();
    await serverCard("missing").waitFor({ state: "detached" });
    const left = (await servers()).list;
    expect(left.map((candidate) => candidate.name)).toEqual(["everything"]);
    server = left[0]!;
    expect(server.enabled).toBe(true);
  }, 60_000);

  it("narrows a subordinate's tools to tavilySearch and everything__echo", async () => {
    await openTeamPage();
    const scopes = section().getByRole("region", { name: "Who may use which tools" });
    const scout = scopes.locator("details", { hasText: "Scout" });
    await scout.locator("summary").click();
    await scout.getByText("All tools", { exact: true }).waitFor();
    await scopes.getByRole("radio", { name: "Only chosen tools for Scout" }).check();
    await scopes.getByRole("checkbox", { name: "tavilySearch for Scout", exact: true }).check();
    await scopes.getByRole("checkbox", { name: "everything__echo for Scout", exact: true }).check();
    // The lead's editor is apart: its names are its own.
    expect(await scopes.getByRole("checkbox", { name: "tavilySearch for Ada", exact: true }).count()).toBe(0);
    await scopes.getByRole("button", { name: "Save tools for Scout" }).click();
    await scopes.getByText("Saved: Scout may use tavilySearch, everything__echo.").waitFor();

    const { body } = await call<{ agent: { toolScope: { allow: string[] } | null } }>(`/api/agents/${scoutId}`);
    expect(body.agent.toolScope?.allow.slice().sort()).toEqual(["everything__echo", "tavilySearch"]);
    await scout.getByText("Only: tavilySearch, everything__echo").waitFor();
    await scout.scrollIntoViewIfNeeded();
    await shoot(page, "mcp-scopes");
    await shootSection("mcp-scopes");

    // After a reload the editor shows what was saved.
    await openTeamPage();
    await scout.locator("summary").click();
    expect(await scopes.getByRole("radio", { name: "Only chosen tools for Scout" }).isChecked()).toBe(true);
    expect(await scopes.getByRole("checkbox", { name: "everything__echo for Scout", exact: true }).isChecked()).toBe(
      true,
    );
    expect(await scopes.getByRole("checkbox", { name: "everything__get-sum for Scout", exact: true }).isChecked()).toBe(
      false,
    );

    // The whole server for the lead; back to all tools for Scout.
    const ada = scopes.locator("details", { hasText: "Ada" });
    await ada.locator("summary").click();
    await scopes.getByRole("radio", { name: "Only chosen tools for Ada" }).check();
    await scopes.getByRole("checkbox", { name: "All tools of everything for Ada", exact: true }).check();
    expect(await scopes.getByRole("checkbox", { name: "everything__echo for Ada", exact: true }).isDisabled()).toBe(
      true,
    );
    await scopes.getByRole("button", { name: "Save tools for Ada" }).click();
    await scopes.getByText("Saved: Ada may use all tools of everything.").waitFor();
    await ada.getByText("Only: all tools of everything").waitFor();
    expect((await call<{ agent: { toolScope: unknown } }>(`/api/agents/${adaId}`)).body.agent.toolScope).toEqual({
      allow: ["everything__*"],
    });
    await scopes.getByRole("radio", { name: "All tools for Scout" }).check();
    await scopes.getByRole("button", { name: "Save tools for Scout" }).click();
    await scopes.getByText("Saved: Scout may use all tools.").waitFor();
    expect((await call<{ agent: { toolScope: unknown } }>(`/api/agents/${scoutId}`)).body.agent.toolScope).toBeNull();
    await shoot(page, "mcp-team-page");

    // The dark scheme, on a phone and wide, with the lead's editor open.
    await page.emulateMedia({ colorScheme: "dark" });
    await page.setViewportSize({ width: 375, height: 812 });
    await shootSection("mcp-dark-375");
    await page.setViewportSize({ width: 1440, height: 900 });
    await shootSection("mcp-dark-1440");
    await page.emulateMedia({ colorScheme: "light" });
  }, 60_000);
});
