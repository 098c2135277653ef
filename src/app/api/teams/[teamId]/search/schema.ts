import { z } from "zod";
import { MAX_SEARCH_CHARS, SEARCH_PAGE_SIZE } from "@/lib/views/message-search";

export const searchQuery = z.strictObject({
  /** Words, "a phrase", -excluded, or: as in a web search (Postgres websearch_to_tsquery). */
  q: z.string({ message: "q is required: the words to search for" }).max(MAX_SEARCH_CHARS),
  /** The `nextCursor` of the page before: older matches. */
  before: z.string().max(100).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(SEARCH_PAGE_SIZE),
});
