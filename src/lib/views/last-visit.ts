// When the person last marked the home page as seen, kept in a cookie (client-safe).
//
// A cookie rather than localStorage: the home page is a server component and reads the time
// while rendering, so "since you were last here" arrives in the first paint with no second
// request and no flash of an empty list. The app has one person, so the browser they use is
// the right scope; a second browser starts from the default window. Not a secret: the value
// is only a time, set from the page (Mark as seen) and parsed defensively here.

export const LAST_VISIT_COOKIE = "cadre_last_seen";

/** With no mark yet (or an unreadable one), the home page shows the last day. */
export const DEFAULT_WINDOW_MS = 24 * 60 * 60 * 1000;

/** The time in the cookie (milliseconds since the epoch: no encoding to get wrong), or null when it is missing, not a time, or in the future. */
export function parseLastVisit(value: string | undefined, now: Date): Date | null {
  if (!value || !/^\d{1,15}$/.test(value)) return null;
  const time = new Date(Number(value));
  return time.getTime() > now.getTime() + 60_000 ? null : time;
}

/** The cookie as `document.cookie` takes it: a year long, sent only to this site. */
export function lastVisitCookie(seenAt: Date): string {
  return `${LAST_VISIT_COOKIE}=${seenAt.getTime()}; path=/; max-age=${365 * 24 * 60 * 60}; samesite=lax`;
}
