import "server-only";
// A page asked for while the database does not answer is answered here, before it renders:
// 503 with Retry-After and a plain page that loads itself again. A render that failed for want
// of a database would be Next's 500 (its status cannot be chosen once rendering has begun), and
// a page waiting on a connection that never comes would hang. The API answers the same way
// (toErrorResponse in http.ts).
import { database } from "@/lib/db/client";
import { databaseAnswers } from "@/lib/db/health";

/** A database that answered this recently is not asked again for a page (one probe a second at most). */
const FRESH_MS = 1_000;
/** How long a page waits for the probe before it says the database is not answering. */
const PROBE_TIMEOUT_MS = 2_000;
/** When the outage page loads itself again, and what Retry-After says. */
const OUTAGE_RETRY_SECONDS = 5;

const state = globalThis as typeof globalThis & { cadrePageProbe?: { answeredAt: number; probing?: Promise<boolean> } };

/** Whether pages may render: the database answered within the last second, or answers now (one probe at a time). */
export async function databaseAnswersForPages(): Promise<boolean> {
  state.cadrePageProbe ??= { answeredAt: 0 };
  const probe = state.cadrePageProbe;
  if (Date.now() - probe.answeredAt < FRESH_MS) return true;
  probe.probing ??= databaseAnswers(database().db, PROBE_TIMEOUT_MS)
    .catch(() => ({ ok: false as const }))
    .then((answer) => {
      if (answer.ok) probe.answeredAt = Date.now();
      return answer.ok;
    })
    .finally(() => {
      probe.probing = undefined;
    });
  return probe.probing;
}

/** The plain page a person sees meanwhile: no script, it reloads itself every few seconds. */
export function databaseOutagePage(): Response {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="${OUTAGE_RETRY_SECONDS}">
<title>Cadre — the database is not answering</title>
</head>
<body>
<main>
<h1>The database is not answering; this page tries again by itself</h1>
<p>Cadre's database is out of reach for the moment (restarting, or too busy to take another connection). This page loads itself again every ${OUTAGE_RETRY_SECONDS} seconds and shows what you asked for as soon as the database answers. Work that was under way picks up where it stopped.</p>
</main>
</body>
</html>
`;
  return new Response(html, {
    status: 503,
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      "Retry-After": String(OUTAGE_RETRY_SECONDS),
      "Cache-Control": "no-store",
    },
  });
}
