import { z } from "zod";
import { CHAT_PAGE_SIZE } from "@/lib/views/chat-messages";

export const workLogQuery = z
  .strictObject({
    /** The id of the oldest message a page returned: the page before it. */
    before: z.uuid().optional(),
    /** A message of the log: the page that shows it (a few messages before it, and everything after). */
    around: z.uuid().optional(),
    limit: z.coerce.number().int().min(1).max(500).default(CHAT_PAGE_SIZE),
  })
  .refine(
    (query) => !(query.before && query.around),
    "Give before (to page back) or around (to open at a message), not both.",
  );
