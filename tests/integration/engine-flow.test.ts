// The full flow with the offline model: task → lead delegates → subordinate searches,
// reads the first result's page, records and reports → lead woken → briefing → inbox item + foreground message.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assignTask } from "@/lib/domain/tasks";
import {
  getAllMessages,
  getBackgroundConversation,
  getForegroundConversation,
  getKnowledgeItemsBySourceConversation,
  listInboxItems,
  listTasksByAgent,
} from "@/lib/db/queries";
import { usage, workSessions } from "@/lib/db/schema";
import { startFakeTavily, type FakeTavily } from "../support/fake-tavily";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTestEngine, runUntilQuiet, type TestEngine } from "../support/engine";

let database: TestDatabase;
let engine: TestEngine;
let tavily: FakeTavily;

beforeAll(async () => {
  database = await createTestDatabase();
  tavily = await startFakeTavily(
    ({ query }) => ({
      results: [
        {
          title: `NVDA earnings beat estimates (${query})`,
          url: "https://example.com/nvda",
          content: "Revenue rose 94% year over year.",
        },
      ],
    }),
    {
      extract: ({ urls }) => ({
        pages: urls.map((url) => ({
          url,
          title: "NVDA earnings beat estimates",
          content: "Revenue rose 94% year over year; guidance was raised.",
        })),
      }),
    },
  );
  engine = await createTestEngine(database, {
    config: { search: { tavilyApiKey: "tvly-test", tavilyBaseUrl: tavily.url } },
  });
});
afterAll(async () => {
  await engine?.close();
  await tavily?.close();
  await database?.drop();
});

describe("the full flow (offline model)", () => {
  it("task → delegation → search, page read, knowledge, report → lead woken → briefing in inbox and chat", async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const task = await assignTask(database.db, engine.jobs, {
      agentId: lead.id,
      source: "user",
      title: "Research NVDA earnings",
    });

    const sessions = await runUntilQuiet(engine.deps);
    expect(sessions.map((s) => s.outcome.status).every((status) => status === "completed")).toBe(true);
    // lead (delegates) → Scout (researches, reports) → lead (briefs)
    expect(sessions.map((s) => s.agentId)).toEqual([lead.id, scout.id, lead.id]);

    const leadLog = await getAllMessages(database.db, (await getBackgroundConversation(database.db, lead.id)).id);
    const calls = leadLog.flatMap((m) => m.toolCalls?.map((c) => c.toolName) ?? []);
    expect(calls).toContain("delegateToAgent");
    expect(calls).toContain("createInboxItem");
    const [delegated] = await listTasksByAgent(database.db, scout.id);
    expect(
      leadLog.some(
        (m) => m.role === "user" && m.content.startsWith(`Subordinate Scout reports (task id: ${delegated!.id}): `),
      ),
    ).toBe(true);
    // every call has its result, linked by toolCallId, right after it in the chain
    for (const [i, message] of leadLog.entries()) {
      for (const call of message.toolCalls ?? []) {
        expect(leadLog.slice(i + 1).find((m) => m.role === "tool" && m.toolCallId === call.toolCallId)).toBeDefined();
      }
    }

    const scoutConversation = await getBackgroundConversation(database.db, scout.id);
    const scoutLog = await getAllMessages(database.db, scoutConversation.id);
    expect(scoutLog.flatMap((m) => m.toolCalls?.map((c) => c.toolName) ?? [])).toEqual([
      "tavilySearch",
      "readWebPage",
      "addKnowledgeItem",
      "reportToLead",
    ]);
    expect(tavily.requests[0]?.authorization).toBe("Bearer tvly-test");
    expect(tavily.extracts.map((request) => request.body.urls)).toEqual([["https://example.com/nvda"]]);
    const knowledge = await getKnowledgeItemsBySourceConversation(database.db, scoutConversation.id);
    expect(knowledge.map((k) => k.content).join()).toMatch(
      /NVDA earnings beat estimates: Revenue rose 94% .*\(source: https:\/\/example\.com\/nvda\)/,
    );

    const [scoutTask] = await listTasksByAgent(database.db, scout.id);
    expect(scoutTask).toMatchObject({ status: "completed", source: "lead", parentTaskId: task.id });
    expect(scoutTask!.result).toMatch(/Findings/);
    const [leadTask] = await listTasksByAgent(database.db, lead.id);
    expect(leadTask).toMatchObject({ id: task.id, status: "completed" });

    const [item] = await listInboxItems(database.db);
    expect(item).toMatchObject({ teamId: team.id, agentId: lead.id, type: "briefing" });
    const foreground = await getAllMessages(database.db, (await getForegroundConversation(database.db, lead.id)).id);
    expect(foreground.at(-1)).toMatchObject({ role: "assistant" });
    expect(foreground.at(-1)!.content).toContain(item!.title);

    const usageRows = await database.db.select().from(usage);
    expect(usageRows.length).toBeGreaterThanOrEqual(6);
    // The facts saved and the knowledge searched are embedded too (the offline embedding, at no cost).
    expect(new Set(usageRows.map((row) => row.purpose))).toEqual(
      new Set(["work", "extraction", "briefing", "embedding"]),
    );
    const sessionRows = await database.db.select().from(workSessions);
    expect(sessionRows.every((row) => row.status === "completed" && row.endedAt)).toBe(true);
  });
});
