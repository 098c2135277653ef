import { tavily } from "@tavily/core";
import { tool } from "ai";
import { z } from "zod";
import type { ToolContext } from "./context";

export const WEB_SEARCH_NOT_CONFIGURED =
  "Web search is not configured (TAVILY_API_KEY is not set), so no search was made. Work from what you know and say that sources could not be checked.";

const MAX_RESULT_CHARS = 800;

export function searchTools(context: ToolContext) {
  return {
    tavilySearch: tool({
      description: "Search the web. Returns the top results with title, url and an excerpt.",
      inputSchema: z.object({
        query: z.string().min(1).max(400).describe("What to search for"),
        maxResults: z.number().int().min(1).max(10).optional(),
      }),
      execute: async ({ query, maxResults }, { abortSignal }) => {
        if (!context.search.tavilyApiKey) return WEB_SEARCH_NOT_CONFIGURED;
        abortSignal?.throwIfAborted();
        const client = tavily({ apiKey: context.search.tavilyApiKey, apiBaseURL: context.search.tavilyBaseUrl });
        try {
          // The client cannot be cancelled; race it so a Stop ends the session at once.
          const response = await abortable(client.search(query, { maxResults: maxResults ?? 5, searchDepth: "basic" }), abortSignal);
          return {
            query,
            results: response.results.map((result) => ({
              title: result.title,
              url: result.url,
              content: result.content.length > MAX_RESULT_CHARS ? `${result.content.slice(0, MAX_RESULT_CHARS)}…` : result.content,
            })),
          };
        } catch (error) {
          if (abortSignal?.aborted) throw error;
          // A failed search is information for the agent, not the end of its session.
          return `Web search failed: ${error instanceof Error ? error.message : String(error)}`;
        }
      },
    }),
  };
}

/** Settles with the promise, or rejects as soon as the signal aborts. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new DOMException("Aborted", "AbortError"));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
