import { tool } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ContextReader } from "@/lib/engine/compaction";
import { StepRecorder } from "@/lib/engine/step-recorder";
import { appendMessage, getAllMessages, getBackgroundConversation } from "@/lib/db/queries";
import { createTeamFixture } from "../support/fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase({ max: 10 });
});
afterAll(async () => {
  await database?.drop();
});

/** A work turn's recorder on a fresh work log, with its context read, and one read tool wrapped by it. */
async function workTurn() {
  const { lead } = await createTeamFixture(database.db);
  const conversation = await getBackgroundConversation(database.db, lead.id);
  await appendMessage(database.db, conversation.id, { role: "user", content: "Task: look it up." });
  const history = new ContextReader(database.db, conversation.id);
  await history.read();
  let ahead = 0;
  const recorder = new StepRecorder(database.db, conversation.id, {
    follower: history,
    resultsInBackground: true,
    onResultAhead: () => ahead++,
  });
  const tools = recorder.wrapTools({
    searchKnowledge: tool({
      inputSchema: z.object({ query: z.string() }),
      execute: async ({ query }) => `Nothing about ${query}.`,
    }),
  });
  const run = (toolCallId: string, query: string) =>
    tools.searchKnowledge.execute!({ query }, { toolCallId, messages: [], context: {} });
  return { conversationId: conversation.id, history, recorder, run, ahead: () => ahead };
}

const call = (toolCallId: string, query: string) => [
  { type: "tool-call", toolCallId, toolName: "searchKnowledge", input: { query } },
];

describe("a work turn's results, named ahead of their write", () => {
  it("are in the context at once and in the log after the answer that called them, before the next answer", async () => {
    const turn = await workTurn();
    await turn.recorder.recordModelResponse(call("c1", "launches"), turn.history.lastMessageId);
    await turn.run("c1", "launches");
    // Told before the write lands: the context holds the result, and the next answer must follow it.
    expect(turn.ahead()).toBe(1);
    const context = await turn.history.readUnlessAt(null);
    expect(context.at(-1)).toMatchObject({ role: "tool", toolCallId: "c1", content: "Nothing about launches." });
    await turn.recorder.recordModelResponse([{ type: "text", text: "Nothing found." }], turn.history.lastMessageId);
    await turn.recorder.settled();

    const log = await getAllMessages(database.db, turn.conversationId);
    expect(log.map((message) => [message.role, message.toolCallId ?? message.content])).toEqual([
      ["user", "Task: look it up."],
      ["assistant", ""],
      ["tool", "c1"],
      ["assistant", "Nothing found."],
    ]);
    // The row the context was given is the row in the log, under the id it was named with.
    expect(log[2]!.id).toBe(context.at(-1)!.id);
  });

  it("still land when someone else wrote between the call and its result, and the answer that did not see that row is refused", async () => {
    const turn = await workTurn();
    await turn.recorder.recordModelResponse(call("c1", "launches"), turn.history.lastMessageId);
    // A Stop's marker, say, lands while the tool runs.
    await appendMessage(database.db, turn.conversationId, { role: "assistant", content: "(stopped by the person)" });
    await turn.run("c1", "launches");
    const givenTail = turn.history.lastMessageId;
    await turn.recorder.drained();

    const log = await getAllMessages(database.db, turn.conversationId);
    // The call keeps its one result, after the other row.
    expect(log.map((message) => message.role)).toEqual(["user", "assistant", "assistant", "tool"]);
    expect(log.filter((message) => message.toolCallId === "c1")).toHaveLength(1);
    // The next call was given a context without the marker: its answer is not stored after it.
    expect(await turn.recorder.recordModelResponse([{ type: "text", text: "Done." }], givenTail)).toBeNull();
    expect(() => turn.recorder.throwIfFailed()).toThrow(/moved on/);
    expect((await getAllMessages(database.db, turn.conversationId)).length).toBe(4);
    // The next read of the context sees the log as it is.
    expect((await turn.history.readUnlessAt(log.at(-1)!.id)).map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "assistant",
      "tool",
    ]);
  });

  it("keep an answer out of the log when the result before it could not be stored", async () => {
    const turn = await workTurn();
    // The database refuses this one result (a fault injected where it happens, in Postgres).
    await database.sql.unsafe(`
      create or replace function refuse_poisoned_result() returns trigger language plpgsql as $$
      begin
        if new.role = 'tool' and new.content like '%poisoned%' then raise exception 'refused for the test'; end if;
        return new;
      end $$;
      create or replace trigger refuse_poisoned_result before insert on messages for each row execute function refuse_poisoned_result();`);
    try {
      await turn.recorder.recordModelResponse(call("c1", "poisoned"), turn.history.lastMessageId);
      await turn.run("c1", "poisoned");
      // The next call was given the result; its answer must not land where the result is missing.
      expect(
        await turn.recorder.recordModelResponse([{ type: "text", text: "Done." }], turn.history.lastMessageId),
      ).toBeNull();
      const failure = (() => {
        try {
          turn.recorder.throwIfFailed();
        } catch (error) {
          return error as Error;
        }
      })();
      expect(String(failure?.cause)).toMatch(/refused for the test/);
      const log = await getAllMessages(database.db, turn.conversationId);
      expect(log.map((message) => message.role)).toEqual(["user", "assistant"]);
    } finally {
      await database.sql.unsafe("drop trigger refuse_poisoned_result on messages");
    }
  });
});
