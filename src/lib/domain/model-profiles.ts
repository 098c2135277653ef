import "server-only";
import type { Db } from "@/lib/db/client";
import { listModelProfiles, saveModelProfile } from "@/lib/db/queries/model-profiles";
import { listAgentModelOverrides } from "@/lib/db/queries/agents";
import { listTeamAgents } from "@/lib/db/queries/teams";
import type { ModelProfile } from "@/lib/db/schema";
import { env, type Env } from "@/lib/env";
import { checkModelBehaviour } from "@/lib/llm/model-check";
import { chooseModel, modelServerUrl } from "@/lib/llm/provider";
import { checkConnections, type CheckConfig, type ConnectionCheck } from "@/lib/telemetry/connection-check";

/**
 * A model's profile: what it was seen to do when checked on its server (model_profiles). The
 * engine reads it to shape requests to that model; the Settings page shows it as a card; Check
 * connection, the card's Check and `npm run check-model` write it. A profile belongs to a model
 * on a server: an agent given another model, or Cadre pointed at another server, has none until
 * that pair is checked.
 */

type ModelConfig = Pick<Env, "OPENAI_API_KEY" | "OPENAI_BASE_URL" | "LLM_MODEL">;

/** The model an agent uses: its own override, or the configured one (LLM_MODEL or the default). */
function modelInUse(override: string | null | undefined, config: ModelConfig = env()): string {
  return chooseModel(override, config).modelId;
}

/**
 * Checks `model` (null: the configured one) on the configured server and stores what was seen,
 * replacing its last profile there. Null on the offline model, which needs no check.
 */
export async function checkAndStoreModel(
  db: Db,
  model: string | null,
  options: {
    config?: ModelConfig & Partial<Pick<Env, "PROMPT_CACHE_KEY">>;
    timeoutMs?: number;
    abortSignal?: AbortSignal;
  } = {},
): Promise<ModelProfile | null> {
  const config = options.config ?? env();
  const baseUrl = modelServerUrl(config);
  if (baseUrl === null) return null;
  const choice = chooseModel(model, config);
  const behaviour = await checkModelBehaviour({
    db,
    model: choice,
    baseUrl,
    apiKey: config.OPENAI_API_KEY,
    timeoutMs: options.timeoutMs,
    abortSignal: options.abortSignal,
  });
  return saveModelProfile(db, { model: choice.modelId, baseUrl, ...behaviour });
}

/** One model a team uses, with the agents that use it and its profile on the configured server (null: not checked there). */
export type ModelInUse = { model: string; agents: string[]; profile: ModelProfile | null };

/**
 * The models a team's agents use (the lead's first), each with its profile on the configured
 * server. Empty on the offline model: every agent plays the built-in demo model.
 */
export async function listTeamModels(db: Db, teamId: string, config: ModelConfig = env()): Promise<ModelInUse[]> {
  const baseUrl = modelServerUrl(config);
  if (baseUrl === null) return [];
  const byModel = new Map<string, string[]>();
  for (const agent of await listTeamAgents(db, teamId)) {
    const model = modelInUse(agent.model, config);
    byModel.set(model, [...(byModel.get(model) ?? []), agent.name]);
  }
  const profiles = await listModelProfiles(db, baseUrl, [...byModel.keys()]);
  return [...byModel].map(([model, agents]) => ({
    model,
    agents,
    profile: profiles.find((profile) => profile.model === model) ?? null,
  }));
}

/**
 * Check connection, and when the server serves the configured model, that model checked too
 * (its profile stored, null otherwise). `db` is asked for only then: a check that finds no
 * model server touches no database.
 */
export async function checkConnectionsAndModel(
  db: () => Db,
  config: CheckConfig = env(),
): Promise<ConnectionCheck & { profile: ModelProfile | null }> {
  const connections = await checkConnections(config);
  const profile = connections.model.state === "reachable" ? await checkAndStoreModel(db(), null, { config }) : null;
  return { ...connections, profile };
}

/** Every model in use on this installation: the configured one and each agent's own, the configured first. */
export async function listModelsInUse(db: Db, config: ModelConfig = env()): Promise<string[]> {
  const configured = modelInUse(null, config);
  const overrides = (await listAgentModelOverrides(db)).map((model) => modelInUse(model, config));
  return [...new Set([configured, ...overrides])];
}
