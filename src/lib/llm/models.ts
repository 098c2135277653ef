import "server-only";
import { z } from "zod";
import { env, type Env } from "@/lib/env";
import { usingOfflineModel } from "./provider";
import { logError } from "@/lib/telemetry/log";

/** What the agent editor offers as model overrides: what the configured server lists, or nothing to pick from. */
export type ModelList = { models: string[]; source: "server" | "none"; error?: string };

const OPENAI_BASE_URL = "https://api.openai.com/v1";
const LIST_TIMEOUT_MS = 2_000;
/** Long enough that opening a few editors asks once, short enough that a model pulled into a local server shows up soon. */
const CACHE_MS = 60_000;

const modelsResponse = z.object({ data: z.array(z.object({ id: z.string().min(1) })) });

let cached: { key: string; at: number; list: ModelList } | null = null;

/**
 * GET {base}/models of the configured OpenAI-compatible server (2 s at most); a failure is
 * an answer with no models and the reason, since the person can still type a name. Offline:
 * the offline model only.
 */
export async function listAvailableModels(
  config: Pick<Env, "OPENAI_API_KEY" | "OPENAI_BASE_URL"> = env(),
  now: number = Date.now(),
): Promise<ModelList> {
  if (usingOfflineModel(config)) return { models: ["offline"], source: "none" };
  const baseUrl = (config.OPENAI_BASE_URL ?? OPENAI_BASE_URL).replace(/\/+$/, "");
  const key = `${baseUrl} ${config.OPENAI_API_KEY ?? ""}`;
  if (cached && cached.key === key && now - cached.at < CACHE_MS) return cached.list;
  try {
    const response = await fetch(`${baseUrl}/models`, {
      headers: config.OPENAI_API_KEY ? { authorization: `Bearer ${config.OPENAI_API_KEY}` } : {},
      signal: AbortSignal.timeout(LIST_TIMEOUT_MS),
    });
    if (!response.ok)
      throw new Error(`The model server answered ${response.status} ${response.statusText} to GET /models.`);
    const { data } = modelsResponse.parse(await response.json());
    const list: ModelList = { models: [...new Set(data.map((model) => model.id))].sort(), source: "server" };
    cached = { key, at: now, list };
    return list;
  } catch (error) {
    logError("Listing the server's models failed:", error);
    const reason =
      error instanceof DOMException && error.name === "TimeoutError"
        ? `no answer from ${baseUrl}/models within 2 s`
        : error instanceof Error
          ? error.message
          : String(error);
    return {
      models: [],
      source: "none",
      error: `Could not list the server's models (${reason}). Type a model name instead.`,
    };
  }
}

/** Tests start each case afresh. */
export function forgetModelList(): void {
  cached = null;
}
