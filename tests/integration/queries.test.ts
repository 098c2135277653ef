import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  countInboxNeedingAttention,
  createInboxItem,
  createKnowledgeItem,
  createSubordinate,
  createTask,
  deleteAgent,
  deleteKnowledgeItem,
  getKnowledgeItemsBySourceConversation,
  getBackgroundConversation,
  getUsageTotals,
  listInboxItems,
  listTasksByAgent,
  listTeamAgents,
  markAllInboxItemsRead,
  recordUsage,
  searchKnowledgeItems,
  setInboxItemRead,
  setTaskStatus,
} from "@/lib/db/queries";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

describe("teams and agents", () => {
  it("a team is created with its lead; subordinates hang under the lead", async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout", "Analyst"] });
    const agents = await listTeamAgents(database.db, team.id);
    expect(agents.map((a) => a.role)).toEqual(["lead", "subordinate", "subordinate"]);
    expect(subordinates.every((s) => s.parentAgentId === lead.id)).toBe(true);
  });

  it("a parent from another team is refused", async () => {
    const one = await createTeamFixture(database.db);
    const other = await createTeamFixture(database.db);
    await expect(
      createSubordinate(database.db, one.team.id, { name: "Spy", instructions: "", parentAgentId: other.lead.id }),
    ).rejects.toMatchObject({ code: "bad_request:parent_agent" });
  });

  it("a lead cannot be deleted on its own", async () => {
    const { lead } = await createTeamFixture(database.db);
    await expect(deleteAgent(database.db, lead.id)).rejects.toMatchObject({ code: "conflict:agent_is_lead" });
  });
});

describe("tasks", () => {
  it("move through their states and stay final once final", async () => {
    const { lead } = await createTeamFixture(database.db);
    const first = await createTask(database.db, { agentId: lead.id, source: "user", title: "First" });
    const second = await createTask(database.db, { agentId: lead.id, source: "user", title: "Second" });
    expect((await listTasksByAgent(database.db, lead.id, ["pending"])).map((t) => t.title)).toEqual([
      "Second",
      "First",
    ]);
    const started = await setTaskStatus(database.db, first.id, "in_progress");
    expect(started?.startedAt).toBeInstanceOf(Date);
    const done = await setTaskStatus(database.db, first.id, "completed", { result: "All done" });
    expect(done).toMatchObject({ status: "completed", result: "All done" });
    expect(done?.completedAt).toBeInstanceOf(Date);
    expect(await setTaskStatus(database.db, first.id, "failed")).toBeNull();
    expect((await listTasksByAgent(database.db, lead.id, ["pending"])).map((t) => t.id)).toEqual([second.id]);
  });
});

describe("inbox", () => {
  it("counts unread items and marks them read", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const before = (await countInboxNeedingAttention(database.db)).unread;
    const item = await createInboxItem(database.db, {
      teamId: team.id,
      agentId: lead.id,
      type: "briefing",
      title: "T",
      summary: "S",
      content: "C",
    });
    await createInboxItem(database.db, {
      teamId: team.id,
      agentId: lead.id,
      type: "alert",
      title: "T2",
      summary: "S",
      content: "C",
    });
    expect((await countInboxNeedingAttention(database.db)).unread).toBe(before + 2);
    expect((await listInboxItems(database.db))[0]!.title).toBe("T2");
    const read = await setInboxItemRead(database.db, item.id, true);
    expect(read.readAt).toBeInstanceOf(Date);
    expect((await countInboxNeedingAttention(database.db)).unread).toBe(before + 1);
    await markAllInboxItemsRead(database.db);
    expect((await countInboxNeedingAttention(database.db)).unread).toBe(0);
  });
});

describe("knowledge items", () => {
  it("are found by full-text search, filtered by agent, and linked to their source conversation", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const conversation = await getBackgroundConversation(database.db, subordinates[0]!.id);
    const item = await createKnowledgeItem(database.db, {
      agentId: subordinates[0]!.id,
      type: "fact",
      content: "NVIDIA reports quarterly earnings on Wednesday",
      sourceConversationId: conversation.id,
    });
    await createKnowledgeItem(database.db, {
      agentId: lead.id,
      type: "lesson",
      content: "Earnings calls move the stock",
    });
    expect((await searchKnowledgeItems(database.db, { q: "earnings" })).length).toBeGreaterThanOrEqual(2);
    expect(
      (await searchKnowledgeItems(database.db, { q: "nvidia reporting", agentId: subordinates[0]!.id })).map(
        (i) => i.id,
      ),
    ).toEqual([item.id]);
    expect(await searchKnowledgeItems(database.db, { q: "nvidia", agentId: lead.id })).toEqual([]);
    expect((await getKnowledgeItemsBySourceConversation(database.db, conversation.id)).map((i) => i.id)).toEqual([
      item.id,
    ]);
    expect(await deleteKnowledgeItem(database.db, item.id)).toBe(true);
    expect(await deleteKnowledgeItem(database.db, item.id)).toBe(false);
  });
});

describe("usage", () => {
  it("sums an agent's calls", async () => {
    const { lead } = await createTeamFixture(database.db);
    await recordUsage(database.db, {
      agentId: lead.id,
      purpose: "work",
      model: "m",
      inputTokens: 100,
      outputTokens: 10,
      durationMs: 5,
    });
    await recordUsage(database.db, {
      agentId: lead.id,
      purpose: "chat",
      model: "m",
      inputTokens: 50,
      outputTokens: 5,
      cachedTokens: 20,
    });
    expect(await getUsageTotals(database.db, lead.id)).toEqual({
      calls: 2,
      inputTokens: 150,
      outputTokens: 15,
      cachedTokens: 20,
      durationMs: 5,
    });
  });
});
