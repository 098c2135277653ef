// A model's compatibility card: its profile (model_profiles) in plain words, and what Cadre does
// about each thing it does differently. No ids, no field names, no settings' variable names:
// the README's Models section has those.

import type { ModelProfile } from "@/lib/db/schema";
import { formatTokens } from "@/lib/usage/format";

type Tone = "ok" | "note" | "warn";
export type ModelCardLine = { tone: Tone; text: string };

export type ModelCard = {
  model: string;
  /** offline: the built-in demo model; unchecked: no profile on this server yet; checked; failed: the check could not finish. */
  state: "offline" | "unchecked" | "checked" | "failed";
  summary: string;
  lines: ModelCardLine[];
  /** When it was checked (ISO), for the page to show in the reader's time. */
  checkedAt: string | null;
};

type Profile = Omit<ModelProfile, "checkedAt"> & { checkedAt: Date | string };

export function offlineModelCard(): ModelCard {
  return {
    model: "Built-in demo model",
    state: "offline",
    summary: "It plays every agent and does what Cadre asks by design: it needs no check.",
    lines: [],
    checkedAt: null,
  };
}

/**
 * The card of `model` as `profile` saw it; null: never checked on this server (a new model,
 * another server). `contextBudget`: the estimated tokens above which Cadre compacts a
 * conversation, to set beside the context window the server states.
 */
export function modelCard(model: string, profile: Profile | null, contextBudget: number): ModelCard {
  if (!profile)
    return {
      model,
      state: "unchecked",
      summary:
        "Not checked on this server yet. A check asks it a few small questions to see how it handles tools, messages and token counts.",
      lines: [],
      checkedAt: null,
    };
  const checkedAt = new Date(profile.checkedAt).toISOString();
  if (profile.problem)
    return { model, state: "failed", summary: `The check could not finish. ${profile.problem}`, lines: [], checkedAt };
  const lines = [
    ...toolLines(profile),
    ...roleLines(profile),
    ...usageLines(profile),
    contextLine(profile.contextTokens, contextBudget),
  ];
  const unseen = [
    profile.callsNamedTool,
    profile.callsToolWhenRequired,
    profile.respectsNoTools,
    profile.acceptsConsecutiveRoles,
    profile.reportsUsage,
  ].some((answer) => answer === null);
  if (unseen)
    lines.push({
      tone: "note",
      text: "Some questions went unanswered (a request failed or took too long): check again later.",
    });
  const warnings = lines.filter((line) => line.tone === "warn").length;
  const summary = cannotCallTools(profile)
    ? "This model did not call tools when asked. Agents work through tools, so it cannot do their work: choose a model that supports tool calling."
    : warnings === 0
      ? "This model does what Cadre asks of it."
      : "This model does some things its own way. Cadre works around each:";
  return { model, state: "checked", summary, lines, checkedAt };
}

/** Told to call a tool it answered in words, twice, and left to choose it called none: it cannot call tools (or will not). */
function cannotCallTools(profile: Profile): boolean {
  return (
    profile.callsNamedTool === false && profile.callsToolWhenRequired === false && profile.parallelToolCalls === null
  );
}

function toolLines(profile: Profile): ModelCardLine[] {
  const lines: ModelCardLine[] = [];
  const { callsNamedTool: named, callsToolWhenRequired: required } = profile;
  if (cannotCallTools(profile)) {
    lines.push({
      tone: "warn",
      text: "It answered in words when told to call a tool. With it, a task ends with a message that names the model.",
    });
  } else if (named === false && required === false) {
    lines.push({
      tone: "warn",
      text: "It answers in words when told it must call a tool, though it calls tools by itself. Cadre does not count on being obeyed: what it answers is read as it comes.",
    });
  } else if (named === false || required === false) {
    lines.push({
      tone: "warn",
      text: "It does not always call a tool when told to. Cadre does not count on it: what it answers instead is read as it comes.",
    });
  } else if (named && required) {
    lines.push({ tone: "ok", text: "It calls a tool when told to." });
  }
  if (profile.respectsNoTools === false)
    lines.push({ tone: "warn", text: "This model ignores 'no tools now'; Cadre summarizes without offering tools." });
  else if (profile.respectsNoTools) lines.push({ tone: "ok", text: "It keeps to 'no tools now'." });
  if (profile.parallelToolCalls === false)
    lines.push({ tone: "note", text: "It makes one tool call at a time, so work takes a few more steps." });
  else if (profile.parallelToolCalls) lines.push({ tone: "ok", text: "It makes several tool calls at once." });
  return lines;
}

function roleLines(profile: Profile): ModelCardLine[] {
  if (profile.acceptsConsecutiveRoles === false)
    return [
      {
        tone: "warn",
        text: "Its server refuses two messages in a row from the same side; Cadre sends such messages as one.",
      },
    ];
  if (profile.acceptsConsecutiveRoles)
    return [{ tone: "ok", text: "It takes two messages in a row from the same side." }];
  return [];
}

function usageLines(profile: Profile): ModelCardLine[] {
  if (profile.reportsUsage === false)
    return [
      {
        tone: "warn",
        text: "This server sends no token counts; Cadre estimates them, marks them as estimates, and budgets count them.",
      },
    ];
  if (!profile.reportsUsage) return [];
  return profile.reportsCachedTokens
    ? [{ tone: "ok", text: "It reports token counts, cached tokens included." }]
    : [
        {
          tone: "note",
          text: "It reports token counts but not which came from its cache, so savings from the cache do not show in costs.",
        },
      ];
}

function contextLine(contextTokens: number | null, contextBudget: number): ModelCardLine {
  if (contextTokens === null)
    return {
      tone: "note",
      text: `Its server does not say how much context it takes. If it is less than ${formatTokens(contextBudget)} tokens (a local server often starts with a few thousand), set the context budget below it.`,
    };
  if (contextTokens <= contextBudget)
    return {
      tone: "warn",
      text: `Context: ${formatTokens(contextTokens)} tokens, no more than the ${formatTokens(contextBudget)} Cadre lets a conversation reach before summarizing it: set the context budget below ${formatTokens(contextTokens)}.`,
    };
  return {
    tone: "ok",
    text: `Context: ${formatTokens(contextTokens)} tokens, above the ${formatTokens(contextBudget)} Cadre lets a conversation reach before summarizing it.`,
  };
}
