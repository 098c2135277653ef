import { CronExpressionParser } from "cron-parser";

/**
 * How a lead's schedule reads to a person, and when it runs next. Client-safe (no server
 * imports): the agent editor previews a schedule as it is typed, the server checks it.
 */

/** An IANA time zone name the runtime knows ("Europe/Berlin"); Intl is what pg-boss and cron-parser resolve zones with. */
export function isTimeZone(value: string): boolean {
  // Area/Location as IANA spells it: Intl also takes offsets ("+05:30"), legacy names
  // ("EST5EDT") and any casing, which would be stored as typed and read back unlike the README.
  if (!/^(UTC|[A-Z][A-Za-z_]*(\/[A-Z][A-Za-z0-9_+-]*)+)$/.test(value)) return false;
  try {
    new Intl.DateTimeFormat("en", { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

/** pg-boss reads schedules with cron-parser; refusing here what it would refuse later keeps a bad cron from breaking a lead's runs. */
export function isCron(value: string): boolean {
  // Five fields: a schedule runs at most once a minute (a sixth, seconds field is refused).
  if (value.trim().split(/\s+/).length !== 5) return false;
  try {
    CronExpressionParser.parse(value, { strict: false });
    return true;
  } catch {
    return false;
  }
}

const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const twoDigits = (value: string) => value.padStart(2, "0");
const isNumber = (value: string) => /^\d{1,2}$/.test(value);

/**
 * "every day at 08:00 Europe/Berlin" for the common shapes (daily, weekdays, one weekday,
 * every N hours or minutes); any other expression is shown as its cron text with the zone.
 * "off" turns proactive runs off.
 */
export function describeSchedule(cron: string, timeZone: string | null): string {
  const zone = timeZone ?? "UTC";
  const text = cron.trim();
  if (text.toLowerCase() === "off") return "off: no scheduled runs";
  const [minute, hour, dayOfMonth, month, dayOfWeek, ...rest] = text.split(/\s+/);
  if (
    minute !== undefined &&
    hour !== undefined &&
    dayOfMonth !== undefined &&
    month !== undefined &&
    dayOfWeek !== undefined &&
    rest.length === 0
  ) {
    const everyDayOfYear = dayOfMonth === "*" && month === "*";
    if (everyDayOfYear && isNumber(minute) && isNumber(hour)) {
      const at = `${twoDigits(hour)}:${twoDigits(minute)} ${zone}`;
      if (dayOfWeek === "*") return `every day at ${at}`;
      if (dayOfWeek === "1-5" || dayOfWeek.toUpperCase() === "MON-FRI") return `weekdays at ${at}`;
      if (/^[0-7]$/.test(dayOfWeek)) return `every ${WEEKDAYS[Number(dayOfWeek) % 7]} at ${at}`;
    }
    const hourStep = /^\*\/(\d+)$/.exec(hour);
    if (everyDayOfYear && dayOfWeek === "*" && isNumber(minute) && hourStep) {
      const past = Number(minute) === 0 ? "on the hour" : `at minute ${Number(minute)}`;
      return Number(hourStep[1]) === 1 ? `every hour ${past}` : `every ${Number(hourStep[1])} hours ${past} (${zone})`;
    }
    if (everyDayOfYear && dayOfWeek === "*" && hour === "*" && isNumber(minute)) {
      return Number(minute) === 0 ? "every hour on the hour" : `every hour at minute ${Number(minute)}`;
    }
    const minuteStep = /^\*\/(\d+)$/.exec(minute);
    if (everyDayOfYear && dayOfWeek === "*" && hour === "*" && minuteStep)
      return `every ${Number(minuteStep[1])} minutes`;
  }
  return `cron "${text}" (${zone})`;
}

/** The next `count` runs after `from`, read in the zone (null: UTC), as instants; none for "off". */
export function nextRuns(cron: string, timeZone: string | null, from: Date = new Date(), count = 3): Date[] {
  if (cron.trim().toLowerCase() === "off") return [];
  const expression = CronExpressionParser.parse(cron.trim(), {
    strict: false,
    tz: timeZone ?? "UTC",
    currentDate: from,
  });
  return expression.take(count).map((date) => date.toDate());
}

/** "Wed 26 Nov, 08:00" read in the schedule's zone: the times a schedule promises, as its owner wrote them. */
function formatInZone(date: Date, timeZone: string | null): string {
  return new Intl.DateTimeFormat("en-GB", {
    timeZone: timeZone ?? "UTC",
    weekday: "short",
    day: "numeric",
    month: "short",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).format(date);
}

/** What the agent editor shows beside a lead's schedule. */
export type SchedulePreview = {
  cron: string;
  timeZone: string | null;
  text: string;
  nextRuns: string[];
  error?: string;
};

export function previewSchedule(cron: string, timeZone: string | null, from: Date = new Date()): SchedulePreview {
  const zone = timeZone?.trim() || null;
  if (zone && !isTimeZone(zone))
    return {
      cron,
      timeZone: zone,
      text: `cron "${cron}"`,
      nextRuns: [],
      error: `"${zone}" is not a time zone. Pick one from the list, such as Europe/Berlin.`,
    };
  if (cron.trim().toLowerCase() !== "off" && !isCron(cron.trim())) {
    return {
      cron,
      timeZone: zone,
      text: `cron "${cron}"`,
      nextRuns: [],
      error: 'Not a cron expression. Five fields: minute hour day-of-month month day-of-week, such as "0 8 * * *".',
    };
  }
  return {
    cron,
    timeZone: zone,
    text: describeSchedule(cron, zone),
    nextRuns: nextRuns(cron, zone, from).map((date) => `${formatInZone(date, zone)} ${zone ?? "UTC"}`),
  };
}
