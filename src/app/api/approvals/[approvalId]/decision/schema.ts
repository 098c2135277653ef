import { z } from "zod";

/** Approve (as the model sent it, or with edited input) or deny with a reason the model is told. */
export const decisionBody = z.discriminatedUnion("decision", [
  z.strictObject({
    decision: z.literal("approve"),
    /** The edited input; left out, the call runs as the model sent it. */
    input: z.record(z.string(), z.unknown()).optional(),
  }),
  z.strictObject({
    decision: z.literal("deny"),
    reason: z.string().trim().min(1, "a reason is required: the agent is told it").max(2000),
  }),
]);
