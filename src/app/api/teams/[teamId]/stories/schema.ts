import { z } from "zod";
import { STORY_PAGE_SIZE } from "@/lib/views/stories";
import { timelineKinds } from "@/lib/views/timeline";

export const storiesQuery = z.strictObject({
  /** The `nextCursor` of the page before: stories older than its last one. */
  before: z.string().max(100).optional(),
  agentId: z.uuid().optional(),
  kind: z.enum(timelineKinds).optional(),
  limit: z.coerce.number().int().min(1).max(50).default(STORY_PAGE_SIZE),
});
