import type { ModelMessage } from "ai";
import { describe, expect, it } from "vitest";
import type { Message } from "@/lib/db/schema";
import { AWAITING_APPROVAL_RESULT } from "@/lib/core/formats";
import { INTERRUPTED_RESULT, SUMMARY_PREFIX, fromModelMessages, toModelMessages } from "./model-messages";

let n = 0;
function stored(partial: Partial<Message> & Pick<Message, "role" | "content">): Message {
  n += 1;
  return {
    id: `m${n}`,
    conversationId: "c",
    thinking: null,
    toolCalls: null,
    toolCallId: null,
    inboxItemId: null,
    taskId: null,
    previousMessageId: null,
    createdAt: new Date(),
    ...partial,
  };
}

describe("stored messages ↔ ModelMessages", () => {
  const conversation = [
    stored({ role: "summary", content: "Earlier: the user wants NVDA news." }),
    stored({ role: "user", content: "What is NVDA price?" }),
    stored({
      role: "assistant",
      content: "Let me check the current price...",
      thinking: "Search first.",
      toolCalls: [
        { toolCallId: "call_1", toolName: "tavilySearch", args: { query: "NVDA stock price" } },
        { toolCallId: "call_2", toolName: "searchKnowledge", args: { query: "NVDA" } },
      ],
    }),
    stored({ role: "tool", toolCallId: "call_1", content: '{"price":142.5,"change":"+2.3%"}' }),
    stored({ role: "tool", toolCallId: "call_2", content: "No knowledge items match." }),
    stored({ role: "assistant", content: "NVIDIA is currently trading at $142.50, up 2.3% today." }),
  ];

  it("converts tool calls to tool-call parts and results to tool-result parts with their tool names", () => {
    const model = toModelMessages(conversation);
    expect(model.map((m) => m.role)).toEqual(["user", "user", "assistant", "tool", "assistant"]);
    expect(model[0]).toEqual({ role: "user", content: `${SUMMARY_PREFIX}Earlier: the user wants NVDA news.` });
    expect(model[2]).toEqual({
      role: "assistant",
      content: [
        { type: "reasoning", text: "Search first." },
        { type: "text", text: "Let me check the current price..." },
        { type: "tool-call", toolCallId: "call_1", toolName: "tavilySearch", input: { query: "NVDA stock price" } },
        { type: "tool-call", toolCallId: "call_2", toolName: "searchKnowledge", input: { query: "NVDA" } },
      ],
    });
    expect(model[3]).toEqual({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "call_1",
          toolName: "tavilySearch",
          output: { type: "json", value: { price: 142.5, change: "+2.3%" } },
        },
        {
          type: "tool-result",
          toolCallId: "call_2",
          toolName: "searchKnowledge",
          output: { type: "text", value: "No knowledge items match." },
        },
      ],
    });
  });

  it("round-trips stored → ModelMessage → stored without loss", () => {
    const back = fromModelMessages(toModelMessages(conversation));
    expect(back).toEqual(
      conversation.map((m) => ({
        role: m.role,
        content: m.content,
        ...(m.role === "assistant" ? { thinking: m.thinking, toolCalls: m.toolCalls } : {}),
        ...(m.role === "tool" ? { toolCallId: m.toolCallId } : {}),
      })),
    );
  });

  it("round-trips ModelMessage → stored → ModelMessage", () => {
    const model: ModelMessage[] = [
      { role: "user", content: "hello" },
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "t1", toolName: "getTeamStatus", input: {} }] },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "t1",
            toolName: "getTeamStatus",
            output: { type: "json", value: { members: [] } },
          },
        ],
      },
      { role: "assistant", content: [{ type: "text", text: "All quiet." }] },
    ];
    const again = toModelMessages(
      fromModelMessages(model).map((m) =>
        stored({
          ...m,
          thinking: m.thinking ?? null,
          toolCalls: m.toolCalls ?? null,
          toolCallId: m.toolCallId ?? null,
        }),
      ),
    );
    expect(again).toEqual(model);
  });

  it("keeps a tool result right after its call when another writer's message landed in between", () => {
    const model = toModelMessages([
      stored({
        role: "assistant",
        content: "",
        toolCalls: [{ toolCallId: "c9", toolName: "tavilySearch", args: { query: "x" } }],
      }),
      stored({ role: "user", content: "Subordinate Scout reports: done" }),
      stored({ role: "tool", toolCallId: "c9", content: "results" }),
    ]);
    expect(model.map((m) => m.role)).toEqual(["assistant", "tool", "user"]);
  });

  it("gives a call without a result an explicit interrupted result", () => {
    const model = toModelMessages([
      stored({
        role: "assistant",
        content: "",
        toolCalls: [{ toolCallId: "lost", toolName: "tavilySearch", args: {} }],
      }),
    ]);
    expect(model[1]).toEqual({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "lost",
          toolName: "tavilySearch",
          output: { type: "error-text", value: INTERRUPTED_RESULT },
        },
      ],
    });
  });

  it("tells the model a call waiting for the person's approval is waiting, not interrupted", () => {
    const model = toModelMessages(
      [
        stored({
          role: "assistant",
          content: "",
          toolCalls: [
            { toolCallId: "held", toolName: "addKnowledgeItem", args: {} },
            { toolCallId: "ran", toolName: "tavilySearch", args: {} },
          ],
        }),
        stored({ role: "tool", toolCallId: "ran", content: "results" }),
      ],
      { awaitingDecision: new Set(["held"]) },
    );
    expect(model[1]).toEqual({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "held",
          toolName: "addKnowledgeItem",
          output: { type: "text", value: AWAITING_APPROVAL_RESULT },
        },
        {
          type: "tool-result",
          toolCallId: "ran",
          toolName: "tavilySearch",
          output: { type: "text", value: "results" },
        },
      ],
    });
  });
});
