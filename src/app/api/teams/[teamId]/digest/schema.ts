import { z } from "zod";
import { daysOf, MAX_DIGEST_DAYS } from "@/lib/export/digest";

const DAY_MS = 24 * 60 * 60 * 1000;

/** A calendar date that exists (2026-02-30 does not). */
const date = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be a date as YYYY-MM-DD" })
  .refine((value) => !Number.isNaN(Date.parse(`${value}T00:00:00Z`)) && new Date(`${value}T00:00:00Z`).toISOString().startsWith(value), { message: "is not a date that exists" });

const isoDay = (at: number) => new Date(at).toISOString().slice(0, 10);

/** `from` and `to` (UTC days, both included); unset: the last 7 days up to today. */
export const digestQuery = z
  .strictObject({ from: date.optional(), to: date.optional() })
  .transform(({ from, to }) => {
    const end = to ?? isoDay(Date.now());
    return { from: from ?? isoDay(Date.parse(`${end}T00:00:00Z`) - 6 * DAY_MS), to: end };
  })
  .refine((range) => range.from <= range.to, { message: "from: must be on or before to", path: ["from"] })
  .refine((range) => range.from > range.to || daysOf(range).length <= MAX_DIGEST_DAYS, { message: `the range may cover at most ${MAX_DIGEST_DAYS} days`, path: ["to"] });
