import { checkConnections } from "@/lib/telemetry/connection-check";
import { route } from "@/lib/http/http";

export const dynamic = "force-dynamic";

/**
 * POST /api/connection-check → { model, search }: each `{ state, message }`, whether the
 * configured model server and Tavily answer (reachable, key refused, model missing,
 * unreachable, not configured). POST: it spends a search and reaches out to other servers.
 */
export const POST = route(async (_request: Request) => Response.json(await checkConnections()));
