import { z } from "zod";

export const answerBody = z.strictObject({
  answer: z.string().trim().min(1, "answer is required").max(8000),
});
