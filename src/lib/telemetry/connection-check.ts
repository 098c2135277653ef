import "server-only";
import { tavily } from "@tavily/core";
import { z } from "zod";
import { env, type Env } from "@/lib/env";
import { plural } from "@/lib/util/plural";
import { chooseModel, usingOfflineModel } from "@/lib/llm/provider";

/**
 * "Check connection" (the offline notice, POST /api/connection-check): whether the configured
 * model server and Tavily answer, in words per service. Nothing is cached: the person asks
 * right after changing a setting and restarting.
 */

type ServiceState = "reachable" | "key_refused" | "model_missing" | "unreachable" | "not_configured" | "failed";
export type ServiceCheck = { state: ServiceState; message: string };
export type ConnectionCheck = { model: ServiceCheck; search: ServiceCheck };

export type CheckConfig = Pick<
  Env,
  "OPENAI_API_KEY" | "OPENAI_BASE_URL" | "LLM_MODEL" | "TAVILY_API_KEY" | "TAVILY_BASE_URL"
>;

const OPENAI_BASE_URL = "https://api.openai.com/v1";
const TAVILY_BASE_URL = "https://api.tavily.com";
const TIMEOUT_MS = 5_000;
const modelsResponse = z.object({ data: z.array(z.object({ id: z.string().min(1) })) });

/** On the offline model, what the offline notice needs to say (null: a model is configured, no notice). */
export function offlineSetup(config: CheckConfig = env()): { searchConfigured: boolean } | null {
  return usingOfflineModel(config) ? { searchConfigured: Boolean(config.TAVILY_API_KEY) } : null;
}

export async function checkConnections(config: CheckConfig = env(), timeoutMs = TIMEOUT_MS): Promise<ConnectionCheck> {
  const [model, search] = await Promise.all([checkModelServer(config, timeoutMs), checkWebSearch(config, timeoutMs)]);
  return { model, search };
}

/** GET {base}/models with the key, then whether the model Cadre will ask for is listed. */
async function checkModelServer(config: CheckConfig, timeoutMs = TIMEOUT_MS): Promise<ServiceCheck> {
  if (usingOfflineModel(config)) {
    return {
      state: "not_configured",
      message:
        "Not configured: answers come from the built-in demo model. Set OPENAI_API_KEY, or OPENAI_BASE_URL and LLM_MODEL for a local server, then restart Cadre.",
    };
  }
  const base = (config.OPENAI_BASE_URL ?? OPENAI_BASE_URL).replace(/\/+$/, "");
  const { modelId } = chooseModel(null, config);
  let response: Response;
  try {
    response = await fetch(`${base}/models`, {
      headers: config.OPENAI_API_KEY ? { authorization: `Bearer ${config.OPENAI_API_KEY}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    return {
      state: "unreachable",
      message: `Unreachable: ${base} ${networkReason(error, timeoutMs)}. Check OPENAI_BASE_URL and that the server is running.`,
    };
  }
  if (response.status === 401 || response.status === 403) {
    const key = config.OPENAI_API_KEY ? "refused the key in OPENAI_API_KEY" : "wants a key: set OPENAI_API_KEY";
    return { state: "key_refused", message: `Key refused: ${base} ${key} (HTTP ${response.status}).` };
  }
  if (!response.ok)
    return {
      state: "failed",
      message: `The model server at ${base} answered HTTP ${response.status} when asked for its models. Try again in a moment.`,
    };
  const listed = modelsResponse.safeParse(await response.json().catch(() => null));
  // Some servers answer chat but list nothing useful: reachable is all that can be said then.
  if (!listed.success)
    return {
      state: "reachable",
      message: `Reachable: ${base} answers, but its model list could not be read, so whether it serves ${modelId} is unknown.`,
    };
  const ids = [...new Set(listed.data.data.map((model) => model.id))].sort();
  if (!ids.includes(modelId)) {
    const shown = ids.slice(0, 5).join(", ") + (ids.length > 5 ? ", …" : "");
    const offers = ids.length === 0 ? "it lists no models" : `it lists ${plural(ids.length, "model")}: ${shown}`;
    return {
      state: "model_missing",
      message: `Model missing: ${base} answers, but does not serve ${modelId} (${offers}). Set LLM_MODEL to one it serves.`,
    };
  }
  return { state: "reachable", message: `Reachable: ${base} serves ${modelId}.` };
}

/** One small search through the client the agents use (1 result). */
async function checkWebSearch(config: CheckConfig, timeoutMs = TIMEOUT_MS): Promise<ServiceCheck> {
  if (!config.TAVILY_API_KEY) {
    return {
      state: "not_configured",
      message:
        "Not configured: agents cannot search the web. Set TAVILY_API_KEY (a key from tavily.com), then restart Cadre.",
    };
  }
  const base = (config.TAVILY_BASE_URL ?? TAVILY_BASE_URL).replace(/\/+$/, "");
  const client = tavily({ apiKey: config.TAVILY_API_KEY, apiBaseURL: config.TAVILY_BASE_URL });
  let timer: NodeJS.Timeout | undefined;
  try {
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DOMException("timed out", "TimeoutError")), timeoutMs);
    });
    await Promise.race([
      client.search("Cadre connection check", {
        maxResults: 1,
        searchDepth: "basic",
        timeout: Math.ceil(timeoutMs / 1000),
      }),
      deadline,
    ]);
    return { state: "reachable", message: `Reachable: ${base} answered a test search.` };
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    // The client keeps only the server's words (its `detail.error`), not the status: read those.
    if (/\b40[13]\b|unauthori[sz]ed|forbidden|invalid api key|api key/i.test(text)) {
      return { state: "key_refused", message: `Key refused: ${base} refused the key in TAVILY_API_KEY.` };
    }
    if (
      error instanceof DOMException ||
      /timed out|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|ETIMEDOUT|socket hang up|network/i.test(text)
    ) {
      return {
        state: "unreachable",
        message: `Unreachable: ${base} ${networkReason(error, timeoutMs)}. Check TAVILY_BASE_URL and this machine's network.`,
      };
    }
    console.error("The connection check's test search failed:", error);
    return {
      state: "failed",
      message: `The test search at ${base} failed. Try again in a moment; the server's log has the details.`,
    };
  } finally {
    clearTimeout(timer);
  }
}

/** Why a request got no answer, in words: "did not answer within 5 s", "refused the connection". */
function networkReason(error: unknown, timeoutMs: number): string {
  const text = `${error instanceof Error ? `${error.name} ${error.message} ${String((error as { cause?: unknown }).cause ?? "")}` : String(error)}`;
  if (/TimeoutError|timed out|ETIMEDOUT/i.test(text))
    return `did not answer within ${Number((timeoutMs / 1000).toFixed(1))} s`;
  if (/ECONNREFUSED/.test(text)) return "refused the connection (nothing listens there)";
  if (/ENOTFOUND|EAI_AGAIN/.test(text)) return "could not be found (check the host name)";
  return "could not be reached";
}
