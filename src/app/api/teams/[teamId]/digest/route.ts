import { requireTeam } from "@/lib/db/queries/teams";
import { digestFileName, teamDigest } from "@/lib/export/digest";
import { attachmentHeaders } from "@/lib/export/file-names";
import { parseId, parseSearchParams, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { digestQuery } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string }> };

/** A Markdown digest of what the team did from `from` to `to` (UTC days), as a download. */
export const GET = route(async (request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const range = parseSearchParams(request, digestQuery);
  const { db } = await webEngine();
  const team = await requireTeam(db, teamId);
  return new Response(await teamDigest(db, team, range), {
    headers: attachmentHeaders(digestFileName(team, range), "text/markdown; charset=utf-8"),
  });
});
