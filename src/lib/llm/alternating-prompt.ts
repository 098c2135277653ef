import "server-only";
import type { LanguageModelV4Message, LanguageModelV4Prompt } from "@ai-sdk/provider";
import { CONVERSATION_OPENING, JOINED_MESSAGES_SEPARATOR } from "@/lib/core/prompts";

type Turn = Extract<LanguageModelV4Message, { role: "user" | "assistant" }>;
type Part = Turn["content"][number];

/**
 * A prompt every chat template accepts, whoever built it: one system message, first; then the
 * user first, and user and assistant turns alternating, tool results (after the assistant
 * message that called them) counting as neither. Many open models' templates (as llama.cpp's
 * server and vLLM apply them) refuse anything else with an HTTP 400, and a log that holds two
 * adjacent reports would then be refused for good.
 *
 * Adjacent messages of one role become one, their texts joined by JOINED_MESSAGES_SEPARATOR; a
 * system message after the first becomes a user message (so the prompt's start never moves); a
 * conversation that starts with the assistant is opened by CONVERSATION_OPENING. The result is
 * a function of the prompt alone, message by message from the start, so a request that extends
 * the one before it still does once shaped: only a run of one role still growing at its tail
 * reads differently, and a request's tail is nearly always the input its answer follows.
 */
export function alternatingPrompt(prompt: LanguageModelV4Prompt): LanguageModelV4Prompt {
  const shaped: LanguageModelV4Prompt = [];
  for (const [index, message] of prompt.entries()) {
    const next: LanguageModelV4Message =
      message.role === "system" && index > 0
        ? { role: "user", content: [{ type: "text", text: message.content }] }
        : message;
    const previous = shaped.at(-1);
    const both = previous && joined(previous, next);
    if (both) {
      shaped[shaped.length - 1] = both;
      continue;
    }
    if (next.role === "assistant" && (previous === undefined || previous.role === "system"))
      shaped.push({ role: "user", content: [{ type: "text", text: CONVERSATION_OPENING }] });
    shaped.push(next);
  }
  return shaped;
}

/**
 * The prompt as it was before alternatingPrompt joined it: each joined message split at the
 * separator again, the opening left out. For a model that reads the log's inputs one by one
 * (the offline model); a text that itself holds the separator is split too.
 */
export function separatedPrompt(prompt: LanguageModelV4Prompt): LanguageModelV4Prompt {
  const separated: LanguageModelV4Prompt = [];
  for (const [index, message] of prompt.entries()) {
    if (message.role === "user" && index <= 1 && textOf(message.content) === CONVERSATION_OPENING) continue;
    if (message.role !== "user" && message.role !== "assistant") {
      separated.push(message);
      continue;
    }
    const pieces = textOf(message.content).split(JOINED_MESSAGES_SEPARATOR);
    if (pieces.length === 1) {
      separated.push(message);
      continue;
    }
    // The other parts (reasoning, tool calls, files) go with the last piece, where an answer's calls belong.
    const others = message.content.filter((part) => part.type !== "text");
    pieces.forEach((text, at) => {
      const content: Part[] = [{ type: "text", text }, ...(at === pieces.length - 1 ? others : [])];
      separated.push({ ...message, content } as Turn);
    });
  }
  return separated;
}

/**
 * Two user messages, or two assistant messages of which the first called no tool (its results
 * must follow it), as one: their texts as one text part (providers send several parts of a user
 * message as a list, which some servers split into messages again), after any reasoning and
 * before any other part (tool calls, files), each kind in order. Null for any other pair.
 */
function joined(previous: LanguageModelV4Message, next: LanguageModelV4Message): LanguageModelV4Message | null {
  const pair =
    (previous.role === "user" && next.role === "user") ||
    (previous.role === "assistant" &&
      next.role === "assistant" &&
      !previous.content.some((part) => part.type === "tool-call"));
  if (!pair) return null;
  const parts = [...previous.content, ...next.content] as Part[];
  const texts = parts.flatMap((part) => (part.type === "text" && part.text ? [part.text] : []));
  const thinking = parts.filter((part) => part.type === "reasoning" || part.type === "reasoning-file");
  const others = parts.filter((part) => !["text", "reasoning", "reasoning-file"].includes(part.type));
  const text: Part[] =
    texts.length > 0 || others.length === 0 ? [{ type: "text", text: texts.join(JOINED_MESSAGES_SEPARATOR) }] : [];
  return { ...previous, content: [...thinking, ...text, ...others] } as LanguageModelV4Message;
}

function textOf(content: readonly Part[]): string {
  return content.map((part) => (part.type === "text" ? part.text : "")).join("");
}
