import { describe, expect, it } from "vitest";
import { chatMessageShowing, mergeNewest, type ApiMessage } from "./chat-messages";

/** A conversation's chain m0 → m1 → … as the API returns it. */
function chain(length: number): ApiMessage[] {
  return Array.from({ length }, (_, index) => ({
    id: `m${index}`,
    role: index % 2 === 0 ? "user" : "assistant",
    content: `message ${index}`,
    thinking: null,
    toolCalls: null,
    toolCallId: null,
    previousMessageId: index === 0 ? null : `m${index - 1}`,
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(),
  }));
}

const ids = (messages: readonly ApiMessage[] | null) => messages?.map((message) => message.id) ?? null;

describe("mergeNewest", () => {
  const all = chain(12);

  it("adds what was written since to what is loaded", () => {
    expect(ids(mergeNewest(all.slice(0, 6), all.slice(3, 9)))).toEqual(ids(all.slice(0, 9)));
    // The page starts right after the last loaded message.
    expect(ids(mergeNewest(all.slice(0, 6), all.slice(6, 9)))).toEqual(ids(all.slice(0, 9)));
  });

  it("keeps older pages the person loaded above the newest page", () => {
    expect(ids(mergeNewest(all.slice(2, 8), all.slice(5, 12)))).toEqual(ids(all.slice(2, 12)));
  });

  it("never hides a message when an older read answers after a newer one", () => {
    // Two overlapping refetches: the second (newer) one answered first and showed m0…m9.
    const shown = mergeNewest(all.slice(0, 6), all.slice(0, 10))!;
    expect(ids(shown)).toEqual(ids(all.slice(0, 10)));
    // The first read (m0…m7, started earlier) answers last: m8 and m9 stay.
    expect(ids(mergeNewest(shown, all.slice(0, 8)))).toEqual(ids(all.slice(0, 10)));
    // Also when the late page does not start the conversation.
    expect(ids(mergeNewest(all.slice(2, 10), all.slice(4, 8)))).toEqual(ids(all.slice(2, 10)));
    // And an empty page read before the first message was written.
    expect(ids(mergeNewest(all.slice(0, 2), []))).toEqual(["m0", "m1"]);
  });

  it("takes the page's copy of a message both hold", () => {
    const edited = all.slice(3, 6).map((message) => ({ ...message, content: `${message.content} (read again)` }));
    const merged = mergeNewest(all.slice(0, 6), edited)!;
    expect(merged.map((message) => message.content).slice(3)).toEqual([
      "message 3 (read again)",
      "message 4 (read again)",
      "message 5 (read again)",
    ]);
  });

  it("is null when the page does not reach what is loaded (more than a page was written)", () => {
    expect(mergeNewest(all.slice(0, 4), all.slice(6, 12))).toBeNull();
  });

  it("starts from the page when nothing is loaded", () => {
    expect(ids(mergeNewest([], all.slice(0, 3)))).toEqual(["m0", "m1", "m2"]);
    expect(mergeNewest([], all.slice(4, 6))).toBeNull();
  });
});

describe("chatMessageShowing", () => {
  it("names the reply a stored row is part of: a tool call's result shows in the reply that made the call", () => {
    const [question, call] = chain(2);
    const stored: ApiMessage[] = [
      question!,
      { ...call!, content: "", toolCalls: [{ toolCallId: "c1", toolName: "addKnowledgeItem", args: {} }] },
      { ...call!, id: "m2", role: "tool", content: "saved", toolCallId: "c1", previousMessageId: "m1" },
      { ...call!, id: "m3", content: "Saved it.", previousMessageId: "m2" },
      { ...question!, id: "m4", previousMessageId: "m3" },
    ];
    expect(chatMessageShowing(stored, "m1")).toBe("m1");
    expect(chatMessageShowing(stored, "m2")).toBe("m1");
    expect(chatMessageShowing(stored, "m3")).toBe("m1");
    expect(chatMessageShowing(stored, "m4")).toBe("m4");
    expect(chatMessageShowing(stored, "elsewhere")).toBeUndefined();
    expect(chatMessageShowing(stored, undefined)).toBeUndefined();
  });
});
