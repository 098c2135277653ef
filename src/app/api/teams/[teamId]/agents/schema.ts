import { z } from "zod";

export const createAgentBody = z.strictObject({
  name: z.string().trim().min(1, "name is required").max(120),
  instructions: z.string().max(20000).default(""),
  parentAgentId: z.uuid().optional(),
  model: z.string().trim().min(1).max(200).nullable().optional(),
});
