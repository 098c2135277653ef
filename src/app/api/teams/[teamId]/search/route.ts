import { parseId, parseSearchParams, route } from "@/lib/http/http";
import { searchTeamConversations } from "@/lib/views/message-search";
import { webEngine } from "@/lib/http/server";
import { searchQuery } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string }> };

/** Messages of the team's chats and work logs matching `q`, newest first: `{ hits, nextCursor }`. */
export const GET = route(async (request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const query = parseSearchParams(request, searchQuery);
  const { db } = await webEngine();
  return Response.json(await searchTeamConversations(db, teamId, query));
});
