// Every agent's chat and the history behind it, through the route handlers on a real
// Postgres: a subordinate's chat offers the tools of its role (a mock model records what it
// was given), messages page back over the chain at any depth with no repeats or gaps, and a
// full-text search finds what was said in a team's chats and work logs, and only there.
import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { MockLanguageModelV4 } from "ai/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runWorkSession } from "@/lib/engine/agent";
import { streamChatReply } from "@/lib/engine/chat";
import { assignTask } from "@/lib/domain/tasks";
import { getWorkLogPage } from "@/lib/views/work-log-page";
import type { EngineDeps } from "@/lib/core/engine-config";
import {
  appendMessages,
  getAllMessages,
  getBackgroundConversation,
  getForegroundConversation,
  listTasksByAgent,
} from "@/lib/db/queries";
import type { TestDatabase } from "../support/database";
import { createTeamFixture } from "../support/fixtures";
import { offeredTools, promptText, sessionModel, textReply, toolCallReply } from "../support/mock-model";
import { closeWebTestDatabase, ORIGIN, openOfflineWeb, routeParams } from "../support/web";

async function loadRoutes() {
  return {
    messages: await import("@/app/api/agents/[agentId]/messages/route"),
    search: await import("@/app/api/teams/[teamId]/search/route"),
  };
}

let database: TestDatabase;
let api: Awaited<ReturnType<typeof loadRoutes>>;
let engine: EngineDeps;

beforeAll(async () => {
  ({ database, engine } = await openOfflineWeb());
  api = await loadRoutes();
});

afterAll(async () => {
  await closeWebTestDatabase(database);
});

// never: each route names its own params, so only a context that fits every route is passed
async function get<T>(
  handler: (request: Request, context: never) => Promise<Response>,
  path: string,
  values: Record<string, string>,
) {
  const response = await handler(new Request(ORIGIN + path), routeParams(values) as never);
  return { status: response.status, body: (await response.json()) as T };
}

type ApiMessage = { id: string; content: string; previousMessageId: string | null };
type ApiError = { error: { code: string; message: string } };

/**
 * A model that records every request it is given (as the chat streams it) and answers with
 * the replies given, in turn; then plain text.
 */
function recordingModel(replies: ReturnType<typeof toolCallReply>[]) {
  const requests: LanguageModelV4CallOptions[] = [];
  const answer = (options: LanguageModelV4CallOptions) => {
    requests.push(options);
    return replies.shift() ?? textReply("Done.");
  };
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => answer(options),
    doStream: async (options) => {
      const reply = answer(options);
      const parts: unknown[] = [{ type: "stream-start", warnings: [] }];
      for (const content of reply.content) {
        if (content.type === "text")
          parts.push(
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: content.text },
            { type: "text-end", id: "t" },
          );
        else parts.push(content);
      }
      parts.push({ type: "finish", finishReason: reply.finishReason, usage: reply.usage });
      return {
        stream: new ReadableStream({
          start: (controller) => {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      } as never;
    },
  });
  return { model, requests };
}

describe("a subordinate's chat", () => {
  it("offers the tools of its role: search, its knowledge and a task for itself; no delegation, questions or reports", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout", "Digger"] });
    const scout = subordinates[0]!;
    // The model tries to hand work to the lead and to delegate: neither is possible from here.
    const { model, requests } = recordingModel([
      toolCallReply("createTask", { title: "Dig into perovskite supply", agentId: lead.id }),
      toolCallReply("delegateToAgent", { agentId: subordinates[1]!.id, title: "Sneaky", description: "" }),
    ]);
    await (
      await streamChatReply(
        { ...engine, chooseModel: () => ({ model, modelId: "mock", kind: "offline" }) },
        scout.id,
        "please look into perovskite supply",
        new AbortController().signal,
      )
    ).text();

    expect(requests.length).toBe(3);
    expect(offeredTools(requests[0]!).sort()).toEqual([
      "addKnowledgeItem",
      "createTask",
      "readWebPage",
      "searchKnowledge",
      "tavilySearch",
    ]);
    const createTask = requests[0]!.tools!.find((tool) => tool.name === "createTask")!;
    expect(Object.keys((createTask as { inputSchema: { properties: object } }).inputSchema.properties).sort()).toEqual([
      "description",
      "title",
    ]);
    const system = promptText(requests[0]!.prompt);
    expect(system).toContain(`You are Scout, a member of the team`);
    expect(system).toContain(`Your lead is ${lead.name}`);
    expect(system).toContain("talking with the person you all work for, directly");

    // The task is its own, whatever id the model sent; the delegation found no tool.
    expect((await listTasksByAgent(database.db, scout.id)).map((task) => task.title)).toEqual([
      "Dig into perovskite supply",
    ]);
    expect(await listTasksByAgent(database.db, lead.id)).toEqual([]);
    expect(await listTasksByAgent(database.db, subordinates[1]!.id)).toEqual([]);
    expect(promptText(requests[2]!.prompt)).toMatch(
      /no tool named delegateToAgent|delegateToAgent.*(not|unavailable)/i,
    );
  });

  it("leaves a lead's chat tools as they were: it sees its team and hands work to a subordinate", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const { model, requests } = recordingModel([
      toolCallReply("createTask", { title: "For Scout", agentId: subordinates[0]!.id }),
    ]);
    await (
      await streamChatReply(
        { ...engine, chooseModel: () => ({ model, modelId: "mock", kind: "offline" }) },
        lead.id,
        "please hand this on",
        new AbortController().signal,
      )
    ).text();
    expect(offeredTools(requests[0]!).sort()).toEqual([
      "createTask",
      "getTeamStatus",
      "readWebPage",
      "searchKnowledge",
      "tavilySearch",
    ]);
    expect((await listTasksByAgent(database.db, subordinates[0]!.id)).map((task) => task.title)).toEqual(["For Scout"]);
  });
});

describe("Retry", () => {
  it("answers the stored history again, and stores the person's message only when it never arrived", async () => {
    const { lead } = await createTeamFixture(database.db);
    const conversation = await getForegroundConversation(database.db, lead.id);
    const { model } = recordingModel([]);
    const deps = { ...engine, chooseModel: () => ({ model, modelId: "mock", kind: "offline" as const }) };
    const contents = async () =>
      (await getAllMessages(database.db, conversation.id)).map((message) => `${message.role}: ${message.content}`);
    // the message is stored and the model fails: Retry stores nothing new but the answer
    await appendMessages(database.db, conversation.id, [
      { role: "user", content: "hello?" },
      { role: "assistant", content: "(error: the model server did not answer)" },
    ]);
    await (await streamChatReply(deps, lead.id, "hello?", new AbortController().signal, { regenerate: true })).text();
    expect(await contents()).toEqual([
      "user: hello?",
      "assistant: (error: the model server did not answer)",
      "assistant: Done.",
    ]);
    // the request failed on the way (nothing stored): Retry stores the message once, then answers
    await (
      await streamChatReply(deps, lead.id, "are you there?", new AbortController().signal, { regenerate: true })
    ).text();
    expect((await contents()).slice(3)).toEqual(["user: are you there?", "assistant: Done."]);
  });
});

describe("GET /api/agents/:agentId/messages, paged at depth", () => {
  it("pages 1 000 messages back in pages of 50: every message once, in chain order, to the first", async () => {
    const { lead } = await createTeamFixture(database.db);
    const conversation = await getForegroundConversation(database.db, lead.id);
    const written = await appendMessages(
      database.db,
      conversation.id,
      Array.from({ length: 1000 }, (_, i) => ({
        role: i % 2 ? ("assistant" as const) : ("user" as const),
        content: `message ${i}`,
      })),
    );
    const seen: ApiMessage[] = [];
    let before: string | undefined;
    for (let pages = 0; pages < 30; pages++) {
      const { status, body } = await get<{ messages: ApiMessage[] }>(
        api.messages.GET,
        `/api/agents/${lead.id}/messages?mode=foreground&limit=50${before ? `&before=${before}` : ""}`,
        { agentId: lead.id },
      );
      expect(status).toBe(200);
      if (body.messages.length === 0) break;
      expect(body.messages.length).toBe(50);
      // each page is a run of the chain, and it ends right before the previous page began
      for (let i = 1; i < body.messages.length; i++)
        expect(body.messages[i]!.previousMessageId).toBe(body.messages[i - 1]!.id);
      if (seen.length > 0) expect(seen[0]!.previousMessageId).toBe(body.messages.at(-1)!.id);
      seen.unshift(...body.messages);
      before = body.messages[0]!.id;
    }
    expect(seen.map((message) => message.id)).toEqual(written.map((message) => message.id));
    expect(new Set(seen.map((message) => message.id)).size).toBe(1000);
    expect(seen[0]!.previousMessageId).toBeNull();
  });

  it("refuses a cursor that is no message of this conversation (404) and one that is no id (400)", async () => {
    const { lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const [own] = await appendMessages(database.db, (await getForegroundConversation(database.db, lead.id)).id, [
      { role: "user", content: "hi" },
    ]);
    const [other] = await appendMessages(
      database.db,
      (await getForegroundConversation(database.db, subordinates[0]!.id)).id,
      [{ role: "user", content: "hi" }],
    );
    const path = (before: string, mode = "foreground") =>
      `/api/agents/${lead.id}/messages?mode=${mode}&before=${before}`;
    // another agent's message, the lead's own chat message asked of its work log, and no message at all
    for (const [before, mode] of [
      [other!.id, "foreground"],
      [own!.id, "background"],
      ["00000000-0000-4000-8000-000000000000", "foreground"],
    ] as const) {
      const { status, body } = await get<ApiError>(api.messages.GET, path(before, mode), { agentId: lead.id });
      expect({ before, mode, status, code: body.error?.code }).toEqual({
        before,
        mode,
        status: 404,
        code: "not_found:message",
      });
    }
    expect((await get<ApiError>(api.messages.GET, path("not-an-id"), { agentId: lead.id })).status).toBe(400);
    // The first message as cursor: an empty page, the beginning.
    expect(await get(api.messages.GET, path(own!.id), { agentId: lead.id })).toEqual({
      status: 200,
      body: { messages: [] },
    });
  });
});

describe("the work log's pages", () => {
  it("groups messages by the session that wrote them and gives each step its model call's tokens and time", async () => {
    const { subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const scout = subordinates[0]!;
    const replies = [
      toolCallReply("searchKnowledge", { query: "tides" }),
      textReply("Nothing yet."),
      toolCallReply("searchKnowledge", { query: "waves" }),
      textReply("Still nothing."),
    ];
    const model = sessionModel((_options, call) => replies[call] ?? textReply("Done."));
    const deps = { ...engine, chooseModel: () => ({ model, modelId: "mock", kind: "offline" as const }) };
    for (const title of ["Tides", "Waves"]) {
      await assignTask(database.db, engine.jobs, { agentId: scout.id, source: "user", title });
      expect((await runWorkSession(deps, scout.id)).status).toBe("completed");
    }
    const page = await getWorkLogPage(database.db, scout.id);
    const sessions = Object.values(page.sessions);
    expect(sessions.length).toBe(2);
    // every message belongs to one of the two sessions, in order: the first's, then the second's
    const owners = page.messages.map((message) => page.sessionOf[message.id]);
    expect(owners.every(Boolean)).toBe(true);
    const firstSecond = owners.findIndex((owner) => owner !== owners[0]);
    expect(new Set(owners.slice(0, firstSecond)).size).toBe(1);
    expect(new Set(owners.slice(firstSecond)).size).toBe(1);
    // each assistant row is a step with its call's tokens (the mock reports 10 in, 5 out)
    const assistantRows = page.messages.filter((message) => message.role === "assistant");
    expect(assistantRows.length).toBe(4);
    for (const row of assistantRows) expect(page.steps[row.id]).toMatchObject({ inputTokens: 10, outputTokens: 5 });
    // a session counts all its calls: two steps, the knowledge extraction at its end, and its
    // search's query vector (the offline embedding counts "tides" and "waves" as 2 tokens each)
    for (const session of sessions)
      expect(session).toMatchObject({ status: "completed", inputTokens: 32, outputTokens: 15 });

    // A page back from the second session's first message holds only the first session.
    const second = page.messages[firstSecond]!;
    const older = await getWorkLogPage(database.db, scout.id, { before: second.id });
    expect(older.messages.map((message) => message.id)).toEqual(
      page.messages.slice(0, firstSecond).map((message) => message.id),
    );
    expect(Object.keys(older.sessions)).toEqual([owners[0]]);
  });
});

type Hit = {
  id: string;
  role: string;
  mode: string;
  agentId: string;
  agentName: string;
  snippet: string;
  href: string;
  createdAt: string;
};

describe("GET /api/teams/:teamId/search", () => {
  let team: Awaited<ReturnType<typeof createTeamFixture>>;
  let otherTeam: Awaited<ReturnType<typeof createTeamFixture>>;

  beforeAll(async () => {
    team = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    otherTeam = await createTeamFixture(database.db);
    const scout = team.subordinates[0]!;
    await appendMessages(database.db, (await getForegroundConversation(database.db, team.lead.id)).id, [
      { role: "user", content: "What do we know about perovskite solar cells?" },
      {
        role: "assistant",
        content: "Perovskite cells reached 26% efficiency in the lab.",
        toolCalls: [{ toolCallId: "c1", toolName: "searchKnowledge", args: { query: "perovskites" } }],
      },
      { role: "tool", toolCallId: "c1", content: "perovskite tool output is not searched" },
    ]);
    await appendMessages(database.db, (await getBackgroundConversation(database.db, scout.id)).id, [
      {
        role: "user",
        content: "Task from your lead (task id: 9d3b1f52-0f4e-4c4e-9a55-4a0b8c5a1e11): Dig into perovskite durability",
      },
      { role: "assistant", content: "Durability of perovskites remains the open problem." },
    ]);
    await appendMessages(database.db, (await getForegroundConversation(database.db, otherTeam.lead.id)).id, [
      { role: "user", content: "perovskite in another team" },
    ]);
  });

  const search = (teamId: string, query: string) =>
    get<{ hits: Hit[]; nextCursor: string | null } & Partial<ApiError>>(
      api.search.GET,
      `/api/teams/${teamId}/search?${query}`,
      { teamId },
    );

  it("finds a word (in any form) in the team's chats and work logs, newest first, with snippets and links; never tool output or another team", async () => {
    const { status, body } = await search(team.team.id, "q=perovskites");
    expect(status).toBe(200);
    expect(body.hits.map((hit) => [hit.agentName, hit.mode, hit.role])).toEqual([
      ["Scout", "background", "assistant"],
      ["Scout", "background", "user"],
      [team.lead.name, "foreground", "assistant"],
      [team.lead.name, "foreground", "user"],
    ]);
    expect(body.nextCursor).toBeNull();
    expect(body.hits[0]!.snippet).toBe("Durability of \uE000perovskites\uE001 remains the open problem.");
    expect(body.hits[0]!.href).toBe(`/agents/${team.subordinates[0]!.id}#work-log`);
    expect(body.hits[3]!.href).toBe(`/agents/${team.lead.id}/chat`);
    expect(body.hits.some((hit) => hit.snippet.includes("tool output"))).toBe(false);
    expect((await search(otherTeam.team.id, "q=perovskite")).body.hits.map((hit) => hit.snippet)).toEqual([
      "\uE000perovskite\uE001 in another team",
    ]);
    // a phrase and an excluded word, as in a web search
    expect((await search(team.team.id, `q=${encodeURIComponent('"open problem"')}`)).body.hits.length).toBe(1);
    expect((await search(team.team.id, "q=perovskite+-durability")).body.hits.length).toBe(2);
  });

  it("cuts a long message down to the fragments around its matches", async () => {
    const { team: longTeam, lead } = await createTeamFixture(database.db);
    const filler = (n: number) => Array.from({ length: n }, (_, i) => `sentence ${i} says nothing much.`).join(" ");
    const content = `${filler(80)} Tandem perovskite modules passed the damp heat test. ${filler(80)}`;
    await appendMessages(database.db, (await getForegroundConversation(database.db, lead.id)).id, [
      { role: "assistant", content },
    ]);
    const [hit] = (await search(longTeam.id, "q=perovskite")).body.hits;
    expect(hit!.snippet).toContain("Tandem \uE000perovskite\uE001 modules");
    expect(hit!.snippet.length).toBeLessThan(300);
    expect(content.length).toBeGreaterThan(4000);
  });

  it("pages with the cursor it gives out, without repeats", async () => {
    const ids: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const { status, body } = await search(team.team.id, `q=perovskite&limit=1${cursor ? `&before=${cursor}` : ""}`);
      expect(status).toBe(200);
      ids.push(...body.hits.map((hit) => hit.id));
      cursor = body.nextCursor;
      if (!cursor) break;
    }
    expect(ids.length).toBe(4);
    expect(new Set(ids).size).toBe(4);
  });

  it("answers bad input with a 400 that says what to do, and an unknown team with a 404", async () => {
    for (const query of [
      "",
      "q=",
      "q=%20%20",
      "q=the",
      `q=${"x".repeat(201)}`,
      "q=perovskite&before=not-a-cursor",
      "q=perovskite&limit=0",
      "q=perovskite&sort=rank",
    ]) {
      const { status, body } = await search(team.team.id, query);
      expect({ query, status }).toEqual({ query, status: 400 });
      expect(body.error!.message.length).toBeGreaterThan(10);
    }
    expect((await search("00000000-0000-4000-8000-000000000000", "q=perovskite")).status).toBe(404);
    expect((await search("not-a-uuid", "q=perovskite")).status).toBe(404);
  });
});
