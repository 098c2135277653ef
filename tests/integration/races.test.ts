// Races with deletion (issue 10, items 1 and 5): every write route, fired at the same moment as
// the deletes of the team, agent and task it writes under. A write whose parent vanished is a
// 4xx (usually 404) or, for a chat already streaming, a stream that ends; never a 5xx, never a
// stream that hangs, never an unhandled error in the log. The route files on disk are listed, so
// a new write route must join the table (or say why it has no parent to lose).
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { MockLanguageModelV4 } from "ai/test";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { streamChatReply } from "@/lib/engine/chat";
import { createInboxItem, createKnowledgeItem, createTask, getBackgroundConversation, getTeam } from "@/lib/db/queries";
import { createApproval } from "@/lib/db/queries/approvals";
import { tasks } from "@/lib/db/schema";
import { createQuestion } from "@/lib/db/queries/questions";
import { createMcpServer } from "@/lib/db/queries/mcp-servers";
import type { ModelChoice } from "@/lib/llm/provider";
import { insertNotificationChannel } from "@/lib/db/queries/notification-channels";
import { setWebhookSecret } from "@/lib/db/queries/webhooks";
import { signedWebhookHeaders } from "@/lib/http/webhook-signature";
import { signedSlackHeaders } from "@/lib/http/slack-signature";
import { actionLinkKey, signActionLink } from "@/lib/auth/action-links";
import { signInThrottle } from "@/lib/auth/sign-in-throttle";
import { createTeamFixture } from "../support/fixtures";
import type { TestDatabase } from "../support/database";
import { closeWebTestDatabase, createWebTestDatabase } from "../support/web";

const ORIGIN = "http://localhost:3000";
const ROUNDS = 30;
const SLACK_SECRET = vi.hoisted(() => {
  // Before any module parses the environment: Slack's buttons are on in this file.
  process.env.SLACK_SIGNING_SECRET = "race-slack-signing-secret";
  return "race-slack-signing-secret";
});

async function loadRoutes() {
  return {
    teams: await import("@/app/api/teams/route"),
    team: await import("@/app/api/teams/[teamId]/route"),
    teamAgents: await import("@/app/api/teams/[teamId]/agents/route"),
    webhookSecret: await import("@/app/api/teams/[teamId]/webhook-secret/route"),
    agent: await import("@/app/api/agents/[agentId]/route"),
    chat: await import("@/app/api/agents/[agentId]/chat/route"),
    messages: await import("@/app/api/agents/[agentId]/messages/route"),
    stop: await import("@/app/api/agents/[agentId]/stop/route"),
    agentTasks: await import("@/app/api/agents/[agentId]/tasks/route"),
    cancelTask: await import("@/app/api/tasks/[taskId]/cancel/route"),
    retryTask: await import("@/app/api/tasks/[taskId]/retry/route"),
    inboxItem: await import("@/app/api/inbox/[itemId]/route"),
    knowledgeItem: await import("@/app/api/knowledge/[itemId]/route"),
    hook: await import("@/app/api/hooks/[teamId]/route"),
    decision: await import("@/app/api/approvals/[approvalId]/decision/route"),
    act: await import("@/app/api/act/route"),
    slack: await import("@/app/api/slack/actions/route"),
    answer: await import("@/app/api/questions/[questionId]/answer/route"),
    toolPolicies: await import("@/app/api/teams/[teamId]/tool-policies/route"),
    notificationChannels: await import("@/app/api/teams/[teamId]/notification-channels/route"),
    notificationChannel: await import("@/app/api/notification-channels/[channelId]/route"),
    notificationTest: await import("@/app/api/notification-channels/[channelId]/test/route"),
    mcpServers: await import("@/app/api/teams/[teamId]/mcp-servers/route"),
    mcpServer: await import("@/app/api/mcp-servers/[serverId]/route"),
    mcpTest: await import("@/app/api/mcp-servers/[serverId]/test/route"),
    toolScope: await import("@/app/api/agents/[agentId]/tool-scope/route"),
    modelPrice: await import("@/app/api/model-prices/[...model]/route"),
  };
}

/** Write routes with nothing above them that a concurrent request could delete. */
const NO_PARENT: Record<string, string> = {
  "POST /api/teams": "creates a team, under nothing",
  "POST /api/teams/draft": "writes nothing but a usage row with no agent",
  "POST /api/inbox/read-all": "an update of whatever exists",
  "POST /api/auth/sign-in": "sessions belong to no team",
  "POST /api/auth/sign-out": "sessions belong to no team",
  "POST /api/connection-check": "asks the model server and Tavily; writes a model's profile, under no team",
  "POST /api/models/check": "writes a model's profile and its usage rows, under no team",
  // The catch-all for paths no route serves: it writes nothing and answers a JSON 404.
  "POST /api/[...path]": "writes nothing: a path no route serves",
  "PUT /api/[...path]": "writes nothing: a path no route serves",
  "PATCH /api/[...path]": "writes nothing: a path no route serves",
  "DELETE /api/[...path]": "writes nothing: a path no route serves",
};

let database: TestDatabase;
let api: Awaited<ReturnType<typeof loadRoutes>>;
const unhandled: unknown[][] = [];
const tally = {
  requests: 0,
  fivexx: 0,
  byStatus: {} as Record<string, number>,
  streams: 0,
  covered: new Set<string>(),
};

beforeAll(async () => {
  delete process.env.APP_PASSWORD;
  for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_MODEL", "TAVILY_API_KEY", "TAVILY_BASE_URL"])
    delete process.env[name];
  database = await createWebTestDatabase();
  api = await loadRoutes();
  const { webEngine } = await import("@/lib/http/server");
  await webEngine();
  // What reaches the log as unexpected is a 500 in disguise (or a stream that broke).
  const original = console.error;
  vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
    unhandled.push(args);
    original(...args);
  });
});

afterAll(async () => {
  vi.mocked(console.error).mockRestore();
  await closeWebTestDatabase(database);
  const statuses = Object.entries(tally.byStatus)
    .sort()
    .map(([status, count]) => `${status}×${count}`)
    .join(" ");
  console.log(
    `[races] requests: ${tally.requests}, 5xx: ${tally.fivexx} (statuses: ${statuses}; chat streams read to the end: ${tally.streams})`,
  );
});

const params = <T extends Record<string, string>>(values: T) => ({ params: Promise.resolve(values) });
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const jitter = (max: number) => pause(Math.floor(Math.random() * max));

function request(method: string, body?: unknown, headers: Record<string, string> = {}): Request {
  const text = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  return new Request(`${ORIGIN}/x`, {
    method,
    headers: { origin: ORIGIN, ...(text === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body: text,
  });
}

const chatBody = (text: string) => ({
  id: "c",
  trigger: "submit-message",
  messages: [{ id: "m", role: "user", parts: [{ type: "text", text }] }],
});

/** The response's whole body; a stream that does not end within 20 s fails the test. */
async function drain(response: Response): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("the response body did not end within 20 s")), 20_000);
  });
  try {
    return await Promise.race([response.text(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

type Shot = { key: string; run: () => Promise<Response> };

/** One world, and every write aimed at it while its subordinate, team and task are deleted. */
async function round(index: number): Promise<{ key: string; status: number; body: string }[]> {
  const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout", "Analyst"] });
  const [scout, analyst] = subordinates as [(typeof subordinates)[0], (typeof subordinates)[0]];
  const task = await createTask(database.db, { agentId: scout.id, source: "lead", title: "Find prices" });
  const failed = await createTask(database.db, { agentId: scout.id, source: "user", title: "Failed once" });
  await database.db
    .update(tasks)
    .set({ status: "failed", result: "The model server failed." })
    .where(eq(tasks.id, failed.id));
  const item = await createInboxItem(database.db, {
    teamId: team.id,
    agentId: scout.id,
    type: "briefing",
    title: "t",
    summary: "s",
    content: "c",
  });
  const knowledge = await createKnowledgeItem(database.db, {
    agentId: scout.id,
    type: "fact",
    content: "Panels got cheaper.",
  });
  const { secret } = await setWebhookSecret(database.db, team.id, `whsec_race_${index}`);
  const background = await getBackgroundConversation(database.db, scout.id);
  const approval = (await createApproval(database.db, {
    teamId: team.id,
    agentId: scout.id,
    conversationId: background.id,
    taskId: task.id,
    toolCallId: `race-${index}`,
    toolName: "addKnowledgeItem",
    input: { type: "fact", content: "Panels got cheaper." },
    reason: "",
  }))!;
  const question = await createQuestion(database.db, {
    agentId: scout.id,
    taskId: task.id,
    recipientAgentId: null,
    question: "Go on?",
  });
  // Nothing listens there: connecting fails at once, as a server that is down does.
  const mcp = await createMcpServer(database.db, {
    teamId: team.id,
    name: "closed",
    transport: "http",
    url: "http://127.0.0.1:9/mcp",
  });
  const hookBody = JSON.stringify({ name: "race", index });
  const linkKey = await actionLinkKey(database.db);
  const expiresAt = new Date(Date.now() + 3_600_000);
  // Port 9 (discard): nothing in this file works the queue, so nothing is sent anyway.
  const channel = await insertNotificationChannel(database.db, team.id, {
    type: "webhook",
    name: "Race",
    url: "http://127.0.0.1:9/x",
    secret: "whsec_race",
    kinds: ["alert"],
  });

  const writes: Shot[] = [
    {
      key: "POST /api/agents/[agentId]/tasks",
      run: () => api.agentTasks.POST(request("POST", { title: "Race task" }), params({ agentId: scout.id })),
    },
    {
      key: "POST /api/agents/[agentId]/tasks",
      run: () => api.agentTasks.POST(request("POST", { title: "Lead task" }), params({ agentId: lead.id })),
    },
    {
      key: "POST /api/agents/[agentId]/chat",
      run: () => api.chat.POST(request("POST", chatBody("hello")), params({ agentId: scout.id })),
    },
    {
      key: "POST /api/agents/[agentId]/chat",
      run: () =>
        api.chat.POST(request("POST", chatBody("please research solar panel prices")), params({ agentId: lead.id })),
    },
    {
      key: "PATCH /api/agents/[agentId]",
      run: () => api.agent.PATCH(request("PATCH", { name: "Renamed scout" }), params({ agentId: scout.id })),
    },
    {
      key: "PATCH /api/agents/[agentId]",
      run: () => api.agent.PATCH(request("PATCH", { schedule: "0 9 * * *" }), params({ agentId: lead.id })),
    },
    {
      key: "DELETE /api/agents/[agentId]",
      run: () => api.agent.DELETE(request("DELETE"), params({ agentId: analyst.id })),
    },
    {
      key: "POST /api/agents/[agentId]/stop",
      run: () => api.stop.POST(request("POST"), params({ agentId: scout.id })),
    },
    { key: "POST /api/agents/[agentId]/stop", run: () => api.stop.POST(request("POST"), params({ agentId: lead.id })) },
    {
      key: "POST /api/tasks/[taskId]/cancel",
      run: () => api.cancelTask.POST(request("POST"), params({ taskId: task.id })),
    },
    // Twice at once: each retry is a new task, and neither may trip over the other or the deletes.
    {
      key: "POST /api/tasks/[taskId]/retry",
      run: () => api.retryTask.POST(request("POST"), params({ taskId: failed.id })),
    },
    {
      key: "POST /api/tasks/[taskId]/retry",
      run: () => api.retryTask.POST(request("POST"), params({ taskId: failed.id })),
    },
    {
      key: "PATCH /api/agents/[agentId]",
      run: () =>
        api.agent.PATCH(
          request("PATCH", { schedule: "0 7 * * 1-5", scheduleTimeZone: "Europe/Berlin" }),
          params({ agentId: lead.id }),
        ),
    },
    {
      key: "POST /api/teams/[teamId]/agents",
      run: () => api.teamAgents.POST(request("POST", { name: "Newcomer" }), params({ teamId: team.id })),
    },
    {
      key: "POST /api/teams/[teamId]/agents",
      run: () =>
        api.teamAgents.POST(
          request("POST", { name: "Under scout", parentAgentId: scout.id }),
          params({ teamId: team.id }),
        ),
    },
    {
      key: "PATCH /api/teams/[teamId]",
      run: () =>
        api.team.PATCH(
          request("PATCH", { name: "Renamed team", status: index % 2 ? "paused" : "active" }),
          params({ teamId: team.id }),
        ),
    },
    {
      key: "PATCH /api/teams/[teamId]",
      run: () =>
        api.team.PATCH(
          request("PATCH", { dailyTokenBudget: 1_000 + index, dailyCostBudgetUsd: index % 2 ? 1.5 : null }),
          params({ teamId: team.id }),
        ),
    },
    // Prices belong to no team: what races here is the same model's price set and reset at once.
    {
      key: "PUT /api/model-prices/[...model]",
      run: () =>
        api.modelPrice.PUT(request("PUT", { inputUsdPerMtok: index, outputUsdPerMtok: 2 * index }), {
          params: Promise.resolve({ model: ["race", "model"] }),
        }),
    },
    {
      key: "DELETE /api/model-prices/[...model]",
      run: async () => {
        await jitter(60);
        return api.modelPrice.DELETE(request("DELETE"), { params: Promise.resolve({ model: ["race", "model"] }) });
      },
    },
    // Every other round keeps the secret, so the webhook gets as far as its write.
    ...(index % 2
      ? [
          {
            key: "POST /api/teams/[teamId]/webhook-secret",
            run: () => api.webhookSecret.POST(request("POST"), params({ teamId: team.id })),
          },
          {
            key: "DELETE /api/teams/[teamId]/webhook-secret",
            run: () => api.webhookSecret.DELETE(request("DELETE"), params({ teamId: team.id })),
          },
        ]
      : []),
    {
      key: "POST /api/hooks/[teamId]",
      run: () =>
        api.hook.POST(request("POST", hookBody, signedWebhookHeaders(secret, hookBody)), params({ teamId: team.id })),
    },
    {
      key: "PATCH /api/inbox/[itemId]",
      run: () => api.inboxItem.PATCH(request("PATCH", { read: true }), params({ itemId: item.id })),
    },
    {
      key: "PATCH /api/inbox/[itemId]",
      run: () => api.inboxItem.PATCH(request("PATCH", { archived: index % 2 === 0 }), params({ itemId: item.id })),
    },
    {
      key: "PATCH /api/knowledge/[itemId]",
      run: () =>
        api.knowledgeItem.PATCH(
          request("PATCH", { content: `Edited ${index}`, sourceUrl: "https://example.com/source" }),
          params({ itemId: knowledge.id }),
        ),
    },
    {
      key: "DELETE /api/knowledge/[itemId]",
      run: () => api.knowledgeItem.DELETE(request("DELETE"), params({ itemId: knowledge.id })),
    },
    {
      key: "POST /api/approvals/[approvalId]/decision",
      run: () =>
        api.decision.POST(
          request("POST", index % 2 ? { decision: "approve" } : { decision: "deny", reason: "no" }),
          params({ approvalId: approval.id }),
        ),
    },
    {
      key: "POST /api/questions/[questionId]/answer",
      run: () => api.answer.POST(request("POST", { answer: "yes" }), params({ questionId: question.id })),
    },
    // The same decisions from an email's link and a Slack button, racing the app's and the deletes.
    {
      key: "POST /api/act",
      run: () => {
        signInThrottle.clear();
        const action = index % 2 ? "approve" : "deny";
        const token = signActionLink(linkKey, { action, channel: "email", itemId: approval.id, expiresAt });
        return api.act.POST(
          new Request(`${ORIGIN}/api/act?t=${token}`, {
            method: "POST",
            headers: { origin: ORIGIN, "content-type": "application/json" },
            body: "{}",
          }),
        );
      },
    },
    {
      key: "POST /api/act",
      run: () => {
        signInThrottle.clear();
        const token = signActionLink(linkKey, { action: "answer", channel: "email", itemId: question.id, expiresAt });
        return api.act.POST(
          new Request(`${ORIGIN}/api/act?t=${token}`, {
            method: "POST",
            headers: { origin: ORIGIN, "content-type": "application/json" },
            body: JSON.stringify({ answer: "from the email" }),
          }),
        );
      },
    },
    {
      key: "POST /api/slack/actions",
      run: () => {
        signInThrottle.clear();
        const value = signActionLink(linkKey, { action: "approve", channel: "slack", itemId: approval.id, expiresAt });
        const body = `payload=${encodeURIComponent(
          JSON.stringify({
            type: "block_actions",
            user: { id: "U1", username: "ana" },
            actions: [{ action_id: "cadre_approve", value }],
          }),
        )}`;
        return api.slack.POST(
          new Request(`${ORIGIN}/api/slack/actions`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded", ...signedSlackHeaders(SLACK_SECRET, body) },
            body,
          }),
        );
      },
    },
    {
      key: "PUT /api/teams/[teamId]/tool-policies",
      run: () =>
        api.toolPolicies.PUT(
          request("PUT", { toolName: "tavilySearch", policy: "ask", agentId: scout.id }),
          params({ teamId: team.id }),
        ),
    },
    {
      key: "POST /api/teams/[teamId]/notification-channels",
      run: () =>
        api.notificationChannels.POST(
          request("POST", { type: "webhook", name: "New", url: "https://example.com/hook", kinds: ["alert"] }),
          params({ teamId: team.id }),
        ),
    },
    {
      key: "PATCH /api/notification-channels/[channelId]",
      run: () => api.notificationChannel.PATCH(request("PATCH", { enabled: false }), params({ channelId: channel.id })),
    },
    {
      key: "POST /api/notification-channels/[channelId]/test",
      run: () => api.notificationTest.POST(request("POST"), params({ channelId: channel.id })),
    },
    ...(index % 2
      ? []
      : [
          {
            key: "DELETE /api/notification-channels/[channelId]",
            run: () => api.notificationChannel.DELETE(request("DELETE"), params({ channelId: channel.id })),
          },
        ]),
    {
      key: "POST /api/teams/[teamId]/mcp-servers",
      run: () =>
        api.mcpServers.POST(
          request("POST", { transport: "http", name: `s${index}`, url: "http://127.0.0.1:9/mcp" }),
          params({ teamId: team.id }),
        ),
    },
    {
      key: "PATCH /api/mcp-servers/[serverId]",
      run: () => api.mcpServer.PATCH(request("PATCH", { enabled: false }), params({ serverId: mcp.id })),
    },
    {
      key: "POST /api/mcp-servers/[serverId]/test",
      run: () => api.mcpTest.POST(request("POST"), params({ serverId: mcp.id })),
    },
    ...(index % 2
      ? []
      : [
          {
            key: "DELETE /api/mcp-servers/[serverId]",
            run: () => api.mcpServer.DELETE(request("DELETE"), params({ serverId: mcp.id })),
          },
        ]),
    {
      key: "PUT /api/agents/[agentId]/tool-scope",
      run: () =>
        api.toolScope.PUT(
          request("PUT", { scope: { allow: ["tavilySearch", "closed__*"] } }),
          params({ agentId: scout.id }),
        ),
    },
    {
      key: "GET /api/agents/[agentId]/messages",
      run: () => api.messages.GET(new Request(`${ORIGIN}/x?mode=foreground`), params({ agentId: scout.id })),
    },
  ];
  // The deletes land anywhere from before the first write to after the last (a chat's reply included).
  const spread = [15, 60, 250][index % 3]!;
  const deletes: Shot[] = [
    {
      key: "DELETE /api/agents/[agentId]",
      run: async () => {
        await jitter(spread);
        return api.agent.DELETE(request("DELETE"), params({ agentId: scout.id }));
      },
    },
    {
      key: "DELETE /api/teams/[teamId]",
      run: async () => {
        await jitter(spread * 2);
        return api.team.DELETE(request("DELETE"), params({ teamId: team.id }));
      },
    },
    {
      key: "POST /api/tasks/[taskId]/cancel",
      run: async () => {
        await jitter(spread);
        return api.cancelTask.POST(request("POST"), params({ taskId: task.id }));
      },
    },
  ];
  const shots = [...writes, ...deletes];
  return Promise.all(
    shots.map(async ({ key, run }) => {
      tally.covered.add(key);
      const response = await run();
      const body = await drain(response);
      if (response.headers.get("content-type")?.startsWith("text/event-stream")) tally.streams += 1;
      return { key, status: response.status, body };
    }),
  );
}

/** Every method that changes something, of every route.ts under src/app/api. */
function writeRoutes(): string[] {
  const root = path.resolve("src/app/api");
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name === "route.ts") {
        const source = readFileSync(full, "utf8");
        const pattern = `/api/${path.relative(root, dir).split(path.sep).join("/")}`;
        for (const method of ["POST", "PUT", "PATCH", "DELETE"])
          if (new RegExp(`export const ${method}\\b`).test(source)) found.push(`${method} ${pattern}`);
      }
    }
  };
  walk(root);
  return found.sort();
}

describe("races with deletion", () => {
  it(`answers every write racing the deletion of its team, agent or task with a 2xx/4xx, ${ROUNDS} rounds`, {
    timeout: 240_000,
  }, async () => {
    const failures: string[] = [];
    for (let index = 0; index < ROUNDS; index++) {
      for (const { key, status, body } of await round(index)) {
        tally.requests += 1;
        tally.byStatus[status] = (tally.byStatus[status] ?? 0) + 1;
        if (status >= 500) {
          tally.fivexx += 1;
          failures.push(`${key} → ${status} ${body.slice(0, 200)}`);
        } else if (status >= 400) {
          expect(JSON.parse(body), `${key} → ${status}`).toMatchObject({
            error: { code: expect.stringMatching(/^[a-z_]+:[a-z_]+$/) },
          });
        }
      }
    }
    expect(failures).toEqual([]);
    expect(unhandled.map((args) => args.map(String).join(" ").slice(0, 300))).toEqual([]);
  });

  it("covers every write route that has a team, agent or task above it", () => {
    const missing = writeRoutes().filter((key) => !tally.covered.has(key) && !(key in NO_PARENT));
    expect(missing).toEqual([]);
  });

  it("a deleted agent's id answers 404 to every write afterwards (control)", async () => {
    const { subordinates } = await createTeamFixture(database.db, { subordinates: ["Gone"] });
    const gone = subordinates[0]!;
    expect((await api.agent.DELETE(request("DELETE"), params({ agentId: gone.id }))).status).toBe(204);
    for (const response of [
      await api.agentTasks.POST(request("POST", { title: "t" }), params({ agentId: gone.id })),
      await api.chat.POST(request("POST", chatBody("hi")), params({ agentId: gone.id })),
      await api.agent.PATCH(request("PATCH", { name: "n" }), params({ agentId: gone.id })),
      await api.stop.POST(request("POST"), params({ agentId: randomUUID() })),
    ]) {
      expect(response.status).toBe(404);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("not_found:agent");
    }
  });

  it("deleting a team twice while a worker writes into it answers 204 and 404: a deadlock's victim runs again, never a 500", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    // A worker's transaction: it holds the lead's row, then writes an inbox item (its key
    // locks the team's row), while the person's two deletions wait for the lead and the team.
    const worker = database.sql
      .begin(async (sql) => {
        await sql`update agents set updated_at = now() where id = ${lead.id}`;
        await new Promise((resolve) => setTimeout(resolve, 600));
        await sql`insert into inbox_items (team_id, agent_id, type, title, summary, content) values (${team.id}, ${lead.id}, 'alert', 't', 's', 'c')`;
      })
      .catch((error: unknown) => error); // the worker may be the deadlock's victim: it would retry on its own
    const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const deletions = [100, 300].map(async (ms) => {
      await later(ms);
      const response = await api.team.DELETE(request("DELETE"), params({ teamId: team.id }));
      return response.status;
    });
    const statuses = await Promise.all(deletions);
    await worker;
    expect(statuses.sort()).toEqual([204, 404]);
    expect(await getTeam(database.db, team.id)).toBeNull();
  });

  it("a chat whose team is deleted mid-reply ends its stream, says so, and logs nothing", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    let open = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    const { webEngine } = await import("@/lib/http/server");
    const engine = await webEngine();
    const loggedBefore = unhandled.length;
    const response = await streamChatReply(
      { ...engine, chooseModel: () => gatedModel(gate) },
      lead.id,
      "please research prices",
      new AbortController().signal,
    );
    expect(response.status).toBe(200);

    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let body = "";
    while (!body.includes("On it.")) {
      const { value, done } = await reader.read();
      if (done) break;
      body += decoder.decode(value, { stream: true });
    }
    // The reply is under way (its first step has said something); now the team goes.
    expect((await api.team.DELETE(request("DELETE"), params({ teamId: team.id }))).status).toBe(204);
    expect(await getTeam(database.db, team.id)).toBeNull();
    open();
    body += await drain(
      new Response(
        new ReadableStream({
          pull: async (controller) => {
            const { value, done } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(value);
          },
        }),
      ),
    );

    expect(body).toContain(
      '"errorText":"This agent was deleted while it answered; the rest of the reply was not kept."',
    );
    expect(body).not.toContain("Done."); // no second model call for an agent that is gone
    expect(body.trim().endsWith("data: [DONE]")).toBe(true);
    expect(unhandled.slice(loggedBefore)).toEqual([]);
    // The call that ended after the deletion is what the team spent: it still counts.
    await expect
      .poll(async () =>
        (await database.sql`select agent_id, purpose from usage where team_id = ${team.id}`).map((row) => [
          row.agent_id,
          row.purpose,
        ]),
      )
      .toEqual([[lead.id, "chat"]]);
  });
});

/** Says "On it.", waits for the gate, then asks for createTask; a second call would say "Done.". */
function gatedModel(gate: Promise<void>): ModelChoice {
  const usage = {
    inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: undefined },
    outputTokens: { total: 5, text: 5, reasoning: undefined },
  };
  let calls = 0;
  const model = new MockLanguageModelV4({
    doStream: async () => {
      const first = calls++ === 0;
      return {
        stream: new ReadableStream<LanguageModelV4StreamPart>({
          async start(controller) {
            controller.enqueue({ type: "stream-start", warnings: [] });
            controller.enqueue({ type: "text-start", id: "t" });
            controller.enqueue({ type: "text-delta", id: "t", delta: first ? "On it." : "Done." });
            controller.enqueue({ type: "text-end", id: "t" });
            if (first) {
              await gate;
              controller.enqueue({
                type: "tool-call",
                toolCallId: "call-1",
                toolName: "createTask",
                input: JSON.stringify({ title: "Research prices" }),
              });
            }
            controller.enqueue({
              type: "finish",
              finishReason: { unified: first ? "tool-calls" : "stop", raw: undefined },
              usage,
            });
            controller.close();
          },
        }),
      };
    },
  });
  return { model, modelId: "gated", kind: "offline" };
}
