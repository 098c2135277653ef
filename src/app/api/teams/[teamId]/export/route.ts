import { requireTeam } from "@/lib/db/queries/teams";
import { attachmentHeaders } from "@/lib/export/file-names";
import { teamRecordFileName, teamRecordStream } from "@/lib/export/team-record";
import { parseId, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string }> };

/** The team's whole record as a JSON download, streamed (see teamRecordStream). */
export const GET = route(async (_request: Request, { params }: Params) => {
  const teamId = parseId((await params).teamId, "team");
  const { db } = await webEngine();
  const team = await requireTeam(db, teamId);
  const exportedAt = new Date();
  return new Response(teamRecordStream(db, team, exportedAt), {
    headers: attachmentHeaders(teamRecordFileName(team, exportedAt), "application/json; charset=utf-8"),
  });
});
