import { z } from "zod";

export const draftInstructionsBody = z.strictObject({
  name: z.string().trim().min(1, "name is required").max(120),
  mission: z.string().trim().min(1, "mission is required").max(4000),
  /** Instructions to revise rather than draft afresh, and what the person wants changed. */
  current: z.string().max(20000).optional(),
  request: z.string().trim().max(2000).optional(),
});
