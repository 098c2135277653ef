import { CronExpressionParser } from "cron-parser";
import { z } from "zod";

/** pg-boss reads schedules with cron-parser; refusing here what it would refuse later keeps a bad cron from breaking a lead's runs. */
function isCron(value: string): boolean {
  try {
    CronExpressionParser.parse(value, { strict: false });
    return true;
  } catch {
    return false;
  }
}

export const updateAgentBody = z
  .strictObject({
    name: z.string().trim().min(1).max(120).optional(),
    instructions: z.string().max(20000).optional(),
    model: z.string().trim().min(1).max(200).nullable().optional(),
    schedule: z.string().trim().min(1).max(120).refine(isCron, 'schedule must be a cron expression, such as "0 8 * * *"').nullable().optional(),
  })
  .refine((body) => Object.keys(body).length > 0, "Nothing to change: send name, instructions, model or schedule.");
