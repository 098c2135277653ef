import { parseId, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { getStorySteps } from "@/lib/views/stories";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string; storyId: string }> };

/** A story's steps, oldest first: `{ entries }` (the timeline's entries of its tasks). */
export const GET = route(async (_request: Request, { params }: Params) => {
  const { teamId: rawTeamId, storyId: rawStoryId } = await params;
  const teamId = parseId(rawTeamId, "team");
  const storyId = parseId(rawStoryId, "story");
  const { db } = await webEngine();
  return Response.json({ entries: await getStorySteps(db, teamId, storyId) });
});
