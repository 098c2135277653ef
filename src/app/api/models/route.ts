import { route } from "@/lib/http/http";
import { listAvailableModels } from "@/lib/llm/models";

export const dynamic = "force-dynamic";

/** GET /api/models → { models, source, error? }: the model ids the configured server lists, for an agent's model override. */
export const GET = route(async () => Response.json(await listAvailableModels()));
