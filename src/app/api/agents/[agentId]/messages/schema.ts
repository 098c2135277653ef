import { z } from "zod";

export const messagesQuery = z.object({
  mode: z.enum(["foreground", "background"]).default("foreground"),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  before: z.uuid().optional(),
});
