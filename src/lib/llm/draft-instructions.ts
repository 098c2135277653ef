import { generateText, Output } from "ai";
import { z } from "zod";
import { CadreError } from "@/lib/errors";
import { describeModelError } from "./errors";
import { chooseModel } from "./provider";

const draftSchema = z.object({
  instructions: z.string().min(1).describe("The lead's standing instructions (system prompt), in the second person, as short Markdown bullets"),
});

/**
 * A first draft of a new team lead's instructions, written by the model from the team's
 * name and mission (structured output). The person edits it before the team is created.
 */
export async function draftLeadInstructions(input: { name: string; mission: string }, signal?: AbortSignal): Promise<string> {
  const { model } = chooseModel();
  try {
    const { output } = await generateText({
      model,
      output: Output.object({ schema: draftSchema, name: "lead_instructions" }),
      system:
        "You write the standing instructions for the lead agent of a research team. The lead chats with a person, " +
        "breaks the mission into tasks, delegates them to subordinates, keeps a knowledge base and sends briefings. " +
        "Write 4 to 8 short bullets: how to approach the mission, what to delegate, when to brief, what a good briefing contains.",
      prompt: `Team: ${input.name}\nMission: ${input.mission}`,
      abortSignal: signal,
      maxRetries: 1,
    });
    return output.instructions.trim();
  } catch (error) {
    console.error("Drafting lead instructions failed:", error);
    throw new CadreError("unavailable:model", `Could not draft the instructions. ${describeModelError(error)} You can still write them yourself.`, { cause: error });
  }
}
