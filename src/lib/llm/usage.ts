import "server-only";
import type { LanguageModelUsage } from "ai";
import type { NewUsage } from "@/lib/db/queries/usage";

/** The usage row of one model call, from what the AI SDK reports. */
export function modelUsageRow(
  call: Omit<NewUsage, "inputTokens" | "outputTokens" | "cachedTokens"> & { usage: LanguageModelUsage },
): NewUsage {
  const { usage, ...row } = call;
  return {
    ...row,
    inputTokens: usage.inputTokens ?? 0,
    outputTokens: usage.outputTokens ?? 0,
    cachedTokens: usage.inputTokenDetails?.cacheReadTokens ?? 0,
  };
}
