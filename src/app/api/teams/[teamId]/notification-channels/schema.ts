import { z } from "zod";
import { channelFields } from "@/lib/notifications/channels";

export const createChannelBody = z.discriminatedUnion(
  "type",
  [
    z.strictObject({
      type: z.literal("webhook"),
      name: channelFields.name,
      url: channelFields.url,
      kinds: channelFields.kinds,
    }),
    z.strictObject({
      type: z.literal("email"),
      name: channelFields.name,
      recipient: channelFields.recipient,
      kinds: channelFields.kinds,
    }),
  ],
  { error: 'type must be "webhook" (with url) or "email" (with recipient)' },
);
