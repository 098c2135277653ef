import { parseId, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { getSessionTrace } from "@/lib/views/session-trace";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ sessionId: string }> };

/** A work session's trace: its model and tool calls on its time axis, its events and how it ended. */
export const GET = route(async (_request: Request, { params }: Params) => {
  const sessionId = parseId((await params).sessionId, "session");
  const { db } = await webEngine();
  return Response.json({ trace: await getSessionTrace(db, sessionId) });
});
