// One fact, many sources: a fact that agents of a team report again (by the addKnowledgeItem
// tool or by extraction) is one item with a source per report — agent, message, URL — never a
// second item, also when two agents save it at the same moment. A URL named in the fact fills
// its source. The migration gave every item stored before it a source.
import { readFileSync } from "node:fs";
import path from "node:path";
import { MockLanguageModelV4 } from "ai/test";
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { extractKnowledgeFromConversation } from "@/lib/domain/knowledge-items";
import { knowledgeTools } from "@/lib/engine/tools/knowledge-tools";
import type { ToolContext } from "@/lib/engine/tools";
import type { EffectCall } from "@/lib/engine/tools/context";
import {
  appendMessages,
  getAllMessages,
  getBackgroundConversation,
  getForegroundConversation,
  searchKnowledgeItems,
} from "@/lib/db/queries";
import { deleteAgent } from "@/lib/db/queries/agents";
import { withKnowledgeSources } from "@/lib/db/queries/knowledge-items";
import type { Db } from "@/lib/db/client";
import { knowledgeItems, knowledgeSources, type Agent, type Team } from "@/lib/db/schema";
import { JobQueue } from "@/lib/jobs/job-queue";
import { offlineEmbeddingChoice } from "@/lib/llm/embeddings";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTeamFixture } from "../support/fixtures";
import { textReply } from "../support/mock-model";

let database: TestDatabase;
let jobs: JobQueue;
beforeAll(async () => {
  database = await createTestDatabase();
  jobs = await JobQueue.start(database.url, "web", { quiet: true });
});
afterAll(async () => {
  await jobs?.stop({ graceful: false, timeoutMs: 1000 });
  await database?.close();
});

const call = (toolCallId: string) => ({ toolCallId, messages: [] }) as never;

/**
 * An agent's addKnowledgeItem as a turn runs it: the call stored in its work log first, then the
 * tool's writes in a transaction of their own (as runEffect does), given the message holding the call.
 * `hold`: the transaction waits for it before it commits (to make two saves overlap).
 */
async function saveFact(
  team: Team,
  agent: Agent,
  input: { content: string; confidence?: number; sourceUrl?: string },
  hold?: Promise<void>,
  written?: () => void,
) {
  const conversation = await getBackgroundConversation(database.db, agent.id);
  const toolCallId = `call-${crypto.randomUUID()}`;
  const [message] = await appendMessages(database.db, conversation.id, [
    {
      role: "assistant",
      content: "",
      toolCalls: [{ toolCallId, toolName: "addKnowledgeItem", args: { type: "fact", ...input } }],
    },
  ]);
  const context = {
    db: database.db,
    agent,
    team,
    conversationId: conversation.id,
    workSessionId: null,
    embedding: offlineEmbeddingChoice(),
    jobs,
    search: {},
    focusTaskId: () => null,
    effect: <T>(_id: string, write: (tx: Db, effectCall?: EffectCall) => Promise<T>) =>
      database.db.transaction(async (tx) => {
        const result = await write(tx, { messageId: message!.id });
        written?.();
        await hold;
        return result;
      }),
  } as unknown as ToolContext;
  const result = (await knowledgeTools(context).addKnowledgeItem.execute!(
    { type: "fact", ...input } as never,
    call(toolCallId),
  )) as { saved: true; id: string; note?: string; sourceUrl?: string };
  return { result, message: message!, conversation };
}

const itemsOf = async (team: Team) =>
  withKnowledgeSources(database.db, await searchKnowledgeItems(database.db, { teamId: team.id }));

describe("one fact, many sources", () => {
  it("three agents reporting the same fact make one item with three sources, the highest confidence, and the URL its text names", async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout", "Analyst"] });
    const [scout, analyst] = subordinates as [Agent, Agent];
    const first = await saveFact(team, scout, { content: "Solar panel prices fell 20% in 2025.", confidence: 0.6 });
    const second = await saveFact(team, analyst, {
      content: "solar panel prices fell 20 % in 2025",
      confidence: 0.9,
      sourceUrl: "https://example.org/prices",
    });
    const third = await saveFact(team, lead, {
      content: "Solar panel prices fell 20% in 2025 (https://example.com/solar-report).",
      confidence: 0.7,
    });

    expect(first.result.note).toBeUndefined();
    expect(second.result).toMatchObject({ id: first.result.id, sourceUrl: "https://example.org/prices" });
    expect(second.result.note).toMatch(/already knew/);
    expect(third.result).toMatchObject({ id: first.result.id, sourceUrl: "https://example.com/solar-report" });

    const items = await itemsOf(team);
    expect(items).toHaveLength(1);
    const [item] = items;
    // The first report's words, the highest confidence, the first URL a report gave.
    expect(item).toMatchObject({
      content: "Solar panel prices fell 20% in 2025.",
      confidence: 0.9,
      sourceUrl: "https://example.org/prices",
      agentId: scout.id,
      updatedAt: null,
    });
    expect(
      item!.sources.map((source) => [source.agentName, source.messageId, source.conversationId, source.url]),
    ).toEqual([
      ["Scout", first.message.id, first.conversation.id, null],
      ["Analyst", second.message.id, second.conversation.id, "https://example.org/prices"],
      [lead.name, third.message.id, third.conversation.id, "https://example.com/solar-report"],
    ]);
    // Each agent's knowledge holds it: the agent filter matches any of its sources.
    for (const agent of [scout, analyst, lead])
      expect((await searchKnowledgeItems(database.db, { agentId: agent.id })).map((each) => each.id)).toEqual([
        item!.id,
      ]);

    // Another team's agent knowing the same is that team's own item.
    const other = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const elsewhere = await saveFact(other.team, other.subordinates[0]!, {
      content: "Solar panel prices fell 20% in 2025.",
    });
    expect(elsewhere.result.id).not.toBe(item!.id);
    expect(await itemsOf(other.team)).toHaveLength(1);
  });

  it("two agents saving the same fact at the same moment make one item with two sources", async () => {
    const { team, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout", "Analyst"] });
    const [scout, analyst] = subordinates as [Agent, Agent];
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    let firstWritten!: () => void;
    const written = new Promise<void>((resolve) => (firstWritten = resolve));
    // The scout's save has written its item and not committed yet when the analyst's starts.
    const scoutSave = saveFact(
      team,
      scout,
      { content: "Grid batteries doubled in Texas in 2025." },
      hold,
      firstWritten,
    );
    await written;
    const analystSave = saveFact(team, analyst, { content: "Grid batteries doubled in Texas in 2025" });
    await new Promise((resolve) => setTimeout(resolve, 300)); // the analyst's save is waiting, not done
    release();
    const [a, b] = await Promise.all([scoutSave, analystSave]);
    expect(b.result.id).toBe(a.result.id);
    const items = await itemsOf(team);
    expect(items).toHaveLength(1);
    expect(items[0]!.sources.map((source) => source.agentName)).toEqual(["Scout", "Analyst"]);

    // And five at once, all different agents' or not, still one item.
    await Promise.all(
      [scout, analyst, scout, analyst, scout].map((agent, index) =>
        saveFact(team, agent, { content: `Heat pumps outsold gas boilers in France${".".repeat(index % 2)}` }),
      ),
    );
    expect((await itemsOf(team)).filter((each) => each.content.startsWith("Heat pumps"))).toHaveLength(1);
  });

  it("an agent's removal keeps the facts another agent reported too, with that agent as the first reporter", async () => {
    const { team, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout", "Analyst"] });
    const [scout, analyst] = subordinates as [Agent, Agent];
    const shared = await saveFact(team, scout, { content: "Perovskite cells passed 30% efficiency." });
    const second = await saveFact(team, analyst, { content: "Perovskite cells passed 30% efficiency" });
    await saveFact(team, scout, { content: "Only the scout saw this one." });
    await deleteAgent(database.db, scout.id);
    const items = await itemsOf(team);
    expect(
      items.map((item) => [
        item.id,
        item.agentId,
        item.sourceConversationId,
        item.sources.map((source) => source.agentName),
      ]),
    ).toEqual([[shared.result.id, analyst.id, second.conversation.id, ["Analyst"]]]);
  });

  it("a URL named in the fact fills its source when none is given (http and https only)", async () => {
    const { team, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    expect(
      (await saveFact(team, scout, { content: "Per https://example.com/tidal, tidal output rose 5%." })).result
        .sourceUrl,
    ).toBe("https://example.com/tidal");
    expect(
      (await saveFact(team, scout, { content: "Wave energy stalled (see ftp://example.com/wave)." })).result,
    ).not.toHaveProperty("sourceUrl");
    // The agent's own source wins over the one in the text.
    expect(
      (
        await saveFact(team, scout, {
          content: "Geothermal grew, says https://example.com/geo.",
          sourceUrl: "https://example.org/given",
        })
      ).result.sourceUrl,
    ).toBe("https://example.org/given");
    const urls = (await itemsOf(team)).map((item) => [item.content.slice(0, 10), item.sourceUrl]);
    expect(urls.sort()).toEqual([
      ["Geothermal", "https://example.org/given"],
      ["Per https:", "https://example.com/tidal"],
      ["Wave energ", null],
    ]);
  });

  it("extraction adds the agent as a source of what the team knows, at the message that said it", async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const known = await saveFact(team, subordinates[0]!, {
      content: "Offshore wind capacity doubled in Denmark.",
      confidence: 0.5,
    });
    const conversation = await getBackgroundConversation(database.db, lead.id);
    const [, said] = await appendMessages(database.db, conversation.id, [
      { role: "user", content: "Report from Scout: done." },
      { role: "assistant", content: "Offshore wind capacity in Denmark doubled, per https://example.com/wind." },
      { role: "assistant", content: "Nothing else to add." },
    ]);
    const answer = {
      items: [
        { type: "fact", content: "Offshore wind capacity doubled in Denmark", confidence: 0.8 },
        { type: "lesson", content: "Ask Scout for sources first, see https://example.com/how-to.", confidence: 0.6 },
      ],
    };
    const created = await extractKnowledgeFromConversation({
      db: database.db,
      model: {
        model: new MockLanguageModelV4({ doGenerate: async () => textReply(JSON.stringify(answer)) }),
        modelId: "mock",
        kind: "offline",
      },
      agentId: lead.id,
      conversationId: conversation.id,
      messages: await getAllMessages(database.db, conversation.id),
      maxInputChars: 10_000,
      embedding: offlineEmbeddingChoice(),
      jobs,
    });
    expect(created.map((item) => item.content)).toEqual([
      "Ask Scout for sources first, see https://example.com/how-to.",
    ]);
    expect(created[0]!.sourceUrl).toBe("https://example.com/how-to");
    const wind = (await itemsOf(team)).find((item) => item.id === known.result.id)!;
    expect(wind.confidence).toBe(0.8);
    expect(wind.sources.map((source) => [source.agentName, source.messageId])).toEqual([
      ["Scout", known.message.id],
      [lead.name, said!.id],
    ]);
  });
});

describe("the migration's backfill", () => {
  it("gives every item stored before sources existed one source: its agent, conversation, the message that saved it, and a URL its text names", async () => {
    const fresh = await createTestDatabase();
    try {
      const { db } = fresh;
      const { lead, subordinates } = await createTeamFixture(db, { subordinates: ["Scout"] });
      const scout = subordinates[0]!;
      const work = await getBackgroundConversation(db, scout.id);
      const chat = await getForegroundConversation(db, lead.id);
      const [saving] = await appendMessages(db, work.id, [
        {
          role: "assistant",
          content: "",
          toolCalls: [
            { toolCallId: "c1", toolName: "addKnowledgeItem", args: { type: "fact", content: "Panels got cheaper." } },
          ],
        },
      ]);
      // Rows as they were before the migration: items with no sources.
      const [saved, extracted, named, duplicate] = await db
        .insert(knowledgeItems)
        .values([
          {
            agentId: scout.id,
            type: "fact",
            content: "Panels got cheaper.",
            sourceConversationId: work.id,
            sourceUrl: "https://example.com/panels",
          },
          { agentId: lead.id, type: "lesson", content: "Brief in the morning.", sourceConversationId: chat.id },
          { agentId: scout.id, type: "fact", content: "Wind doubled (https://example.com/wind)." },
          { agentId: lead.id, type: "fact", content: "Panels got cheaper" },
        ])
        .returning();
      await db.execute(sql`delete from knowledge_sources`);

      // The migration's two backfill statements, as written in its file.
      const migration = readFileSync(path.join(process.cwd(), "drizzle/0017_knowledge_sources.sql"), "utf8");
      const statements = migration
        .split("--> statement-breakpoint")
        .filter((statement) => /^\s*(--.*\n)*\s*(UPDATE|INSERT)/.test(statement));
      expect(statements).toHaveLength(2);
      for (const statement of statements) await db.execute(sql.raw(statement));

      const sources = await db.select().from(knowledgeSources);
      expect(sources).toHaveLength(4);
      const of = (id: string) => sources.find((source) => source.knowledgeItemId === id)!;
      expect(of(saved!.id)).toMatchObject({
        agentId: scout.id,
        conversationId: work.id,
        messageId: saving!.id,
        url: "https://example.com/panels",
        createdAt: saved!.createdAt,
      });
      expect(of(extracted!.id)).toMatchObject({
        agentId: lead.id,
        conversationId: chat.id,
        messageId: null,
        url: null,
      });
      expect(of(named!.id)).toMatchObject({ agentId: scout.id, conversationId: null, url: "https://example.com/wind" });
      const [namedItem] = await db.select().from(knowledgeItems).where(eq(knowledgeItems.id, named!.id));
      expect(namedItem!.sourceUrl).toBe("https://example.com/wind");
      // Duplicates stored before stay two items; they merge as they are reported again.
      expect(of(duplicate!.id)).toMatchObject({ agentId: lead.id });
    } finally {
      await fresh.close();
    }
  });
});
