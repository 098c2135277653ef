import { z } from "zod";
import { toolPolicies } from "@/lib/db/schema";

/** One rule: the team's (no agentId) or one agent's override; `policy: null` removes it, so the default applies again. */
export const setToolPolicyBody = z.strictObject({
  toolName: z.string().trim().min(1).max(200),
  policy: z.enum(toolPolicies).nullable(),
  agentId: z.uuid().optional(),
});
