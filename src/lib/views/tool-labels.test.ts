import { describe, expect, it } from "vitest";
import { notRunReason } from "./plain-words";
import { citedSources, describeToolCall, searchSources, storedCallState } from "./tool-labels";

describe("describeToolCall", () => {
  it("reads each tool call as a person would say it, in the tense of its state", () => {
    expect(describeToolCall("tavilySearch", { query: "solid-state batteries" }, "running")).toBe(
      "Searching the web for “solid-state batteries”",
    );
    expect(describeToolCall("tavilySearch", { query: "solid-state batteries" }, "done")).toBe(
      "Searched the web for “solid-state batteries”",
    );
    expect(
      describeToolCall("delegateToAgent", { agentId: "x", title: "Find prices" }, "done", {
        delegated: true,
        to: "Scout",
      }),
    ).toBe("Delegated to Scout: “Find prices”");
    expect(describeToolCall("readWebPage", { url: "https://www.example.com/a" }, "done")).toBe("Read example.com");
    expect(describeToolCall("createTask", { title: "Research" }, "waiting")).toBe("Creating a task: “Research”");
    expect(describeToolCall("tavilySearch", { query: "x" }, "error")).toBe("Failed: Searched the web for “x”");
    expect(describeToolCall("files__read", {}, "done")).toBe("Used read (files)");
    expect(describeToolCall("addKnowledgeItem", { type: "fact", content: "a".repeat(200) }, "done")).toMatch(
      /^Saved fact: “a{79}…”$/,
    );
  });

  it("survives input that is not what the tool takes", () => {
    expect(describeToolCall("tavilySearch", null, "done")).toBe("Searched the web for ");
    expect(describeToolCall("delegateToAgent", "nonsense", "running")).toBe("Delegating to a subordinate: ");
  });
});

describe("searchSources", () => {
  it("takes tavilySearch's results as links, only http(s)", () => {
    const output = {
      query: "q",
      results: [
        { title: "Batteries", url: "https://www.example.com/b", content: "500 Wh/kg" },
        { title: "Evil", url: "javascript:alert(1)", content: "" },
        { title: "", url: "http://news.example.org/x", content: "" },
        { url: "not a url" },
      ],
    };
    expect(searchSources("tavilySearch", output)).toEqual([
      { title: "Batteries", url: "https://www.example.com/b", host: "example.com", content: "500 Wh/kg" },
      { title: "news.example.org", url: "http://news.example.org/x", host: "news.example.org", content: "" },
    ]);
    expect(searchSources("readWebPage", output)).toEqual([]);
    expect(searchSources("tavilySearch", "Web search failed: 500")).toEqual([]);
  });
});

describe("citedSources", () => {
  it("lists a briefing's links once each, Markdown and bare, http(s) only", () => {
    const text =
      "See [the IEA report](https://iea.org/r) and https://example.com/a. Again [IEA](https://iea.org/r); [bad](javascript:alert(1)) ftp://x.org";
    expect(citedSources(text)).toEqual([
      { url: "https://iea.org/r", label: "the IEA report" },
      { url: "https://example.com/a", label: "example.com" },
    ]);
  });
});

describe("storedCallState", () => {
  it("reads a call that never ran as not run, not as done", () => {
    expect(
      storedCallState({
        content:
          "(not run: only createInboxItem can be called now, at the end of this session; new work waits for the next one)",
      }),
    ).toBe("not-run");
    expect(storedCallState({ content: '(not run: its task "Check" was cancelled)' })).toBe("not-run");
    expect(storedCallState({ content: '{"delegated":true}' })).toBe("done");
    expect(storedCallState({ content: "Error: boom", failed: true })).toBe("error");
    expect(storedCallState(null, "waiting")).toBe("waiting");
    expect(
      notRunReason(
        "(not run: only createInboxItem can be called now, at the end of this session; new work waits for the next one)",
      ),
    ).not.toMatch(/createInboxItem|\(/);
    expect(notRunReason('(not run: its task "Check" was cancelled)')).toBe('Its task "Check" was cancelled.');
  });
});
