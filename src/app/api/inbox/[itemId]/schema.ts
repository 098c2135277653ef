import { z } from "zod";

/** Read or unread, archived or back in the inbox; one or both at once. */
export const updateInboxItemBody = z
  .strictObject({ read: z.boolean().optional(), archived: z.boolean().optional() })
  .refine((body) => body.read !== undefined || body.archived !== undefined, {
    message: "Send `read`, `archived` or both.",
  });
