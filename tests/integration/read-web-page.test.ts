// readWebPage: a page read through Tavily extract (the real @tavily/core client against the
// fake server), what the agent is told when it cannot be read, Stop in the middle of a read,
// and the offline model's search → read → record → brief on the real engine.
import { asSchema } from "ai";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { runWorkSession } from "@/lib/engine/agent";
import { STOPPED_MARKER } from "@/lib/core/formats";
import { stopAgent } from "@/lib/engine/stop";
import { assignTask } from "@/lib/domain/tasks";
import { toolCatalogue } from "@/lib/engine/tool-policies";
import type { ToolContext } from "@/lib/engine/tools";
import type { SearchConfig } from "@/lib/core/engine-config";
import { PAGE_READING_NOT_CONFIGURED, normalizePageUrl, searchTools } from "@/lib/engine/tools/search-tools";
import {
  getAllMessages,
  getBackgroundConversation,
  getKnowledgeItemsBySourceConversation,
  listInboxItems,
} from "@/lib/db/queries";
import { withKnowledgeSources } from "@/lib/db/queries/knowledge-items";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { runUntilQuiet, useEngineTests } from "../support/engine";
import { sessionModel, textReply, toolCallReply } from "../support/mock-model";

const tests = useEngineTests();
let database: TestDatabase;
beforeAll(() => {
  database = tests.database;
});

const started: FakeTavily[] = [];
afterEach(async () => {
  for (const fake of started.splice(0)) await fake.close();
});

async function fakeTavily(...args: Parameters<typeof startFakeTavily>): Promise<FakeTavily> {
  const fake = await startFakeTavily(...args);
  started.push(fake);
  return fake;
}

/** The tool as the SDK runs it: the input checked (and normalized) by its schema, then execute. */
async function readWebPage(search: SearchConfig, input: unknown, abortSignal?: AbortSignal): Promise<unknown> {
  // readWebPage reads nothing of its context but the search settings.
  const definition = searchTools({ search } as ToolContext).readWebPage;
  const checked = await asSchema(definition.inputSchema).validate!(input);
  if (!checked.success) throw checked.error;
  const options = { toolCallId: "call_read", messages: [], abortSignal } as unknown as Parameters<
    NonNullable<typeof definition.execute>
  >[1];
  return definition.execute!(checked.value, options);
}

describe("readWebPage", () => {
  it("is offered wherever tavilySearch is, and runs without asking (it only reads the outside world)", () => {
    const catalogue = new Map(toolCatalogue().map((info) => [info.name, info]));
    expect(catalogue.get("readWebPage")).toMatchObject({
      availableTo: catalogue.get("tavilySearch")!.availableTo,
      defaultPolicy: "auto",
    });
    expect(catalogue.get("readWebPage")!.availableTo).toEqual(["lead", "subordinate", "chat"]);
  });

  it("reads a page through Tavily extract with the team's key", async () => {
    const tavily = await fakeTavily();
    tavily.extract = ({ urls }) => ({
      pages: [
        {
          url: urls[0]!,
          title: "Solid-state batteries",
          content: "# Solid-state batteries\n\n500 Wh/kg in lab tests.",
        },
      ],
    });
    const page = await readWebPage(
      { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url },
      { url: "https://example.com/batteries" },
    );
    expect(page).toEqual({
      url: "https://example.com/batteries",
      title: "Solid-state batteries",
      content: "# Solid-state batteries\n\n500 Wh/kg in lab tests.",
    });
    expect(tavily.extracts).toEqual([
      {
        path: "/extract",
        authorization: "Bearer tvly-test",
        body: expect.objectContaining({ urls: ["https://example.com/batteries"], format: "markdown" }),
      },
    ]);
  });

  it("cuts a long page to PAGE_READ_MAX_CHARS and says so at the end; a page without a title has none", async () => {
    const tavily = await fakeTavily(undefined, {
      extract: ({ urls }) => ({ pages: [{ url: urls[0]!, title: null, content: "x".repeat(500) }] }),
    });
    const page = (await readWebPage(
      { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url, pageReadMaxChars: 100 },
      { url: "https://example.com/long" },
    )) as Record<string, string>;
    expect(page).not.toHaveProperty("title");
    expect(page.content).toBe(`${"x".repeat(100)}\n\n…(page cut to 100 characters)`);
    const short = (await readWebPage(
      { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url, pageReadMaxChars: 500 },
      { url: "https://example.com/long" },
    )) as Record<string, string>;
    expect(short.content).toBe("x".repeat(500));
  });

  it("says plainly that reading pages is not configured when there is no key, and calls nobody", async () => {
    const tavily = await fakeTavily();
    expect(await readWebPage({ tavilyBaseUrl: tavily.url }, { url: "https://example.com/a" })).toBe(
      PAGE_READING_NOT_CONFIGURED,
    );
    expect(PAGE_READING_NOT_CONFIGURED).toMatch(/not configured \(TAVILY_API_KEY is not set\)/);
    expect(tavily.extracts).toEqual([]);
  });

  it("tells the agent why a page could not be read: a failure status, an unreadable page, an empty one, no answer in time", async () => {
    const tavily = await fakeTavily();
    const search = { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url, pageReadTimeoutMs: 300 };
    const url = { url: "https://example.com/a" };

    tavily.extract = () => ({ status: 432, error: "This request exceeds your plan's set usage limit." });
    expect(await readWebPage(search, url)).toBe(
      "Reading https://example.com/a failed: This request exceeds your plan's set usage limit. Try another source, or work from what you have.",
    );

    tavily.extract = ({ urls }) => ({ pages: [], failed: [{ url: urls[0]!, error: "Failed to fetch url" }] });
    expect(await readWebPage(search, url)).toBe(
      "Reading https://example.com/a failed: Failed to fetch url. Try another source, or work from what you have.",
    );

    tavily.extract = ({ urls }) => ({ pages: [{ url: urls[0]!, title: "Empty", content: "  \n " }] });
    expect(await readWebPage(search, url)).toMatch(
      /^Reading https:\/\/example\.com\/a failed: the page has no readable text\./,
    );

    tavily.extract = () => new Promise(() => {});
    const startedAt = Date.now();
    expect(await readWebPage(search, url)).toMatch(
      /^Reading https:\/\/example\.com\/a failed: Tavily did not answer within 0.3 seconds\./,
    );
    expect(Date.now() - startedAt).toBeLessThan(5_000);
  });

  it("forgives what weaker models send around an address, and refuses garbage saying what to fix", async () => {
    const forgiven: [string, string][] = [
      ["  https://example.com/a  ", "https://example.com/a"],
      ['"https://example.com/a"', "https://example.com/a"],
      ["'https://example.com/a'", "https://example.com/a"],
      ["<https://example.com/a>", "https://example.com/a"],
      ["`<https://example.com/a>`", "https://example.com/a"],
      ["“https://example.com/a”", "https://example.com/a"],
      ["[the article](https://example.com/a)", "https://example.com/a"],
      ["https://example.com/a.", "https://example.com/a"],
      ["example.com/a?b=1", "https://example.com/a?b=1"],
      ["www.example.com", "https://www.example.com/"],
      ["//example.com/a", "https://example.com/a"],
      ["example.com:8080/a", "https://example.com:8080/a"],
      ["HTTP://Example.COM/A", "http://example.com/A"],
    ];
    for (const [sent, meant] of forgiven) expect(normalizePageUrl(sent), sent).toEqual({ url: meant });

    const refused: [string, RegExp][] = [
      ["", /is empty/],
      ['""', /is empty/],
      ["the NVDA earnings page", /not one web address \(it has spaces\)/],
      ["javascript:alert(1)", /javascript: address: only http:\/\/ and https:\/\/ pages can be read/],
      ["ftp://example.com/file", /ftp: address/],
      ["mailto:someone@example.com", /mailto: address/],
      ["nvda", /has no domain name/],
      ["https://exa mple.com", /has spaces/],
      ["http://", /not a web address/],
    ];
    for (const [sent, problem] of refused) {
      const checked = normalizePageUrl(sent);
      expect(checked, sent).toEqual({ problem: expect.stringMatching(problem) });
      expect((checked as { problem: string }).problem, sent).toMatch(/https:\/\/example\.com\/page/);
    }

    // Through the tool's schema: the normalized address is what Tavily gets.
    const tavily = await fakeTavily();
    await readWebPage({ tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url }, { url: " <example.com/a> " });
    expect(tavily.extracts[0]?.body.urls).toEqual(["https://example.com/a"]);
    await expect(
      readWebPage({ tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url }, { url: "javascript:alert(1)" }),
    ).rejects.toThrow(/only http:\/\/ and https:\/\//);
    expect(tavily.extracts).toHaveLength(1);
  });

  it("gives a model that sends garbage a result that names the field to fix, and reads what it meant next", async () => {
    const { lead } = await createTeamFixture(database.db);
    const tavily = await fakeTavily();
    const model = sessionModel((_options, call) =>
      call === 0
        ? toolCallReply("readWebPage", { url: "the NVDA earnings page" })
        : call === 1
          ? toolCallReply("readWebPage", { url: "'<example.com/nvda>'" })
          : textReply("Read it."),
    );
    const engine = await tests.engineWith({
      model,
      config: { search: { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url } },
    });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Read the NVDA page" });
    expect((await runWorkSession(engine.deps, lead.id)).status).toBe("completed");

    const results = (
      await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id)
    ).filter((m) => m.role === "tool");
    expect(results[0]!.content).toMatch(
      /^Error: invalid arguments for readWebPage\. Fix this field and call readWebPage again: `url`: "the NVDA earnings page" is not one web address/,
    );
    expect(JSON.parse(results[1]!.content)).toMatchObject({
      url: "https://example.com/nvda",
      title: "The page at https://example.com/nvda",
    });
    expect(tavily.extracts.map((request) => request.body.urls)).toEqual([["https://example.com/nvda"]]);
  });

  it("Stop ends a session at once even while a page read hangs", async () => {
    const { lead } = await createTeamFixture(database.db);
    const tavily = await fakeTavily(undefined, { extract: () => new Promise(() => {}) });
    const model = sessionModel((_options, call) =>
      call === 0 ? toolCallReply("readWebPage", { url: "https://example.com/slow" }) : textReply("unreachable"),
    );
    const engine = await tests.engineWith({
      model,
      config: { search: { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url } },
    });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Read slowly" });
    const running = runWorkSession(engine.deps, lead.id);
    await expect.poll(() => tavily.extracts.length, { timeout: 5_000 }).toBe(1);

    const stoppedAt = Date.now();
    await stopAgent(database.db, engine.jobs, lead.id);
    expect((await running).status).toBe("stopped");
    console.log(`[stop] session in a hanging page read stopped ${Date.now() - stoppedAt} ms after the request`);
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    const log = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    expect(log.slice(-2).map((m) => [m.role, m.content])).toEqual([
      ["tool", STOPPED_MARKER],
      ["assistant", STOPPED_MARKER],
    ]);
  });
});

describe("the offline model with a page to read", () => {
  it("searches, reads the first result's page (cut to size), records it with its source and briefs the person", async () => {
    const { lead } = await createTeamFixture(database.db);
    const tavily = await fakeTavily(
      ({ query }) => ({
        results: [
          { title: `Tidal power (${query})`, url: "https://example.com/tidal", content: "A short excerpt." },
          { title: "Other", url: "https://example.com/other", content: "Not read." },
        ],
      }),
      {
        extract: ({ urls }) => ({
          pages: urls.map((url) => ({
            url,
            title: "Tidal power in 2026",
            content: `Tidal capacity doubled since 2024. ${"More detail. ".repeat(100)}`,
          })),
        }),
      },
    );
    const engine = await tests.engineWith({
      config: { search: { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url, pageReadMaxChars: 200 } },
    });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Research tidal power" });
    await runUntilQuietFor(engine.deps, lead.id);

    const conversation = await getBackgroundConversation(database.db, lead.id);
    const log = await getAllMessages(database.db, conversation.id);
    expect(log.flatMap((m) => m.toolCalls?.map((c) => c.toolName) ?? [])).toEqual([
      "tavilySearch",
      "readWebPage",
      "addKnowledgeItem",
      "createInboxItem",
    ]);
    expect(tavily.extracts.map((request) => request.body.urls)).toEqual([["https://example.com/tidal"]]);
    const read = log.find((m) => m.role === "tool" && m.content.includes("Tidal power in 2026"))!;
    expect(JSON.parse(read.content).content).toMatch(/…\(page cut to 200 characters\)$/);

    const [knowledge] = await getKnowledgeItemsBySourceConversation(database.db, conversation.id);
    expect(knowledge!.content).toMatch(
      /^Tidal power in 2026: Tidal capacity doubled since 2024\..*\(source: https:\/\/example\.com\/tidal\)$/,
    );
    // Its source is the message in the log that holds the call which saved it.
    const { sources } = (await withKnowledgeSources(database.db, [knowledge!]))[0]!;
    const saving = log.find((m) => m.toolCalls?.some((c) => c.toolName === "addKnowledgeItem"))!;
    expect(sources.map((source) => source.messageId)).toEqual([saving.id]);
    const [briefing] = await listInboxItems(database.db);
    expect(briefing).toMatchObject({
      type: "briefing",
      title: "Demo briefing: Research tidal power",
      summary: "Tidal power in 2026: Tidal capacity doubled since 2024.",
    });
    expect(briefing!.content).toContain("(source: https://example.com/tidal)");
  });

  it("records the search result with its source when the page cannot be read, and still briefs", async () => {
    const { lead } = await createTeamFixture(database.db);
    const tavily = await fakeTavily(
      () => ({ results: [{ title: "Wave farms", url: "https://example.com/waves", content: "Wave farms grew." }] }),
      {
        extract: () => ({ status: 502, error: "Bad gateway." }),
      },
    );
    const engine = await tests.engineWith({
      config: { search: { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url } },
    });
    await assignTask(database.db, engine.jobs, { agentId: lead.id, source: "user", title: "Research wave farms" });
    await runUntilQuietFor(engine.deps, lead.id);

    const conversation = await getBackgroundConversation(database.db, lead.id);
    const log = await getAllMessages(database.db, conversation.id);
    expect(log.find((m) => m.role === "tool" && m.content.startsWith("Reading "))?.content).toBe(
      "Reading https://example.com/waves failed: Bad gateway. Try another source, or work from what you have.",
    );
    const [knowledge] = await getKnowledgeItemsBySourceConversation(database.db, conversation.id);
    expect(knowledge!.content).toBe("Wave farms: Wave farms grew. (source: https://example.com/waves)");
    expect(
      (await listInboxItems(database.db)).some((item) => item.title === "Demo briefing: Research wave farms"),
    ).toBe(true);
  });
});

/** The lead's sessions until it has nothing left: its turn, then its wrap-up. */
async function runUntilQuietFor(deps: Parameters<typeof runWorkSession>[0], agentId: string): Promise<void> {
  const ran = await runUntilQuiet(deps, 5, { agentIds: [agentId] });
  expect(ran.map((r) => r.outcome.status)).toEqual(ran.map(() => "completed"));
}
