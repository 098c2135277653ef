import { z } from "zod";
import { TIMELINE_PAGE_SIZE, timelineKinds } from "@/lib/views/timeline";

export const timelineQuery = z.strictObject({
  /** The `nextCursor` of the page before: entries older than its last one. */
  before: z.string().max(100).optional(),
  agentId: z.uuid().optional(),
  kind: z.enum(timelineKinds).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(TIMELINE_PAGE_SIZE),
});
