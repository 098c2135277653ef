import { parseId, parseSearchParams, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { getTeamStories } from "@/lib/views/stories";
import { storiesQuery } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string }> };

/** One page of the team's stories, newest first: `{ stories, nextCursor }`. */
export const GET = route(async (request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const query = parseSearchParams(request, storiesQuery);
  const { db } = await webEngine();
  return Response.json(await getTeamStories(db, teamId, query));
});
