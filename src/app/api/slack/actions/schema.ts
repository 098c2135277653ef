import { z } from "zod";

/**
 * What Slack posts when a button is pressed (`payload`, JSON in a form field): only the fields
 * Cadre reads, the rest of Slack's (many, and changing) fields ignored. Which button, its value
 * (the signed token), who pressed it, and where to send the updated message.
 */
export const slackPayload = z.object({
  type: z.string().max(100),
  user: z.object({
    id: z.string().max(100),
    username: z.string().max(200).optional(),
    name: z.string().max(200).optional(),
  }),
  actions: z
    .array(z.object({ action_id: z.string().max(255), value: z.string().max(2000).optional() }))
    .max(25)
    .default([]),
  response_url: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .optional(),
  message: z.object({ text: z.string().max(40_000).optional() }).optional(),
});
