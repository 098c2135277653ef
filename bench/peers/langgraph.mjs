// LangGraph.js with its Postgres checkpointer (PostgresSaver), as its docs set up a tool
// loop: an agent node (a chat model with tools) and a ToolNode, checkpointed per step.
// --durability=sync: each step's checkpoint is on disk before the next step starts (Cadre's
// promise); without it, LangGraph's default ("async": written while the next step runs, not
// awaited). The chat model answers at once: a BaseChatModel whose _generate returns the
// scripted tool call, so LangChain's own model-call machinery runs.
// --mode=time: `sessions` runs of `steps` steps, prints {gaps}. --mode=crash: hangs the
// model after `steps` steps (the parent kills -9). --mode=resume: reports what was kept
// and resumes the thread to the end.
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { z } from "zod";
import { args, effects, forever, gapsOf, now, send, sessions, steps } from "./common.mjs";

const url = args.url;
const mode = args.mode ?? "time";
const total = Number(args.total ?? steps);
const thread = args.thread ?? `lg-${process.pid}`;
// Passed to every run (invoke's `durability` option in @langchain/langgraph 1.7); left out,
// not spelled "async", for the default row, so that row is exactly what a user gets.
if (args.durability && !["sync", "async", "exit"].includes(args.durability)) throw new Error(`--durability: sync, async or exit, not ${args.durability}`);
const durability = args.durability ? { durability: args.durability } : {};
const saver = PostgresSaver.fromConnString(url);
await saver.setup();
const sideEffects = mode === "time" ? null : await effects(url);

let calledAt = [];
let answeredAt = [];
const toolRounds = (messages) => messages.filter((message) => message.getType() === "tool").length;

class ScriptedModel extends BaseChatModel {
  _llmType() {
    return "scripted";
  }
  bindTools() {
    return this;
  }
  async _generate(messages) {
    calledAt.push(now());
    const round = toolRounds(messages);
    if (mode === "crash" && round >= steps) {
      send({ holding: round });
      await forever();
    }
    const message =
      round < total - 1
        ? new AIMessage({ content: "", tool_calls: [{ id: `call_${round}`, name: "search", args: { query: `round ${round}` } }] })
        : new AIMessage("All rounds done.");
    answeredAt.push(now());
    return { generations: [{ text: typeof message.content === "string" ? message.content : "", message }] };
  }
}

const search = tool(
  async ({ query }) => {
    const step = Number(query.split(" ")[1]);
    if (sideEffects) await sideEffects.record("langgraph", thread, step);
    return "Web search is not configured.";
  },
  { name: "search", description: "Search the web.", schema: z.object({ query: z.string() }) },
);
const model = new ScriptedModel({}).bindTools([search]);
const graph = new StateGraph(MessagesAnnotation)
  .addNode("agent", async (state) => ({ messages: [await model.invoke(state.messages)] }))
  .addNode("tools", new ToolNode([search]))
  .addEdge(START, "agent")
  .addConditionalEdges("agent", (state) => (state.messages.at(-1).tool_calls?.length ? "tools" : END))
  .addEdge("tools", "agent")
  .compile({ checkpointer: saver });

if (mode === "time") {
  const gaps = [];
  for (let session = 0; session < sessions + 1; session++) {
    calledAt = [];
    answeredAt = [];
    await graph.invoke({ messages: [new HumanMessage(`Fifty rounds (${session})`)] }, { configurable: { thread_id: `${thread}-${session}` }, recursionLimit: 10_000, ...durability });
    if (session > 0) gaps.push(...gapsOf(calledAt, answeredAt));
  }
  send({ gaps });
} else if (mode === "crash") {
  send({ started: thread });
  await graph.invoke({ messages: [new HumanMessage("Fifty rounds")] }, { configurable: { thread_id: thread }, recursionLimit: 10_000, ...durability });
} else {
  // What a person would do after the crash: continue the thread from its last checkpoint,
  // or start the task again when there is none.
  const config = { configurable: { thread_id: thread }, recursionLimit: 10_000, ...durability };
  const state = await graph.getState(config);
  const kept = state.values.messages ? toolRounds(state.values.messages) : 0;
  send({ kept, checkpoint: state.values.messages !== undefined });
  if (state.values.messages) await graph.invoke(null, config);
  else await graph.invoke({ messages: [new HumanMessage("Fifty rounds")] }, config);
  send({ done: true });
}
await sideEffects?.close();
await saver.end();
process.exit(0);
