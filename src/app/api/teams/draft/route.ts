import { db } from "@/lib/db/client";
import { parseJsonBody, route } from "@/lib/http/http";
import { draftLeadInstructions } from "@/lib/llm/draft-instructions";
import { draftInstructionsBody } from "./schema";

export const dynamic = "force-dynamic";
export const maxDuration = 120;

/** POST /api/teams/draft {name, mission} → { instructions }: a draft of the lead's instructions, to edit before creating the team. */
export const POST = route(async (request: Request) => {
  const body = await parseJsonBody(request, draftInstructionsBody);
  return Response.json({ instructions: await draftLeadInstructions(db(), body, { abortSignal: request.signal }) });
});
