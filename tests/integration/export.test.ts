// A team's record (GET /api/teams/:teamId/export) and its digest (GET /api/teams/:teamId/digest),
// through the route handlers on a real Postgres.
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  appendMessages,
  createInboxItem,
  addKnowledgeSource,
  createKnowledgeItem,
  createSubordinate,
  createTask,
  deleteAgent,
  getBackgroundConversation,
  getForegroundConversation,
  recordUsage,
} from "@/lib/db/queries";
import { createQuestion, answerQuestion } from "@/lib/db/queries/questions";
import {
  inboxItems,
  knowledgeItems,
  mcpServers,
  notificationChannels,
  questions,
  tasks,
  usage,
  webhookSecrets,
} from "@/lib/db/schema";
import { MESSAGE_PAGE_SIZE, teamRecordStream } from "@/lib/export/team-record";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

async function loadRoutes() {
  return {
    record: await import("@/app/api/teams/[teamId]/export/route"),
    digest: await import("@/app/api/teams/[teamId]/digest/route"),
  };
}

let database: TestDatabase;
let api: Awaited<ReturnType<typeof loadRoutes>>;

beforeAll(async () => {
  database = await createWebTestDatabase();
  api = await loadRoutes();
});

afterAll(async () => {
  await closeWebTestDatabase(database);
});

const params = (teamId: string) => ({ params: Promise.resolve({ teamId }) });
const get = (path: string) => new Request(`http://localhost:3000${path}`);
const at = (iso: string) => new Date(iso);

const SECRETS = [
  "Bearer mcp-header-secret",
  "env-secret-value",
  "whsec_channel-secret",
  "whsec_team-webhook-secret",
  // Credentials that ride in a URL or an argument: a Slack webhook's path, a token flag.
  "SLACKURLSECRET",
  "--token=ARGSECRET",
  "MCPQUERYSECRET",
];

/**
 * A small team with one of everything, several of it dated 2026-03-02 and 2026-03-04, and
 * secrets in each place a secret lives.
 */
async function smallTeam() {
  const db = database.db;
  const { team, lead, subordinates } = await createTeamFixture(db, {
    name: "Ørsted Watch / Q2",
    subordinates: ["Scout"],
  });
  const scout = subordinates[0]!;
  const work = await getBackgroundConversation(db, scout.id);
  const chat = await getForegroundConversation(db, lead.id);
  await appendMessages(db, work.id, [
    { role: "user", content: "Task from your lead: find the launch date" },
    {
      role: "assistant",
      content: "",
      toolCalls: [{ toolCallId: "c1", toolName: "tavilySearch", args: { query: "launch date" } }],
    },
    { role: "tool", content: "Launch: May 4", toolCallId: "c1" },
    { role: "assistant", content: "The launch moved to May 4." },
  ]);
  await appendMessages(db, chat.id, [
    { role: "user", content: "How is it going?" },
    { role: "assistant", content: "Scout found the launch date." },
  ]);
  const done = await createTask(db, { agentId: scout.id, source: "lead", title: "Find the launch date" });
  await db
    .update(tasks)
    .set({
      status: "completed",
      result: "The launch moved to May 4.\n\n# Not a heading of the digest",
      completedAt: at("2026-03-02T10:00:00Z"),
    })
    .where(eq(tasks.id, done.id));
  const broken = await createTask(db, { agentId: scout.id, source: "lead", title: "Read the filing" });
  await db
    .update(tasks)
    .set({ status: "failed", result: "The filing site did not answer.", completedAt: at("2026-03-04T09:00:00Z") })
    .where(eq(tasks.id, broken.id));
  const briefing = await createInboxItem(db, {
    teamId: team.id,
    agentId: lead.id,
    type: "briefing",
    title: "Launch moved",
    summary: "May 4",
    content: "The launch moved to **May 4**.",
  });
  const alert = await createInboxItem(db, {
    teamId: team.id,
    agentId: scout.id,
    type: "alert",
    title: "Task failed: Read the filing",
    summary: "The filing site did not answer.",
    content: "…",
  });
  await db
    .update(inboxItems)
    .set({ createdAt: at("2026-03-02T11:00:00Z") })
    .where(eq(inboxItems.id, briefing.id));
  await db
    .update(inboxItems)
    .set({ createdAt: at("2026-03-04T09:01:00Z") })
    .where(eq(inboxItems.id, alert.id));
  const question = await createQuestion(db, {
    agentId: lead.id,
    taskId: null,
    recipientAgentId: null,
    question: "Should we track the competitor too?",
  });
  await answerQuestion(db, question.id, "Yes, weekly.");
  await db
    .update(questions)
    .set({ createdAt: at("2026-03-02T12:00:00Z"), answeredAt: at("2026-03-02T13:00:00Z") })
    .where(eq(questions.id, question.id));
  const fact = await createKnowledgeItem(db, {
    agentId: scout.id,
    type: "fact",
    content: "Launches slip in spring.",
    confidence: 0.8,
    sourceConversationId: work.id,
  });
  await db
    .update(knowledgeItems)
    .set({ createdAt: at("2026-03-02T14:00:00Z") })
    .where(eq(knowledgeItems.id, fact.id));
  // The lead reported it too, in its chat, with a page: one item, two sources.
  await addKnowledgeSource(db, fact.id, {
    agentId: lead.id,
    conversationId: chat.id,
    url: "https://example.com/launches",
  });
  const spent = await recordUsage(db, {
    agentId: scout.id,
    conversationId: work.id,
    purpose: "work",
    model: "gpt-test",
    inputTokens: 1200,
    outputTokens: 300,
  });
  await db
    .update(usage)
    .set({ createdAt: at("2026-03-02T10:00:00Z") })
    .where(eq(usage.id, spent!.id));
  await db.insert(mcpServers).values({
    teamId: team.id,
    name: "tools",
    transport: "http",
    url: "https://mcp.example/mcp?key=MCPQUERYSECRET",
    headers: { Authorization: SECRETS[0]! },
  });
  await db.insert(mcpServers).values({
    teamId: team.id,
    name: "local",
    transport: "stdio",
    command: "node",
    args: ["server.js", "--token=ARGSECRET"],
    env: { API_KEY: SECRETS[1]! },
  });
  await db.insert(notificationChannels).values({
    teamId: team.id,
    type: "webhook",
    name: "Slack",
    url: "https://hooks.slack.com/services/T000/B000/SLACKURLSECRET",
    secret: SECRETS[2]!,
    kinds: ["briefing"],
  });
  await db.insert(webhookSecrets).values({ teamId: team.id, secret: SECRETS[3]! });
  return { team, lead, scout, work, chat, done, broken, question, fact };
}

type Record = {
  format: string;
  version: number;
  team: { id: string; name: string };
  agents: { id: string; name: string; role: string }[];
  tasks: { id: string; status: string; result: string | null }[];
  inbox: { id: string; type: string }[];
  questions: { id: string; answer: string | null }[];
  knowledge: { id: string; content: string }[];
  usage: { agentId: string; inputTokens: number }[];
  mcpServers: { name: string; headerNames: string[]; envNames: string[] }[];
  notificationChannels: { name: string }[];
  conversations: {
    id: string;
    agentId: string;
    mode: string;
    messages: { id: string; role: string; content: string; previousMessageId: string | null }[];
  }[];
};

describe("a team's record (JSON)", () => {
  it("downloads everything the team has, messages in chain order, and no secret", async () => {
    const world = await smallTeam();
    const other = await createTeamFixture(database.db, { name: "Someone else" });
    await appendMessages(database.db, (await getBackgroundConversation(database.db, other.lead.id)).id, [
      { role: "user", content: "another team's work" },
    ]);

    const response = await api.record.GET(get(`/api/teams/${world.team.id}/export`), params(world.team.id));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(response.headers.get("content-disposition")).toMatch(
      /^attachment; filename="cadre-orsted-watch-q2-\d{4}-\d{2}-\d{2}\.json"$/,
    );
    const text = await response.text();
    const record = JSON.parse(text) as Record;

    expect(record).toMatchObject({
      format: "cadre-team-record",
      version: 1,
      team: { id: world.team.id, name: "Ørsted Watch / Q2" },
    });
    expect(record.agents.map((agent) => [agent.name, agent.role])).toEqual([
      ["Ørsted Watch / Q2 Lead", "lead"],
      ["Scout", "subordinate"],
    ]);
    expect(record.tasks.map((task) => [task.id, task.status])).toEqual([
      [world.done.id, "completed"],
      [world.broken.id, "failed"],
    ]);
    expect(record.inbox.map((item) => item.type).sort()).toEqual(["alert", "briefing"]);
    expect(record.questions).toMatchObject([{ id: world.question.id, answer: "Yes, weekly." }]);
    expect(record.knowledge).toMatchObject([
      {
        id: world.fact.id,
        content: "Launches slip in spring.",
        sources: [
          { agentId: world.scout.id, agentName: "Scout", conversationId: world.work.id, url: null },
          {
            agentId: world.lead.id,
            conversationId: world.chat.id,
            conversationMode: "foreground",
            url: "https://example.com/launches",
          },
        ],
      },
    ]);
    expect(record.usage).toMatchObject([{ agentId: world.scout.id, inputTokens: 1200 }]);
    expect(record.mcpServers).toMatchObject([
      { name: "local", headerNames: [], envNames: ["API_KEY"] },
      { name: "tools", headerNames: ["Authorization"], envNames: [] },
    ]);
    expect(record.notificationChannels).toMatchObject([{ name: "Slack" }]);

    const work = record.conversations.find((conversation) => conversation.id === world.work.id)!;
    expect(work).toMatchObject({ agentId: world.scout.id, mode: "background" });
    expect(work.messages.map((message) => message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(work.messages.at(-1)!.content).toBe("The launch moved to May 4.");
    const chat = record.conversations.find((conversation) => conversation.id === world.chat.id)!;
    expect(chat.messages.map((message) => message.content)).toEqual([
      "How is it going?",
      "Scout found the launch date.",
    ]);
    expect(text).not.toContain("another team's work");
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    expect(text).not.toContain('"secret"');
  });

  it("streams a long history page by page, in chain order", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    const work = await getBackgroundConversation(database.db, lead.id);
    const total = 3_000;
    for (let start = 0; start < total; start += 500) {
      await appendMessages(
        database.db,
        work.id,
        Array.from({ length: 500 }, (_, i) => ({ role: "user" as const, content: `message ${start + i}` })),
      );
    }
    // Read as a client reads the response: chunk by chunk.
    const reader = teamRecordStream(database.db, team).getReader();
    const decoder = new TextDecoder();
    let text = "";
    let chunks = 0;
    let largestChunkMessages = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks += 1;
      const chunk = decoder.decode(value, { stream: true });
      largestChunkMessages = Math.max(largestChunkMessages, chunk.split('"role":').length - 1);
      text += chunk;
    }
    // No chunk carries more than one page of messages: they were never all read at once.
    expect(largestChunkMessages).toBe(MESSAGE_PAGE_SIZE);
    expect(chunks).toBeGreaterThan(total / MESSAGE_PAGE_SIZE);
    const record = JSON.parse(text) as Record;
    const messages = record.conversations.find((conversation) => conversation.id === work.id)!.messages;
    expect(messages).toHaveLength(total);
    expect(messages.map((message) => message.content)).toEqual(Array.from({ length: total }, (_, i) => `message ${i}`));
    for (const [i, message] of messages.entries())
      expect(message.previousMessageId).toBe(i === 0 ? null : messages[i - 1]!.id);
  });

  it("answers 404 for a team that does not exist", async () => {
    for (const teamId of [randomUUID(), "not-a-uuid"]) {
      const response = await api.record.GET(get(`/api/teams/${teamId}/export`), params(teamId));
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ error: { code: "not_found:team" } });
    }
  });
});

describe("a team's digest (Markdown)", () => {
  it("tells each day's tasks with results, briefings, questions and answers, alerts, knowledge and usage", async () => {
    const world = await smallTeam();
    // What a removed agent spent stays in the team's usage, under one name.
    const digger = await createSubordinate(database.db, world.team.id, { name: "Digger", instructions: "Digs." });
    const spent = await recordUsage(database.db, {
      agentId: digger.id,
      purpose: "work",
      model: "gpt-test",
      inputTokens: 500,
      outputTokens: 50,
    });
    await database.db
      .update(usage)
      .set({ createdAt: at("2026-03-02T11:00:00Z") })
      .where(eq(usage.id, spent!.id));
    await deleteAgent(database.db, digger.id);
    const response = await api.digest.GET(
      get(`/api/teams/${world.team.id}/digest?from=2026-03-01&to=2026-03-05`),
      params(world.team.id),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
    expect(response.headers.get("content-disposition")).toBe(
      'attachment; filename="cadre-orsted-watch-q2-digest-2026-03-01-to-2026-03-05.md"',
    );
    const markdown = await response.text();
    const headings = markdown.split("\n").filter((line) => line.startsWith("#"));
    expect(headings).toEqual([
      "# Ørsted Watch / Q2: digest for 2026-03-01 to 2026-03-05",
      "## In short",
      "## Monday 2 March 2026 (2026-03-02)",
      "### Tasks finished",
      "### Briefings",
      "#### Launch moved",
      "### Questions and answers",
      "### Knowledge learned",
      "### Usage",
      "## Wednesday 4 March 2026 (2026-03-04)",
      "### Tasks failed",
      "### Alerts",
    ]);
    // What agents wrote is quoted: its own "# heading" stays inside the quote.
    expect(markdown).toContain(
      "- **Find the launch date** — Scout\n\n  > The launch moved to May 4.\n  >\n  > # Not a heading of the digest",
    );
    expect(markdown).toContain(
      "*From Ørsted Watch / Q2 Lead*\n\n> The launch moved to **May 4**.\n\n### Questions and answers",
    );
    expect(markdown).toContain("- **Ørsted Watch / Q2 Lead** asked you:\n\n  > Should we track the competitor too?");
    expect(markdown).toContain("> Yes, weekly.");
    expect(markdown).toContain("- **Task failed: Read the filing** — The filing site did not answer.");
    expect(markdown).toContain(
      "- *fact* (Scout, Ørsted Watch / Q2 Lead, confidence 0.80): Launches slip in spring. Sources: <https://example.com/launches>",
    );
    expect(markdown).toContain("| Scout | 1 | 1,200 | 300 |");
    expect(markdown).toContain("| Removed agents | 1 | 500 | 50 |");
    expect(markdown).toContain("- Tasks finished: 1; failed: 1");
    expect(markdown).toContain("*3 days with nothing to report are left out.*");
  });

  it("covers the last 7 days by default, and says when nothing happened", async () => {
    const { team } = await createTeamFixture(database.db, { name: "Quiet" });
    const response = await api.digest.GET(get(`/api/teams/${team.id}/digest`), params(team.id));
    expect(response.status).toBe(200);
    const today = new Date().toISOString().slice(0, 10);
    const weekAgo = new Date(Date.now() - 6 * 86_400_000).toISOString().slice(0, 10);
    expect(response.headers.get("content-disposition")).toBe(
      `attachment; filename="cadre-quiet-digest-${weekAgo}-to-${today}.md"`,
    );
    expect(await response.text()).toContain("Nothing happened in these days.");
  });

  it("refuses dates that are not dates, a range backwards or over 366 days (400), and an unknown team (404)", async () => {
    const { team } = await createTeamFixture(database.db);
    const cases: [string, number][] = [
      ["from=2026-13-01&to=2026-12-01", 400],
      ["from=2026-02-30", 400],
      ["from=yesterday", 400],
      ["from=2026-3-1", 400],
      ["from=2026-03-05&to=2026-03-01", 400],
      ["from=2025-01-01&to=2026-01-02", 400],
      ["from=2025-01-01&to=2026-01-01", 200],
      ["from=0001-01-01&to=9999-12-31", 400],
      // The last days Postgres could not end a range at: a 400, not a failed query.
      ["to=9999-12-31", 400],
      ["from=9999-12-01&to=9999-12-31", 400],
      ["days=7", 400],
    ];
    for (const [query, status] of cases) {
      const response = await api.digest.GET(get(`/api/teams/${team.id}/digest?${query}`), params(team.id));
      expect({ query, status: response.status }).toEqual({ query, status });
      if (status === 400) expect(await response.json()).toMatchObject({ error: { code: "bad_request:validation" } });
    }
    const unknown = randomUUID();
    expect((await api.digest.GET(get(`/api/teams/${unknown}/digest`), params(unknown))).status).toBe(404);
  });
});
