// The inbox that scales (filters by type and team, the archive, keyset paging that survives
// items created in the same microsecond) and knowledge the person can correct (PATCH), through
// the route handlers on a real Postgres.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInboxItem, createKnowledgeItem, createTask, getBackgroundConversation } from "@/lib/db/queries";
import { createApproval } from "@/lib/db/queries/approvals";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

async function loadRoutes() {
  return {
    inbox: await import("@/app/api/inbox/route"),
    inboxItem: await import("@/app/api/inbox/[itemId]/route"),
    knowledge: await import("@/app/api/knowledge/route"),
    knowledgeItem: await import("@/app/api/knowledge/[itemId]/route"),
  };
}

let database: TestDatabase;
let api: Awaited<ReturnType<typeof loadRoutes>>;

beforeAll(async () => {
  for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_MODEL", "TAVILY_API_KEY", "TAVILY_BASE_URL"])
    delete process.env[name];
  database = await createWebTestDatabase();
  api = await loadRoutes();
  const { webEngine } = await import("@/lib/http/server");
  await webEngine();
});

afterAll(async () => {
  await closeWebTestDatabase(database);
});

const ORIGIN = "http://localhost:3000";
const get = (path: string) => new Request(ORIGIN + path);
const patch = (path: string, body: unknown) =>
  new Request(ORIGIN + path, {
    method: "PATCH",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
const params = <T extends Record<string, string>>(values: T) => ({ params: Promise.resolve(values) });

type Page = {
  items: {
    id: string;
    title: string;
    teamId: string;
    type: string;
    archivedAt: string | null;
    readAt: string | null;
  }[];
  nextCursor: string | null;
};

async function inbox(query: string): Promise<Page> {
  const response = await api.inbox.GET(get(`/api/inbox${query}`));
  expect(response.status).toBe(200);
  return (await response.json()) as Page;
}

/** Every page of a view, following `nextCursor`. */
async function allPages(query: string, limit: number): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const page: Page = await inbox(`?${query}&limit=${limit}${cursor ? `&before=${cursor}` : ""}`);
    pages.push(page.items.map((item) => item.title));
    cursor = page.nextCursor;
  } while (cursor && pages.length < 50);
  return pages;
}

describe("the inbox", () => {
  it("pages by a (created_at, id) cursor: items of the same microsecond are neither skipped nor repeated", async () => {
    const { team, lead } = await createTeamFixture(database.db, { name: "Ties" });
    // Seven items at one instant, three a second earlier: a time-only cursor would lose or repeat some.
    const at = new Date("2026-01-02T03:04:05.123456Z");
    for (let index = 0; index < 10; index++) {
      const item = await createInboxItem(database.db, {
        teamId: team.id,
        agentId: lead.id,
        type: "briefing",
        title: `Tie ${index}`,
        summary: "s",
        content: "c",
      });
      await database.sql`update inbox_items set created_at = ${(index < 7 ? at : new Date(at.getTime() - 1000)).toISOString()}::timestamptz + interval '456 microseconds' where id = ${item.id}`;
    }
    const pages = await allPages(`teamId=${team.id}`, 3);
    expect(pages.map((page) => page.length)).toEqual([3, 3, 3, 1]);
    const titles = pages.flat();
    expect(new Set(titles).size).toBe(10);
    // The seven of the same instant come first, then the three older ones.
    expect(titles.slice(7).sort()).toEqual(["Tie 7", "Tie 8", "Tie 9"]);
  });

  it("filters by team and type; archiving moves an item to the archive (read), unarchiving brings it back", async () => {
    const one = await createTeamFixture(database.db, { name: "One", subordinates: ["Scout"] });
    const two = await createTeamFixture(database.db, { name: "Two" });
    const briefing = await createInboxItem(database.db, {
      teamId: one.team.id,
      agentId: one.lead.id,
      type: "briefing",
      title: "One's briefing",
      summary: "s",
      content: "c",
    });
    await createInboxItem(database.db, {
      teamId: one.team.id,
      agentId: one.lead.id,
      type: "alert",
      title: "One's alert",
      summary: "s",
      content: "c",
    });
    await createInboxItem(database.db, {
      teamId: two.team.id,
      agentId: two.lead.id,
      type: "briefing",
      title: "Two's briefing",
      summary: "s",
      content: "c",
    });

    expect((await inbox(`?teamId=${one.team.id}`)).items.map((item) => item.title)).toEqual([
      "One's alert",
      "One's briefing",
    ]);
    expect((await inbox(`?teamId=${one.team.id}&type=briefing`)).items.map((item) => item.title)).toEqual([
      "One's briefing",
    ]);
    expect((await inbox(`?teamId=${two.team.id}&type=alert`)).items).toEqual([]);

    const archived = await api.inboxItem.PATCH(
      patch(`/api/inbox/${briefing.id}`, { archived: true }),
      params({ itemId: briefing.id }),
    );
    expect(archived.status).toBe(200);
    const { item } = (await archived.json()) as { item: { archivedAt: string | null; readAt: string | null } };
    expect(item.archivedAt).not.toBeNull();
    expect(item.readAt).not.toBeNull();
    expect((await inbox(`?teamId=${one.team.id}`)).items.map((entry) => entry.title)).toEqual(["One's alert"]);
    expect((await inbox(`?teamId=${one.team.id}&archived=true`)).items.map((entry) => entry.title)).toEqual([
      "One's briefing",
    ]);

    const back = await api.inboxItem.PATCH(
      patch(`/api/inbox/${briefing.id}`, { archived: false }),
      params({ itemId: briefing.id }),
    );
    expect(((await back.json()) as { item: { archivedAt: string | null } }).item.archivedAt).toBeNull();
    expect((await inbox(`?teamId=${one.team.id}`)).items.map((entry) => entry.title)).toEqual([
      "One's alert",
      "One's briefing",
    ]);
    expect((await inbox(`?teamId=${one.team.id}&archived=true`)).items).toEqual([]);
  });

  it("refuses to archive an approval that still waits (409, saying what to do); once decided it archives", async () => {
    const { team, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const task = await createTask(database.db, { agentId: scout.id, source: "lead", title: "Find prices" });
    const approval = await createApproval(database.db, {
      teamId: team.id,
      agentId: scout.id,
      conversationId: (await getBackgroundConversation(database.db, scout.id)).id,
      taskId: task.id,
      toolCallId: "archive-call",
      toolName: "tavilySearch",
      input: { query: "prices" },
      reason: "",
    });
    const item = await createInboxItem(database.db, {
      teamId: team.id,
      agentId: scout.id,
      type: "approval",
      title: "May I search?",
      summary: "s",
      content: "c",
      approvalId: approval!.id,
    });
    const refused = await api.inboxItem.PATCH(
      patch(`/api/inbox/${item.id}`, { archived: true }),
      params({ itemId: item.id }),
    );
    expect(refused.status).toBe(409);
    const { error } = (await refused.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("conflict:inbox_item_waiting");
    expect(error.message).toMatch(/approve or deny the call first/);
    expect((await inbox(`?teamId=${team.id}`)).items.map((entry) => entry.id)).toEqual([item.id]);

    await database.sql`update approvals set status = 'denied', decided_at = now() where id = ${approval!.id}`;
    expect(
      (await api.inboxItem.PATCH(patch(`/api/inbox/${item.id}`, { archived: true }), params({ itemId: item.id })))
        .status,
    ).toBe(200);
  });
});

describe("knowledge", () => {
  it("PATCH edits content, type and source (http(s) only), stamps updatedAt; GET filters by team", async () => {
    const one = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const two = await createTeamFixture(database.db);
    const fact = await createKnowledgeItem(database.db, {
      agentId: one.subordinates[0]!.id,
      type: "fact",
      content: "Panels got cheaper.",
    });
    await createKnowledgeItem(database.db, { agentId: two.lead.id, type: "fact", content: "Wind got cheaper." });

    const response = await api.knowledgeItem.PATCH(
      patch(`/api/knowledge/${fact.id}`, {
        content: "  Panels got 20% cheaper in 2025. ",
        type: "lesson",
        sourceUrl: "https://example.com/panels",
      }),
      params({ itemId: fact.id }),
    );
    expect(response.status).toBe(200);
    const { item } = (await response.json()) as {
      item: { content: string; type: string; sourceUrl: string | null; updatedAt: string | null };
    };
    expect(item).toMatchObject({
      content: "Panels got 20% cheaper in 2025.",
      type: "lesson",
      sourceUrl: "https://example.com/panels",
    });
    expect(item.updatedAt).not.toBeNull();

    const cleared = await api.knowledgeItem.PATCH(
      patch(`/api/knowledge/${fact.id}`, { sourceUrl: null }),
      params({ itemId: fact.id }),
    );
    expect(((await cleared.json()) as { item: { sourceUrl: string | null } }).item.sourceUrl).toBeNull();

    for (const body of [
      {},
      { content: "" },
      { type: "rumour" },
      { sourceUrl: "javascript:alert(1)" },
      { sourceUrl: "ftp://example.com/x" },
      { sourceUrl: "example" },
      { confidence: 1 },
    ]) {
      const bad = await api.knowledgeItem.PATCH(patch(`/api/knowledge/${fact.id}`, body), params({ itemId: fact.id }));
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
    const missing = randomUUID();
    expect(
      (await api.knowledgeItem.PATCH(patch(`/api/knowledge/${missing}`, { content: "x" }), params({ itemId: missing })))
        .status,
    ).toBe(404);

    const listed = (await (await api.knowledge.GET(get(`/api/knowledge?teamId=${one.team.id}`))).json()) as {
      items: { id: string }[];
    };
    expect(listed.items.map((entry) => entry.id)).toEqual([fact.id]);
  });
});
