// An optional quality grade for what the matching cannot see (does the briefing answer the
// questions, is it clear, does it say where sources disagree), from the configured model. Only
// with a real model: the offline model cannot judge. The planted findings and decoys stay the
// scores that count; a grade is one model's opinion, and a model grading its own team's work
// is lenient, so compare grades across runs judged by the same model only.
import { generateText, Output, type LanguageModel } from "ai";
import { z } from "zod";
import type { Mission } from "./missions";
import type { Briefing } from "./score";

export type Judgement = { quality: number; reasons: string };

const verdict = z.object({
  quality: z.number().int().min(1).max(5).describe("1 poor … 5 excellent"),
  reasons: z.string().describe("Two or three sentences: what is good, what is missing or wrong"),
});

const INSTRUCTIONS = [
  "You grade a research briefing that a team of agents wrote for a person.",
  "Grade it from 1 (poor) to 5 (excellent): does it answer each of the person's questions, with the figures right and",
  "the source of each given as a link; does it avoid the wrong claims listed; is it clear and short enough to act on.",
  "The facts listed are the truth for this grading, whatever you believe you know.",
].join(" ");

export async function judgeBriefings(
  model: LanguageModel,
  mission: Mission,
  briefings: readonly Briefing[],
  options: { timeoutMs?: number } = {},
): Promise<Judgement> {
  if (briefings.length === 0) return { quality: 1, reasons: "No briefing arrived." };
  const prompt = [
    "## What the person asked",
    mission.message,
    "## What careful research finds",
    ...mission.findings.map((finding) => `- ${finding.what}`),
    "## Wrong claims that circulate (a good briefing does not repeat them as fact)",
    ...mission.decoys.map((decoy) => `- ${decoy.what}`),
    "## The briefing",
    ...briefings.map((briefing) => `### ${briefing.title}\n\n${briefing.summary}\n\n${briefing.content}`),
  ].join("\n\n");
  const { output } = await generateText({
    model,
    instructions: INSTRUCTIONS,
    prompt,
    output: Output.object({ schema: verdict }),
    abortSignal: AbortSignal.timeout(options.timeoutMs ?? 120_000),
  });
  return output;
}
