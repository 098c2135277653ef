import { z } from "zod";
import { channelFields } from "@/lib/notifications/channels";

export const updateChannelBody = z
  .strictObject({
    name: channelFields.name.optional(),
    url: channelFields.url.optional(),
    recipient: channelFields.recipient.optional(),
    kinds: channelFields.kinds.optional(),
    enabled: z.boolean().optional(),
  })
  .refine((body) => Object.keys(body).length > 0, "Nothing to change: send name, url, recipient, kinds or enabled.");
