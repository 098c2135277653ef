import { z } from "zod";

export const updateAgentBody = z
  .strictObject({
    name: z.string().trim().min(1).max(120).optional(),
    instructions: z.string().max(20000).optional(),
    model: z.string().trim().min(1).max(200).nullable().optional(),
    schedule: z.string().trim().min(1).max(120).nullable().optional(),
  })
  .refine((body) => Object.keys(body).length > 0, "Nothing to change: send name, instructions, model or schedule.");
