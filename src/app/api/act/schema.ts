import { z } from "zod";

/** The one click on an action link's page: nothing to approve, an optional reason to deny, the words of an answer. */
// Messages without the field's name: the error response puts the path before them.
export const actBody = z.strictObject({
  reason: z.string().trim().max(2000).optional(),
  answer: z.string().trim().min(1, "write your answer first").max(8000).optional(),
});
