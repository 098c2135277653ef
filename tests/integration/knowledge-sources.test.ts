// Knowledge worth keeping: a fact added after a search or a page read names where it came
// from (the real tools against a fake Tavily), a bad source is dropped rather than failing
// the call, and extraction merges near-duplicates instead of adding them again.
import { MockLanguageModelV4 } from "ai/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { extractKnowledgeFromConversation, isNearDuplicate } from "@/lib/domain/knowledge-items";
import { knowledgeTools } from "@/lib/engine/tools/knowledge-tools";
import { searchTools } from "@/lib/engine/tools/search-tools";
import { TurnSources } from "@/lib/domain/sources";
import type { ToolContext } from "@/lib/engine/tools";
import {
  appendMessages,
  createKnowledgeItem,
  getAllMessages,
  getBackgroundConversation,
  searchKnowledgeItems,
} from "@/lib/db/queries";
import type { Db } from "@/lib/db/client";
import { JobQueue } from "@/lib/jobs/job-queue";
import { offlineEmbeddingChoice } from "@/lib/llm/embeddings";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import { createTeamFixture } from "../support/fixtures";
import { textReply } from "../support/mock-model";

let database: TestDatabase;
let tavily: FakeTavily;
let jobs: JobQueue;
beforeAll(async () => {
  database = await createTestDatabase();
  jobs = await JobQueue.start(database.url, "web", { quiet: true });
  tavily = await startFakeTavily(({ query }) => ({
    results: [
      {
        title: "Wind turbines",
        url: "https://example.com/wind",
        content: "Offshore wind capacity doubled in Denmark.",
      },
      {
        title: "Solar panel prices",
        url: "https://example.com/solar",
        content: `Solar panel prices fell 20 percent in 2025 (${query}).`,
      },
    ],
  }));
});
afterAll(async () => {
  await jobs?.stop({ graceful: false, timeoutMs: 1000 });
  await tavily?.close();
  await database?.close();
});

async function scoutContext() {
  const { team, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
  const scout = subordinates[0]!;
  const conversation = await getBackgroundConversation(database.db, scout.id);
  const context = {
    db: database.db,
    agent: scout,
    team,
    conversationId: conversation.id,
    workSessionId: null,
    embedding: offlineEmbeddingChoice(),
    jobs,
    search: { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url },
    focusTaskId: () => null,
    effect: <T>(_id: string, write: (tx: Db) => Promise<T>) => write(database.db),
  } as unknown as ToolContext;
  return { scout, conversation, context };
}

const call = { toolCallId: "call", messages: [] } as never;

describe("the source of a fact", () => {
  it("comes from the search result the fact was learned from, the page read last, or the agent; a bad one is dropped", async () => {
    const { scout, context } = await scoutContext();
    const sources = new TurnSources();
    const search = searchTools(context, sources);
    const knowledge = knowledgeTools(context, sources);
    const add = (input: object) =>
      knowledge.addKnowledgeItem.execute!({ type: "fact", ...input } as never, call) as unknown as Promise<{
        sourceUrl?: string;
      }>;

    // Before any search: no source.
    expect(await add({ content: "Batteries are getting cheaper." })).not.toHaveProperty("sourceUrl");
    await search.tavilySearch.execute!({ query: "solar" }, call);
    expect((await add({ content: "Solar panel prices fell 20 percent in 2025." })).sourceUrl).toBe(
      "https://example.com/solar",
    );
    expect((await add({ content: "Offshore wind capacity doubled in Denmark." })).sourceUrl).toBe(
      "https://example.com/wind",
    );
    // A fact the results do not say gets none.
    expect(await add({ content: "Tidal power is promising." })).not.toHaveProperty("sourceUrl");
    // The agent's own source wins; a bad one is dropped (falling back to what it saw), never an error.
    expect(
      (await add({ content: "Tidal power is promising.", sourceUrl: "https://example.org/tidal" })).sourceUrl,
    ).toBe("https://example.org/tidal");
    expect(await add({ content: "Tidal power is promising.", sourceUrl: "javascript:alert(1)" })).not.toHaveProperty(
      "sourceUrl",
    );

    await search.readWebPage.execute!({ url: "https://example.com/report" }, call);
    expect((await add({ content: "Anything learned right after reading a page." })).sourceUrl).toBe(
      "https://example.com/report",
    );

    const stored = await searchKnowledgeItems(database.db, { agentId: scout.id });
    expect(
      stored
        .filter((item) => item.sourceUrl)
        .map((item) => item.sourceUrl)
        .sort(),
    ).toEqual([
      "https://example.com/report",
      "https://example.com/solar",
      "https://example.com/wind",
      "https://example.org/tidal",
    ]);
  });
});

/** Extraction over a short exchange added to the agent's log, the model answering `answer`. */
async function extractAnswer(agentId: string, conversationId: string, answer: string) {
  await appendMessages(database.db, conversationId, [
    { role: "user", content: "What did you learn?" },
    { role: "assistant", content: "Prices fell." },
  ]);
  const model = new MockLanguageModelV4({ doGenerate: async () => textReply(answer) });
  return extractKnowledgeFromConversation({
    db: database.db,
    model: { model, modelId: "mock", kind: "offline" },
    agentId,
    conversationId,
    messages: await getAllMessages(database.db, conversationId),
    maxInputChars: 10_000,
    embedding: offlineEmbeddingChoice(),
    jobs,
  });
}

describe("extraction", () => {
  it("tells near-duplicates apart from different facts", () => {
    expect(isNearDuplicate("Solar panels got 20% cheaper.", "solar panels got 20 cheaper")).toBe(true);
    expect(isNearDuplicate("Solar panels got cheaper", "Solar panels got cheaper in Germany last year, per IEA.")).toBe(
      true,
    );
    expect(
      isNearDuplicate(
        "The lead prefers short briefings with sources at the end",
        "The lead prefers short briefings with sources at the end, always",
      ),
    ).toBe(true);
    expect(isNearDuplicate("Solar panels got cheaper", "Wind turbines got cheaper")).toBe(false);
    expect(isNearDuplicate("Use RSS feeds for news", "Use RSS feeds for weather alerts and news digests")).toBe(false);
  });

  it("merges near-duplicates of what the agent knows (keeping the higher confidence and the source) and within its own output", async () => {
    const { scout, conversation } = await scoutContext();
    const known = await createKnowledgeItem(database.db, {
      agentId: scout.id,
      type: "fact",
      content: "Solar panel prices fell 20% in 2025.",
      confidence: 0.5,
      sourceUrl: "https://example.com/solar",
    });
    const sure = await createKnowledgeItem(database.db, {
      agentId: scout.id,
      type: "fact",
      content: "Wind is cheap.",
      confidence: 0.9,
    });
    const extracted = {
      items: [
        { type: "fact", content: "solar panel prices fell 20 % in 2025", confidence: 0.8 },
        { type: "fact", content: "Wind is cheap!", confidence: 0.4 },
        { type: "lesson", content: "Check two sources before briefing.", confidence: 0.7 },
        { type: "lesson", content: "Check two sources before briefing", confidence: 0.6 },
      ],
    };
    const created = await extractAnswer(scout.id, conversation.id, JSON.stringify(extracted));
    expect(created.map((item) => item.content)).toEqual(["Check two sources before briefing."]);
    const items = await searchKnowledgeItems(database.db, { agentId: scout.id });
    expect(items).toHaveLength(3);
    const solar = items.find((item) => item.id === known.id)!;
    expect(solar).toMatchObject({
      content: "Solar panel prices fell 20% in 2025.",
      confidence: 0.8,
      sourceUrl: "https://example.com/solar",
    });
    expect(items.find((item) => item.id === sure.id)!.confidence).toBe(0.9);
  });

  it("forgives a weaker model's answer: keeps the items that read, and an answer with none is no items, not a failure", async () => {
    const extractWith = async (answer: string) => {
      const { scout, conversation } = await scoutContext();
      const created = await extractAnswer(scout.id, conversation.id, answer);
      expect(
        (await searchKnowledgeItems(database.db, { agentId: scout.id })).map((item) => item.content).sort(),
      ).toEqual(created.map((item) => item.content).sort());
      return created.map((item) => [item.type, item.content, item.confidence]);
    };
    // In a code fence, with words around it, one item out of range and one with no content.
    const fenced = [
      "Here is what I found:",
      "```json",
      JSON.stringify({
        items: [
          { type: "fact", content: "Solar panel prices fell 20% in 2025.", confidence: 0.8 },
          { type: "fact", content: "Wind is everywhere.", confidence: 5 },
          { type: "lesson", confidence: 0.5 },
          { type: "technique", content: "Search the trade press first.", confidence: 0.6 },
        ],
      }),
      "```",
    ].join("\n");
    expect(await extractWith(fenced)).toEqual([
      ["fact", "Solar panel prices fell 20% in 2025.", 0.8],
      ["technique", "Search the trade press first.", 0.6],
    ]);
    // A bare array.
    expect(
      await extractWith(JSON.stringify([{ type: "lesson", content: "Check two sources.", confidence: 0.7 }])),
    ).toEqual([["lesson", "Check two sources.", 0.7]]);
    // Brackets in the words around it, and two blocks of which the second holds the items.
    const item = { type: "fact", content: "Wind auctions reopen in June.", confidence: 0.9 };
    expect(await extractWith(`Sure! {"items":[${JSON.stringify(item)}]} Hope this helps :}`)).toEqual([
      ["fact", "Wind auctions reopen in June.", 0.9],
    ]);
    expect(
      await extractWith(
        `Items [see below]: {"items":[${JSON.stringify({ ...item, content: "Grid fees rise in 2027." })}]}`,
      ),
    ).toEqual([["fact", "Grid fees rise in 2027.", 0.9]]);
    expect(
      await extractWith(
        `\`\`\`json\n{"note": "none"}\n\`\`\`\nand\n\`\`\`json\n{"items":[${JSON.stringify({ ...item, content: "Offshore wind is up." })}]}\n\`\`\``,
      ),
    ).toEqual([["fact", "Offshore wind is up.", 0.9]]);
    // Placeholders are not facts, and content is stored trimmed.
    const placeholders = ["   ", "null", "N/A", "…"].map((content) => ({ type: "fact", content, confidence: 0.7 }));
    expect(
      await extractWith(JSON.stringify({ items: [...placeholders, { ...item, content: "  Solar is cheap.  " }] })),
    ).toEqual([["fact", "Solar is cheap.", 0.9]]);
    // A NUL, which Postgres text cannot hold, is dropped rather than failing the session's wrap-up.
    expect(
      await extractWith(JSON.stringify({ items: [{ ...item, content: "Fact with NUL \u0000 inside." }] })),
    ).toEqual([["fact", "Fact with NUL  inside.", 0.9]]);
    // No JSON at all, JSON that is cut off, items that are not a list, nesting deep enough to overflow a stack.
    expect(await extractWith("Nothing worth keeping this time.")).toEqual([]);
    expect(await extractWith('{"items": [{"type": "fact", "content": "Cut off')).toEqual([]);
    expect(await extractWith('{"items": "text"}')).toEqual([]);
    expect(await extractWith(`${"[".repeat(20_000)}${"]".repeat(20_000)}`)).toEqual([]);
  });
});
