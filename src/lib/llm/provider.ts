import "server-only";
import { createOpenAI } from "@ai-sdk/openai";
import type { LanguageModel } from "ai";
import { env, type Env } from "@/lib/env";
import { OfflineModel } from "./offline-model";

export type ModelChoice = {
  model: LanguageModel;
  /** The model id as stored in usage rows and shown in the UI. */
  modelId: string;
  kind: "openai" | "openai-compatible" | "offline";
  /** Requests name their conversation as `prompt_cache_key` (see PROMPT_CACHE_KEY); not given: no. */
  cacheKeys?: boolean;
  /** The server it is asked on, as its profile names it (modelServerUrl); null or not given: the offline model. */
  serverUrl?: string | null;
};

const DEFAULT_OPENAI_MODEL = "gpt-4.1-mini";
const OPENAI_BASE_URL = "https://api.openai.com/v1";

/**
 * The model an agent talks to. OPENAI_BASE_URL: any OpenAI-compatible server over
 * Chat Completions (what LM Studio, Ollama, vLLM and OpenRouter speak); only
 * OPENAI_API_KEY: OpenAI's Responses API; neither: the built-in offline model.
 */
export function chooseModel(
  override?: string | null,
  config: Pick<Env, "OPENAI_API_KEY" | "OPENAI_BASE_URL" | "LLM_MODEL"> &
    Partial<Pick<Env, "PROMPT_CACHE_KEY">> = env(),
): ModelChoice {
  const modelId = override?.trim() || config.LLM_MODEL || DEFAULT_OPENAI_MODEL;
  const cacheKeys = (openAiItself: boolean) =>
    config.PROMPT_CACHE_KEY === "on" ? true : config.PROMPT_CACHE_KEY === "off" ? false : openAiItself;
  if (config.OPENAI_BASE_URL) {
    // Local servers ignore the key, but the client insists on sending one.
    const provider = createOpenAI({ baseURL: config.OPENAI_BASE_URL, apiKey: config.OPENAI_API_KEY ?? "not-needed" });
    return {
      model: provider.chat(modelId),
      modelId,
      kind: "openai-compatible",
      cacheKeys: cacheKeys(new URL(config.OPENAI_BASE_URL).hostname === "api.openai.com"),
      serverUrl: modelServerUrl(config),
    };
  }
  if (config.OPENAI_API_KEY) {
    const provider = createOpenAI({ apiKey: config.OPENAI_API_KEY });
    return {
      model: provider(modelId),
      modelId,
      kind: "openai",
      cacheKeys: cacheKeys(true),
      serverUrl: modelServerUrl(config),
    };
  }
  return { model: new OfflineModel(), modelId: "offline", kind: "offline", cacheKeys: false };
}

export function usingOfflineModel(config: Pick<Env, "OPENAI_API_KEY" | "OPENAI_BASE_URL"> = env()): boolean {
  return !config.OPENAI_API_KEY && !config.OPENAI_BASE_URL;
}

/**
 * The server a chosen model is asked on, as its profile names it (see model_profiles): the
 * configured base URL without a trailing slash, or OpenAI's own; null on the offline model.
 */
export function modelServerUrl(config: Pick<Env, "OPENAI_API_KEY" | "OPENAI_BASE_URL"> = env()): string | null {
  if (usingOfflineModel(config)) return null;
  return (config.OPENAI_BASE_URL ?? OPENAI_BASE_URL).replace(/\/+$/, "");
}
