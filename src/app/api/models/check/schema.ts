import { z } from "zod";

/** `{ model? }`: the model to check on the configured server; none: the configured one. */
export const checkModelBody = z.strictObject({
  model: z.string().trim().min(1).max(200).optional(),
});
