import { z } from "zod";
import { dayCount, lastDays, MAX_DIGEST_DAYS } from "@/lib/export/digest";

/** A calendar date that exists (2026-02-30 does not). */
const date = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be a date as YYYY-MM-DD" })
  .refine(
    (value) =>
      !Number.isNaN(Date.parse(`${value}T00:00:00Z`)) && new Date(`${value}T00:00:00Z`).toISOString().startsWith(value),
    { message: "is not a date that exists" },
  )
  // The range's end is read up to the next day's midnight, which must still be a date Postgres takes.
  .refine((value) => value >= "1970-01-01" && value <= "9999-12-30", {
    message: "must be between 1970-01-01 and 9999-12-30",
  });

/** `from` and `to` (UTC days, both included); unset: the last 7 days up to today. */
export const digestQuery = z
  .strictObject({ from: date.optional(), to: date.optional() })
  .transform(({ from, to }) => {
    const week = lastDays(7, to ? new Date(`${to}T00:00:00Z`) : new Date());
    return { from: from ?? week.from, to: to ?? week.to };
  })
  .refine((range) => range.from <= range.to, {
    message: "must be on or before `to` (today when `to` is not given)",
    path: ["from"],
  })
  .refine((range) => range.from > range.to || dayCount(range) <= MAX_DIGEST_DAYS, {
    message: `the range may cover at most ${MAX_DIGEST_DAYS} days`,
    path: ["to"],
  });
