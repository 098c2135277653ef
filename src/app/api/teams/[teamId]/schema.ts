import { z } from "zod";

export const updateTeamBody = z
  .strictObject({
    name: z.string().trim().min(1).max(120).optional(),
    mission: z.string().trim().min(1).max(4000).optional(),
    status: z.enum(["active", "paused"]).optional(),
  })
  .refine((body) => Object.keys(body).length > 0, "Nothing to change: send name, mission or status.");
