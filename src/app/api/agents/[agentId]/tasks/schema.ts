import { z } from "zod";

export const createTaskBody = z.strictObject({
  title: z.string().trim().min(1, "title is required").max(200),
  description: z.string().max(20000).default(""),
});
