/**
 * A lead's schedule as a person picks it: every hour, every day at a time, weekdays at a time,
 * once a week, or the default; anything else is "advanced" and stays the cron it was. The stored
 * value is still the cron (PATCH /api/agents/:id `schedule`), so a preset is only a way to write
 * one. Client-safe, like schedule-preview.ts.
 */

const scheduleKinds = ["default", "hourly", "daily", "weekdays", "weekly", "advanced"] as const;
export type ScheduleKind = (typeof scheduleKinds)[number];

/** `time` is "HH:MM" (what an <input type="time"> holds); `day` 0–6 from Sunday, as cron counts. */
export type ScheduleChoice = { kind: ScheduleKind; minute: number; time: string; day: number; cron: string };

export const WEEKDAY_NAMES = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"] as const;

const number = (field: string, max: number): number | null =>
  /^\d{1,2}$/.test(field) && Number(field) <= max ? Number(field) : null;
const hhmm = (hour: number, minute: number) => `${String(hour).padStart(2, "0")}:${String(minute).padStart(2, "0")}`;

/** The preset a stored schedule reads as; null is the default schedule, and a cron no preset writes opens as advanced. */
export function choiceOf(cron: string | null): ScheduleChoice {
  const blank: ScheduleChoice = { kind: "default", minute: 0, time: "08:00", day: 1, cron: cron ?? "" };
  if (cron === null || cron.trim() === "") return blank;
  const fields = cron.trim().split(/\s+/);
  const advanced = { ...blank, kind: "advanced" as const, cron: cron.trim() };
  if (fields.length !== 5) return advanced;
  const [minuteField, hourField, dayOfMonth, month, dayOfWeek] = fields as [string, string, string, string, string];
  const minute = number(minuteField, 59);
  if (minute === null || dayOfMonth !== "*" || month !== "*") return advanced;
  if (hourField === "*" && dayOfWeek === "*") return { ...advanced, kind: "hourly", minute };
  const hour = number(hourField, 23);
  if (hour === null) return advanced;
  const time = hhmm(hour, minute);
  if (dayOfWeek === "*") return { ...advanced, kind: "daily", time };
  if (dayOfWeek === "1-5") return { ...advanced, kind: "weekdays", time };
  const day = /^[0-7]$/.test(dayOfWeek) ? Number(dayOfWeek) % 7 : null;
  return day === null ? advanced : { ...advanced, kind: "weekly", time, day };
}

/** The cron a choice stores; null for the default (the agent follows LEAD_SCHEDULE). */
export function cronOf(choice: ScheduleChoice): string | null {
  const [hour = 8, minute = 0] = /^\d{1,2}:\d{2}$/.test(choice.time) ? choice.time.split(":").map(Number) : [];
  switch (choice.kind) {
    case "default":
      return null;
    case "hourly":
      return `${choice.minute} * * * *`;
    case "daily":
      return `${minute} ${hour} * * *`;
    case "weekdays":
      return `${minute} ${hour} * * 1-5`;
    case "weekly":
      return `${minute} ${hour} * * ${choice.day}`;
    case "advanced":
      return choice.cron.trim() || null;
  }
}
