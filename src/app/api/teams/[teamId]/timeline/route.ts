import { parseId, parseSearchParams, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { getTeamTimeline } from "@/lib/views/timeline";
import { timelineQuery } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string }> };

/** One page of the team's timeline, newest first: `{ entries, nextCursor }`. */
export const GET = route(async (request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const query = parseSearchParams(request, timelineQuery);
  const { db } = await webEngine();
  return Response.json(await getTeamTimeline(db, teamId, query));
});
