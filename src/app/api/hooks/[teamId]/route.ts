import { parseId, readBodyBytes, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { WEBHOOK_BODY_LIMIT_BYTES } from "@/lib/http/webhook-signature";
import { receiveWebhook } from "@/lib/domain/webhooks";

export const dynamic = "force-dynamic";
type Params = { params: Promise<{ teamId: string }> };

/**
 * POST /api/hooks/:teamId → 202 {accepted: true}: a signed delivery for the team's lead
 * (headers and format in src/lib/http/webhooks.ts). No session and no Origin check: the
 * HMAC is the authentication. 401 bad or stale signature, 409 replay, 413 over 64 KiB.
 */
export const POST = route(
  async (request: Request, { params }: Params) => {
    const teamId = parseId((await params).teamId, "team");
    const body = await readBodyBytes(request, WEBHOOK_BODY_LIMIT_BYTES);
    await receiveWebhook(await webEngine(), teamId, { headers: request.headers, body });
    return Response.json({ accepted: true }, { status: 202 });
  },
  { public: true, crossOrigin: true },
);
