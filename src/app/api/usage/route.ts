import { z } from "zod";
import { requireTeam } from "@/lib/db/queries/teams";
import { parseId, parseSearchParams, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { REPORT_DAYS_DEFAULT, REPORT_DAYS_MAX, usageReport } from "@/lib/usage/report";

export const dynamic = "force-dynamic";

const usageQuery = z.strictObject({
  teamId: z.string().optional(),
  days: z.coerce
    .number({ error: "days must be a whole number of days." })
    .int("days must be a whole number of days.")
    .min(1, "days is at least 1.")
    .max(REPORT_DAYS_MAX, `days is at most ${REPORT_DAYS_MAX}.`)
    .default(REPORT_DAYS_DEFAULT),
});

/** `?teamId=&days=30` → `{ report }`: tokens and cost per UTC day, team and agent (see usageReport). */
export const GET = route(async (request: Request) => {
  const query = parseSearchParams(request, usageQuery);
  const { db } = await webEngine();
  const teamId = query.teamId === undefined ? null : (await requireTeam(db, parseId(query.teamId, "team"))).id;
  return Response.json({ report: await usageReport(db, { days: query.days, teamId }) });
});
