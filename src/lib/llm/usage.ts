import type { LanguageModelUsage } from "ai";
import type { Db } from "@/lib/db/client";
import { recordUsage, type NewUsage } from "@/lib/db/queries/usage";

/** One usage row for one model call, from what the AI SDK reports. */
export function recordModelUsage(
  db: Db,
  call: Omit<NewUsage, "inputTokens" | "outputTokens" | "cachedTokens"> & { usage: LanguageModelUsage },
): ReturnType<typeof recordUsage> {
  const { usage, ...row } = call;
  return recordUsage(db, {
    ...row,
    inputTokens: usage.inputTokens ?? 0,
    outputTokens: usage.outputTokens ?? 0,
    cachedTokens: usage.inputTokenDetails?.cacheReadTokens ?? 0,
  });
}
