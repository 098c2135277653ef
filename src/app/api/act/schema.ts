import { z } from "zod";

/** The one click on an action link's page: nothing to approve, an optional reason to deny, the words of an answer. */
export const actBody = z.strictObject({
  reason: z.string().trim().max(2000).optional(),
  answer: z.string().trim().min(1, "answer: write your answer first").max(8000).optional(),
});
