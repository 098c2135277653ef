import { z } from "zod";
import { isCron, isTimeZone } from "@/lib/domain/schedule-preview";

export const updateAgentBody = z
  .strictObject({
    name: z.string().trim().min(1).max(120).optional(),
    instructions: z.string().max(20000).optional(),
    model: z.string().trim().min(1).max(200).nullable().optional(),
    schedule: z
      .string()
      .trim()
      .min(1)
      .max(120)
      .refine(isCron, 'schedule must be a cron expression, such as "0 8 * * *"')
      .nullable()
      .optional(),
    /** The IANA zone the schedule is read in; null: UTC. */
    scheduleTimeZone: z
      .string()
      .trim()
      .min(1)
      .max(64)
      .refine(isTimeZone, 'scheduleTimeZone must be an IANA time zone, such as "Europe/Berlin" (null: UTC)')
      .nullable()
      .optional(),
  })
  .refine(
    (body) => Object.keys(body).length > 0,
    "Nothing to change: send name, instructions, model, schedule or scheduleTimeZone.",
  );
