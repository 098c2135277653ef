import type { LanguageModelV4Message, LanguageModelV4Prompt } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { CONVERSATION_OPENING, JOINED_MESSAGES_SEPARATOR } from "@/lib/core/prompts";
import { alternatingPrompt, separatedPrompt } from "./alternating-prompt";

const system = (text: string): LanguageModelV4Message => ({ role: "system", content: text });
const user = (text: string): LanguageModelV4Message => ({ role: "user", content: [{ type: "text", text }] });
const assistant = (text: string): LanguageModelV4Message => ({
  role: "assistant",
  content: [{ type: "text", text }],
});
const calling = (id: string): LanguageModelV4Message => ({
  role: "assistant",
  content: [{ type: "tool-call", toolCallId: id, toolName: "getTeamStatus", input: "{}" }],
});
const result = (id: string): LanguageModelV4Message => ({
  role: "tool",
  content: [{ type: "tool-result", toolCallId: id, toolName: "getTeamStatus", output: { type: "text", value: "ok" } }],
});
const joined = (...texts: string[]) => texts.join(JOINED_MESSAGES_SEPARATOR);

/** The roles in order, as a strict template checks them. */
const roles = (prompt: LanguageModelV4Prompt) => prompt.map((message) => message.role).join(" ");

describe("alternatingPrompt", () => {
  it("joins two reports that came together into one user message, in order", () => {
    const shaped = alternatingPrompt([system("S"), user("Task"), calling("c1"), result("c1"), user("R1"), user("R2")]);
    expect(roles(shaped)).toBe("system user assistant tool user");
    expect(shaped.at(-1)).toEqual(user(joined("R1", "R2")));
  });

  it("leaves a conversation that alternates as it is, the same objects", () => {
    const prompt = [system("S"), user("Task"), calling("c1"), result("c1"), assistant("Done"), user("More")];
    const shaped = alternatingPrompt(prompt);
    expect(shaped).toEqual(prompt);
    for (const [index, message] of shaped.entries()) expect(message).toBe(prompt[index]);
  });

  it("opens a conversation that starts with the agent's own words, and joins its briefings", () => {
    const shaped = alternatingPrompt([system("S"), assistant("Briefing 1"), assistant("Briefing 2"), user("Hi")]);
    expect(shaped).toEqual([
      system("S"),
      user(CONVERSATION_OPENING),
      assistant(joined("Briefing 1", "Briefing 2")),
      user("Hi"),
    ]);
  });

  it("never joins an assistant message that called tools with the next one: its results must follow it", () => {
    const shaped = alternatingPrompt([user("Task"), calling("c1"), assistant("(stopped)")]);
    expect(roles(shaped)).toBe("user assistant assistant");
  });

  it("joins words before calls, keeps reasoning first and the calls after the text", () => {
    const shaped = alternatingPrompt([
      user("Task"),
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "think" },
          { type: "text", text: "A" },
        ],
      },
      {
        role: "assistant",
        content: [
          { type: "text", text: "B" },
          { type: "tool-call", toolCallId: "c2", toolName: "x", input: "{}" },
        ],
      },
    ]);
    expect(shaped[1]).toEqual({
      role: "assistant",
      content: [
        { type: "reasoning", text: "think" },
        { type: "text", text: joined("A", "B") },
        { type: "tool-call", toolCallId: "c2", toolName: "x", input: "{}" },
      ],
    });
  });

  it("drops empty words when it joins, and a later system message reads as the user's", () => {
    expect(alternatingPrompt([user("Task"), assistant(""), assistant("Done")])[1]).toEqual(assistant("Done"));
    expect(alternatingPrompt([system("S"), user("Task"), system("Note")])).toEqual([
      system("S"),
      user(joined("Task", "Note")),
    ]);
  });

  it("keeps each request an extension of the one before it when the next one adds an answer and input", () => {
    const first: LanguageModelV4Prompt = [system("S"), user("Note"), user("Task")];
    const next: LanguageModelV4Prompt = [...first, calling("c1"), result("c1"), user("R1"), user("R2")];
    const shapedFirst = alternatingPrompt(first);
    expect(alternatingPrompt(next).slice(0, shapedFirst.length)).toEqual(shapedFirst);
  });

  it("separatedPrompt gives the messages back as they were", () => {
    const prompt: LanguageModelV4Prompt = [
      system("S"),
      assistant("Briefing 1"),
      assistant("Briefing 2"),
      user("Task"),
      calling("c1"),
      result("c1"),
      user("R1"),
      user("R2"),
    ];
    expect(separatedPrompt(alternatingPrompt(prompt))).toEqual(prompt);
  });
});
