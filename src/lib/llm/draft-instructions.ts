import "server-only";
import { Output } from "ai";
import { z } from "zod";
import type { Db } from "@/lib/db/client";
import { CadreError } from "@/lib/errors";
import { describeModelError } from "./errors";
import { generateModelText } from "./model-call";
import { chooseModel, type ModelChoice } from "./provider";
import { logError } from "@/lib/telemetry/log";

const draftSchema = z.object({
  instructions: z
    .string()
    .min(1)
    .describe("The lead's standing instructions (system prompt), in the second person, as short Markdown bullets"),
});

/**
 * A first draft of a new team lead's instructions, written by the model from the team's
 * name and mission (structured output). The person edits it before the team is created.
 * With `current` (and the person's `request`), a revision of existing instructions instead,
 * which the person reviews before saving. The call belongs to no agent yet: its usage row has no agent and the purpose "draft".
 */
export async function draftLeadInstructions(
  db: Db,
  input: { name: string; mission: string; current?: string; request?: string },
  options: { abortSignal?: AbortSignal; model?: ModelChoice; timeoutMs?: number } = {},
): Promise<string> {
  const { abortSignal, model = chooseModel(), timeoutMs } = options;
  try {
    const { output } = await generateModelText(
      { db, model, purpose: "draft", agentId: null, teamId: null, abortSignal, timeoutMs },
      {
        output: Output.object({ schema: draftSchema, name: "lead_instructions" }),
        instructions:
          "You write the standing instructions for the lead agent of a research team. The lead chats with a person, " +
          "breaks the mission into tasks, delegates them to subordinates, keeps a knowledge base and sends briefings. " +
          "Write 4 to 8 short bullets: how to approach the mission, what to delegate, when to brief, what a good briefing contains.",
        prompt: input.current?.trim()
          ? // A revision: the person's own text stays the base, changed only as they ask.
            `Team: ${input.name}\nMission: ${input.mission}\n\nRevise these instructions${input.request?.trim() ? ` as the person asks: ${input.request.trim()}` : " to be clearer and more useful"}. ` +
            `Keep what they say unless asked otherwise.\n\nCurrent instructions:\n${input.current.trim()}`
          : `Team: ${input.name}\nMission: ${input.mission}`,
      },
    );
    return output.instructions.trim();
  } catch (error) {
    // The error itself, not its message: the log keeps its cause and stack.
    logError("Drafting lead instructions failed:", error);
    throw new CadreError(
      "unavailable:model",
      `Could not draft the instructions. ${describeModelError(error)} You can still write them yourself.`,
      { cause: error },
    );
  }
}
