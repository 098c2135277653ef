import { z } from "zod";

export const draftInstructionsBody = z.strictObject({
  name: z.string().trim().min(1, "name is required").max(120),
  mission: z.string().trim().min(1, "mission is required").max(4000),
});
