import { notFound } from "@/lib/errors";
import { parseId, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { getStory } from "@/lib/views/stories";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string; storyId: string }> };

/** The story a task of the team belongs to: `{ story }`. Any task of it finds it. */
export const GET = route(async (_request: Request, { params }: Params) => {
  const { teamId: rawTeamId, storyId: rawStoryId } = await params;
  const teamId = parseId(rawTeamId, "team");
  const storyId = parseId(rawStoryId, "story");
  const { db } = await webEngine();
  const story = await getStory(db, teamId, storyId);
  if (!story) throw notFound("story", storyId);
  return Response.json({ story });
});
