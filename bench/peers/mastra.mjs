// Mastra with @mastra/pg storage, as its docs set up an agent with memory: an Agent with a
// tool, Memory (its defaults) on a PostgresStore, one thread per run. The model answers at once: an AI SDK
// LanguageModelV2 whose doStream/doGenerate return the scripted tool call, so Mastra's own
// loop runs. Modes as in langgraph.mjs.
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { Memory } from "@mastra/memory";
import { PostgresStore } from "@mastra/pg";
import pg from "pg";
import { z } from "zod";
import { args, effects, forever, gapsOf, now, send, sessions, steps } from "./common.mjs";

const url = args.url;
const mode = args.mode ?? "time";
const total = Number(args.total ?? steps);
const thread = args.thread ?? `ma-${process.pid}`;
const storage = new PostgresStore({ id: "peers", connectionString: url });
await storage.init();
const memory = new Memory({ storage });
const sideEffects = mode === "time" ? null : await effects(url);

let calledAt = [];
let answeredAt = [];
const toolRounds = (prompt) => prompt.filter((message) => message.role === "tool").reduce((sum, message) => sum + message.content.length, 0);
const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

async function answer(prompt) {
  calledAt.push(now());
  const round = toolRounds(prompt);
  if (mode === "crash" && round >= steps) {
    send({ holding: round });
    await forever();
  }
  const content =
    round < total - 1
      ? [{ type: "tool-call", toolCallId: `call_${round}`, toolName: "search", input: JSON.stringify({ query: `round ${round}` }) }]
      : [{ type: "text", text: "All rounds done." }];
  answeredAt.push(now());
  return { content, finishReason: round < total - 1 ? "tool-calls" : "stop", usage, warnings: [] };
}

const model = {
  specificationVersion: "v2",
  provider: "scripted",
  modelId: "scripted",
  supportedUrls: {},
  doGenerate: async ({ prompt }) => answer(prompt),
  doStream: async ({ prompt }) => {
    const result = await answer(prompt);
    const parts = [{ type: "stream-start", warnings: [] }];
    for (const part of result.content) {
      if (part.type === "text") parts.push({ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: part.text }, { type: "text-end", id: "t" });
      else parts.push(part);
    }
    parts.push({ type: "finish", finishReason: result.finishReason, usage });
    return { stream: new ReadableStream({ start: (controller) => { for (const part of parts) controller.enqueue(part); controller.close(); } }) };
  },
};

const search = createTool({
  id: "search",
  description: "Search the web.",
  inputSchema: z.object({ query: z.string() }),
  execute: async (input) => {
    const query = input.query ?? input.context?.query;
    if (sideEffects) await sideEffects.record("mastra", thread, Number(String(query).split(" ")[1]));
    return "Web search is not configured.";
  },
});
const agent = new Agent({ id: "stepper", name: "stepper", instructions: "Do fifty rounds.", model, tools: { search }, memory });
const run = (threadId, text) => agent.generate(text, { memory: { thread: threadId, resource: "bench" }, maxSteps: total + 5 });

if (mode === "time") {
  const gaps = [];
  for (let session = 0; session < sessions + 1; session++) {
    calledAt = [];
    answeredAt = [];
    const result = await run(`${thread}-${session}`, `Fifty rounds (${session})`);
    if (calledAt.length !== total) throw new Error(`Mastra made ${calledAt.length} model calls, not ${total}: ${result.text}`);
    if (session > 0) gaps.push(...gapsOf(calledAt, answeredAt));
  }
  send({ gaps });
} else if (mode === "crash") {
  send({ started: thread });
  await run(thread, "Fifty rounds");
} else {
  // After the crash: what the thread kept, then the task again on the same thread (Mastra
  // has no run to resume: the stored messages are what a new run sees).
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query(
    `select count(*)::int as messages,
            coalesce(sum((length(content::text) - length(replace(content::text, '"state":"result"', ''))) / length('"state":"result"')), 0)::int as kept
       from mastra_messages where thread_id = $1`,
    [thread],
  );
  await client.end();
  send({ kept: rows[0].kept, storedMessages: rows[0].messages });
  await run(thread, "Fifty rounds");
  send({ done: true });
}
await sideEffects?.close();
process.exit(0);
