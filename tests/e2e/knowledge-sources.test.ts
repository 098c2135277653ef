// One fact, many sources, in a real browser against the production build: three agents of a
// team reported the same fact, and /knowledge lists it once with every source (agents linked,
// pages, "Reported by 3 agents"); the agent filter finds it through any of them; a source's link
// opens that agent's work log at the very message, highlighted and in view — also when the
// message is far older than the log's newest page. Screenshots at 1440 and 375 px.
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordKnowledge } from "@/lib/domain/knowledge-items";
import { appendMessages } from "@/lib/db/queries/messages";
import { getBackgroundConversation, getOrCreateConversation } from "@/lib/db/queries/conversations";
import { getAgent } from "@/lib/db/queries/agents";
import { JobQueue } from "@/lib/jobs/job-queue";
import { embeddingOf, offlineEmbeddingChoice } from "@/lib/llm/embeddings";
import { offlineEmbedding } from "@/lib/llm/offline-model";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { buildIfStale, launchChromium, screenshotDir, settle, shoot, startApp, type AppServer } from "./app-server";

let database: TestDatabase;
let jobs: JobQueue;
let app: AppServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const agents = { lead: "", scout: "", analyst: "" };
let scoutMessage = "";
let chatMessage = "";

async function call<T>(pathname: string, body: unknown): Promise<T> {
  const response = await fetch(`${app.url}${pathname}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`POST ${pathname} → ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

/** An agent's addKnowledgeItem call in its work log, and the report it made (as the tool records it). */
async function report(
  agentId: string,
  content: string,
  options: { confidence: number; sourceUrl?: string; after?: number },
) {
  const agent = (await getAgent(database.db, agentId))!;
  const conversation = await getBackgroundConversation(database.db, agentId);
  const toolCallId = `call-${crypto.randomUUID()}`;
  const [message] = await appendMessages(database.db, conversation.id, [
    { role: "user", content: "Task from the person: Research solar panel prices" },
    {
      role: "assistant",
      content: "",
      toolCalls: [
        { toolCallId, toolName: "addKnowledgeItem", args: { type: "fact", content, confidence: options.confidence } },
      ],
    },
  ]).then((stored) => stored.slice(1));
  await recordKnowledge(database.db, jobs, {
    teamId: agent.teamId,
    agentId,
    type: "fact",
    content,
    confidence: options.confidence,
    conversationId: conversation.id,
    embedding: embeddingOf(offlineEmbeddingChoice(), offlineEmbedding(content)),
    messageId: message!.id,
    sourceUrl: options.sourceUrl,
  });
  await appendMessages(database.db, conversation.id, [
    { role: "tool", toolCallId, content: JSON.stringify({ saved: true }) },
  ]);
  // The agent worked on: its log's newest page no longer reaches this message.
  const later = Array.from({ length: options.after ?? 0 }, (_, index) => ({
    role: index % 2 ? ("assistant" as const) : ("user" as const),
    content: `Later step ${index + 1}: checked another installer's price list.`,
  }));
  if (later.length > 0) await appendMessages(database.db, conversation.id, later);
  return message!.id;
}

/** A fact a subordinate saved from its chat with the person, and the chat going on long after it. */
async function reportInChat(agentId: string, content: string, after: number) {
  const agent = (await getAgent(database.db, agentId))!;
  const chat = await getOrCreateConversation(database.db, agentId, "foreground");
  const toolCallId = `call-${crypto.randomUUID()}`;
  const [, message] = await appendMessages(database.db, chat.id, [
    { role: "user", content: "How many rooftop installs were there last year?" },
    {
      role: "assistant",
      content: "",
      toolCalls: [{ toolCallId, toolName: "addKnowledgeItem", args: { type: "fact", content, confidence: 0.8 } }],
    },
    { role: "tool", toolCallId, content: JSON.stringify({ saved: true }) },
    { role: "assistant", content: "Rooftop installs doubled; I saved that." },
  ]);
  await recordKnowledge(database.db, jobs, {
    teamId: agent.teamId,
    agentId,
    type: "fact",
    content,
    confidence: 0.8,
    conversationId: chat.id,
    messageId: message!.id,
    embedding: embeddingOf(offlineEmbeddingChoice(), offlineEmbedding(content)),
  });
  const later = Array.from({ length: after }, (_, index) => ({
    role: index % 2 ? ("assistant" as const) : ("user" as const),
    content: `Later chat ${index + 1}: another question about prices.`,
  }));
  await appendMessages(database.db, chat.id, later);
  return message!.id;
}

describe("knowledge: one fact, many sources", () => {
  beforeAll(async () => {
    buildIfStale();
    database = await createTestDatabase();
    jobs = await JobQueue.start(database.url, "web", { quiet: true });
    app = await startApp({ DATABASE_URL: database.url });
    const team = await call<{ team: { id: string }; lead: { id: string } }>("/api/teams", {
      name: "Solar desk",
      mission: "Track solar prices.",
      leadName: "Mara",
    });
    agents.lead = team.lead.id;
    for (const [key, name] of [
      ["scout", "Scout"],
      ["analyst", "Analyst"],
    ] as const) {
      agents[key] = (
        await call<{ agent: { id: string } }>(`/api/teams/${team.team.id}/agents`, {
          name,
          instructions: "Researches.",
          parentAgentId: team.lead.id,
        })
      ).agent.id;
    }
    scoutMessage = await report(agents.scout, "Solar panel prices fell 20% in 2025.", { confidence: 0.6, after: 140 });
    await report(agents.analyst, "solar panel prices fell 20 % in 2025", {
      confidence: 0.9,
      sourceUrl: "https://example.org/prices",
    });
    await report(agents.lead, "Solar panel prices fell 20% in 2025 (https://example.com/solar-report).", {
      confidence: 0.7,
    });
    await report(agents.scout, "Wind turbines keep getting larger.", { confidence: 0.7 });
    chatMessage = await reportInChat(agents.analyst, "Rooftop solar installs doubled in 2025.", 130);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
  }, 300_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await app?.stop();
    await jobs?.stop({ graceful: false, timeoutMs: 1000 });
    await database?.close();
  });

  it("lists the fact once with its three sources", async () => {
    await page.goto(`${app.url}/knowledge`);
    await settle(page);
    const rows = page.locator(".knowledge-row", { hasText: "Solar panel prices fell" });
    expect(await rows.count()).toBe(1);
    const row = rows.first();
    await row.getByText("Reported by 3 agents").waitFor();
    await row.getByText("90% sure").waitFor();
    const sources = row.getByRole("list", { name: /^Sources of “Solar panel prices/ });
    expect(await sources.getByRole("listitem").allInnerTexts()).toEqual([
      expect.stringMatching(/^Scout · Source message · /),
      expect.stringMatching(/^Analyst · Source message · /),
      expect.stringMatching(/^Mara · Source message · example\.com · /),
    ]);
    expect(await sources.getByRole("link", { name: "Analyst", exact: true }).getAttribute("href")).toBe(
      `/agents/${agents.analyst}`,
    );
    // The item's page is the first a report gave; a report's other page is shown beside it.
    expect(await row.locator(".knowledge-source").getAttribute("href")).toBe("https://example.org/prices");
    expect(await sources.getByRole("link", { name: "example.com" }).getAttribute("href")).toBe(
      "https://example.com/solar-report",
    );
    // The other fact, from one agent: its name and its message, as before.
    const wind = page.locator(".knowledge-row", { hasText: "Wind turbines" });
    await wind.getByRole("link", { name: "Scout", exact: true }).waitFor();
    await wind.getByRole("link", { name: "Source message" }).waitFor();
    await shoot(page, "knowledge-sources");

    // Filtered by any of its reporters, the fact is there.
    await page.goto(`${app.url}/knowledge?agentId=${agents.analyst}`);
    await settle(page);
    expect(await page.locator(".knowledge-row").allInnerTexts()).toEqual([
      expect.stringContaining("Rooftop solar installs doubled in 2025."),
      expect.stringContaining("Solar panel prices fell 20% in 2025."),
    ]);
  }, 60_000);

  it("says why each result of a search was found: its words, its meaning, or both", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${app.url}/knowledge?q=${encodeURIComponent("solar panel prices")}`);
    await settle(page);
    const found = await page.locator(".knowledge-row").allInnerTexts();
    expect(found).toEqual([
      expect.stringMatching(/Solar panel prices fell 20% in 2025\.[\s\S]*Matched words, similar meaning/),
      // Full text wants every word; this one shares only "solar", and is found by its meaning.
      expect.stringMatching(/Rooftop solar installs doubled in 2025\.[\s\S]*Similar meaning/),
    ]);
    expect(found[1]).not.toContain("Matched words");
    await page.getByText("2 items match").waitFor();
    await shoot(page, "knowledge-search-why");
  }, 60_000);

  for (const width of [1440, 375]) {
    it(`opens the work log at the source's message, highlighted, though it is older than the newest page (${width} px)`, async () => {
      await page.setViewportSize({ width, height: width === 1440 ? 900 : 812 });
      await page.goto(`${app.url}/knowledge`);
      await settle(page);
      await page
        .locator(".knowledge-row", { hasText: "Solar panel prices fell" })
        .getByRole("link", { name: "Source message of Scout" })
        .click();
      await page.waitForURL(`**/agents/${agents.scout}?message=${scoutMessage}#m-${scoutMessage}`);
      await settle(page);
      const linked = page.locator(".log-linked");
      await linked.waitFor();
      expect(await page.locator(".log-linked").count()).toBe(1);
      expect(await linked.getAttribute("id")).toBe(`m-${scoutMessage}`);
      await linked.getByText("Linked message").waitFor();
      await linked.getByText(/Saved fact/).waitFor();
      // In view, not at the top of the log nor at its end.
      await expect
        .poll(async () =>
          linked.evaluate((element) => {
            const box = element.getBoundingClientRect();
            return box.top >= 0 && box.top < window.innerHeight;
          }),
        )
        .toBe(true);
      // Visibly marked: a tinted background, unlike its neighbours.
      const [own, neighbour] = await Promise.all([
        linked.evaluate((element) => getComputedStyle(element).backgroundColor),
        page
          .locator(".log-entry:not(.log-linked)")
          .first()
          .evaluate((element) => getComputedStyle(element).backgroundColor),
      ]);
      expect(own).not.toBe(neighbour);
      // The newest entries are there too, and the newest page alone would not have held the message.
      await page.getByText("Later step 140:").waitFor({ state: "attached" });
      await page.screenshot({ path: path.join(screenshotDir, `knowledge-source-message-view-${width}.png`) });
      if (width === 1440) await shoot(page, "knowledge-source-message");
    }, 60_000);
  }

  it("opens the chat at a source saved from the chat, highlighted, though it is older than the chat's newest page", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${app.url}/knowledge`);
    await settle(page);
    await page
      .locator(".knowledge-row", { hasText: "Rooftop solar installs doubled" })
      .getByRole("link", { name: "Source chat" })
      .click();
    await page.waitForURL(`**/agents/${agents.analyst}/chat?message=${chatMessage}`);
    await settle(page);
    const linked = page.locator(".message-linked");
    await linked.waitFor();
    expect(await linked.count()).toBe(1);
    await linked.getByText("Linked message").waitFor();
    await linked.getByText(/Saved fact/).waitFor();
    await expect
      .poll(async () =>
        linked.evaluate((element) => {
          const box = element.getBoundingClientRect();
          return box.top >= 0 && box.top < window.innerHeight;
        }),
      )
      .toBe(true);
    // Everything after it is there, to the newest.
    await page.getByText("Later chat 130:").waitFor({ state: "attached" });
    await shoot(page, "knowledge-source-chat");
  }, 60_000);
});
