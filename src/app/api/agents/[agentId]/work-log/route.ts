import { requireAgent } from "@/lib/db/queries/agents";
import { parseId, parseSearchParams, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { getWorkLogPage } from "@/lib/views/work-log-page";
import { workLogQuery } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ agentId: string }> };

/**
 * A page of the agent's work log with its sessions and each step's model call: `{ messages, sessions, sessionOf, steps }`.
 * `?before=<id>` pages back; `?around=<id>` opens the page at that message (404 when it is not in this log).
 */
export const GET = route(async (request: Request, { params }: Params) => {
  const agentId = parseId((await params).agentId, "agent");
  const query = parseSearchParams(request, workLogQuery);
  const { db } = await webEngine();
  await requireAgent(db, agentId);
  return Response.json(await getWorkLogPage(db, agentId, query));
});
