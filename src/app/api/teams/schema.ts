import { z } from "zod";

export const createTeamBody = z.strictObject({
  name: z.string().trim().min(1, "name is required").max(120),
  mission: z.string().trim().min(1, "mission is required").max(4000),
  leadName: z.string().trim().min(1).max(120).optional(),
  instructions: z.string().max(20000).optional(),
});
