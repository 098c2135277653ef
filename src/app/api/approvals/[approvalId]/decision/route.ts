import { decideApproval } from "@/lib/engine/approvals";
import { parseId, parseJsonBody, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { decisionBody } from "./schema";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ approvalId: string }> };

export const POST = route(async (request: Request, { params }: Params) => {
  const approvalId = parseId((await params).approvalId, "approval");
  const body = await parseJsonBody(request, decisionBody);
  const { db, jobs } = await webEngine();
  return Response.json({ approval: await decideApproval(db, jobs, approvalId, body) });
});
