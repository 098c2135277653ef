import "server-only";
import { abortable } from "@/lib/util/abortable";
import { tavily } from "@tavily/core";
import { tool } from "ai";
import { z } from "zod";
import { checkedAddresses, outboundPolicy, OutboundUrlRefused, type OutboundPolicy } from "@/lib/http/outbound-url";
import { maskUrl } from "@/lib/util/redact";
import type { ToolContext } from "./context";
import { TurnSources } from "@/lib/domain/sources";

const WEB_SEARCH_NOT_CONFIGURED =
  "Web search is not configured (TAVILY_API_KEY is not set), so no search was made. Work from what you know and say that sources could not be checked.";

export const PAGE_READING_NOT_CONFIGURED =
  "Reading web pages is not configured (TAVILY_API_KEY is not set), so the page was not read. Work from what you know and say that sources could not be checked.";

const MAX_RESULT_CHARS = 800;
const DEFAULT_PAGE_READ_MAX_CHARS = 12_000;
const DEFAULT_PAGE_READ_TIMEOUT_MS = 30_000;

/** `sources`: what the turn searched and read, for the knowledge it adds (see sources.ts). */
export function searchTools(context: ToolContext, sources = new TurnSources()) {
  return {
    tavilySearch: tool({
      description: "Search the web. Returns the top results with title, url and an excerpt.",
      inputSchema: tavilySearchInput,
      execute: async ({ query, maxResults }, { abortSignal }) => {
        if (!context.search.tavilyApiKey) return WEB_SEARCH_NOT_CONFIGURED;
        abortSignal?.throwIfAborted();
        const client = tavily({ apiKey: context.search.tavilyApiKey, apiBaseURL: context.search.tavilyBaseUrl });
        try {
          // The client cannot be cancelled; race it so a Stop ends the session at once.
          const response = await abortable(
            client.search(query, { maxResults: maxResults ?? 5, searchDepth: "basic" }),
            abortSignal,
          );
          const results = response.results.map((result) => ({
            title: result.title,
            url: result.url,
            content:
              result.content.length > MAX_RESULT_CHARS
                ? `${result.content.slice(0, MAX_RESULT_CHARS)}…`
                : result.content,
          }));
          sources.searched(results);
          return { query, results };
        } catch (error) {
          if (abortSignal?.aborted) throw error;
          // A failed search is information for the agent, not the end of its session.
          return `Web search failed: ${error instanceof Error ? error.message : String(error)}`;
        }
      },
    }),
    readWebPage: tool({
      description:
        "Read one web page as text, such as a search result's url. Returns its url, title and content; a long page is cut.",
      inputSchema: readWebPageInput,
      execute: async ({ url }, { abortSignal }) => {
        if (!context.search.tavilyApiKey) return PAGE_READING_NOT_CONFIGURED;
        abortSignal?.throwIfAborted();
        const client = tavily({ apiKey: context.search.tavilyApiKey, apiBaseURL: context.search.tavilyBaseUrl });
        const timeoutMs = context.search.pageReadTimeoutMs ?? DEFAULT_PAGE_READ_TIMEOUT_MS;
        // Our own deadline as well as Tavily's: the client cannot be cancelled, and a read that
        // hangs must become an answer the agent can work with, not a stalled session.
        const deadline = AbortSignal.timeout(timeoutMs);
        const signal = abortSignal ? AbortSignal.any([abortSignal, deadline]) : deadline;
        const policy = context.search.outbound ?? outboundPolicy();
        try {
          const refused = await abortable(pageRefusal(url, policy), signal);
          if (refused) return `${refused} Try another source, or work from what you have.`;
          const response = await abortable(
            client.extract([url], {
              extractDepth: "basic",
              format: "markdown",
              timeout: Math.min(60, Math.max(1, Math.ceil(timeoutMs / 1000))),
            }),
            signal,
          );
          const page = response.results.find((result) => result.rawContent?.trim());
          if (!page) return pageReadFailed(url, response.failedResults[0]?.error || "the page has no readable text");
          // Tavily follows redirects itself: where it ended up is checked as the address asked for was.
          const landed = page.url && page.url !== url ? await abortable(pageRefusal(page.url, policy), signal) : null;
          if (landed)
            return `Reading ${maskUrl(url)} was refused: it redirected elsewhere, and ${landed} Its text is not returned; try another source, or work from what you have.`;
          const title = withoutNul(page.title ?? "").trim();
          sources.pageRead(page.url || url);
          return {
            url: page.url || url,
            ...(title ? { title } : {}),
            content: clipPage(
              withoutNul(page.rawContent),
              context.search.pageReadMaxChars ?? DEFAULT_PAGE_READ_MAX_CHARS,
            ),
          };
        } catch (error) {
          if (abortSignal?.aborted) throw error;
          // A page that cannot be read is information for the agent, not the end of its session.
          if (deadline.aborted)
            return pageReadFailed(url, `Tavily did not answer within ${Number((timeoutMs / 1000).toFixed(1))} seconds`);
          return pageReadFailed(url, error instanceof Error ? error.message : String(error));
        }
      },
    }),
  };
}

/** Wrappers weaker models put around an address: quotes, backticks, Markdown's angle brackets. */
const URL_WRAPPERS: [string, string][] = [
  ['"', '"'],
  ["'", "'"],
  ["`", "`"],
  ["<", ">"],
  ["\u201c", "\u201d"],
  ["\u2018", "\u2019"],
  ["(", ")"],
  ["[", "]"],
];
const URL_EXAMPLE = "such as https://example.com/page";

/**
 * The http(s) address a model meant, forgiving what weaker models send (surrounding
 * whitespace, quotes or angle brackets, a Markdown link, a trailing full stop, no scheme),
 * or what is wrong with it, in words the model can act on.
 */
export function normalizePageUrl(raw: string): { url: string } | { problem: string } {
  let text = raw.trim();
  const markdownLink = /^\[[^\]]*\]\((\S+)\)$/.exec(text);
  if (markdownLink) text = markdownLink[1]!;
  for (let unwrapped = true; unwrapped; ) {
    unwrapped = false;
    text = text.replace(/[.,;!?]+$/, "");
    for (const [open, close] of URL_WRAPPERS) {
      if (text.length >= 2 && text.startsWith(open) && text.endsWith(close)) {
        text = text.slice(1, -1).trim();
        unwrapped = true;
      }
    }
  }
  const shown = JSON.stringify(raw.length > 100 ? `${raw.slice(0, 99)}…` : raw);
  if (!text) return { problem: `is empty: send the page's address, ${URL_EXAMPLE}` };
  if (/\s/.test(text))
    return {
      problem: `${shown} is not one web address (it has spaces): send the page's address alone, ${URL_EXAMPLE}`,
    };
  // "example.com:8080/x" has a port, not a scheme.
  const scheme = /^([a-z][a-z0-9+.-]*):(?!\d)/i.exec(text)?.[1]?.toLowerCase();
  if (scheme && scheme !== "http" && scheme !== "https") {
    return {
      problem: `${shown} is a ${scheme}: address: only http:// and https:// pages can be read; send one ${URL_EXAMPLE}`,
    };
  }
  let url: URL;
  try {
    url = new URL(scheme ? text : `https://${text.replace(/^\/+/, "")}`);
  } catch {
    return { problem: `${shown} is not a web address: send one ${URL_EXAMPLE}` };
  }
  if (!url.hostname.includes(".") && url.hostname !== "localhost" && !url.hostname.startsWith("[")) {
    return { problem: `${shown} has no domain name: send a full address, ${URL_EXAMPLE}` };
  }
  return { url: url.href };
}

/** A page address as the tool's input: normalized, or a validation issue that says what to fix. */
const webPageUrl = z
  .string()
  .max(4000)
  .transform((raw, ctx) => {
    const checked = normalizePageUrl(raw);
    if ("url" in checked) return checked.url;
    ctx.addIssue({ code: "custom", message: checked.problem });
    return z.NEVER;
  });

// Built once: a tool set is made for every turn, and a schema's construction and its JSON
// Schema (see StepRecorder.wrapTools) cost more than the turn's first database reads.
const tavilySearchInput = z.object({
  query: z.string().min(1).max(400).describe("What to search for"),
  maxResults: z.number().int().min(1).max(10).optional(),
});
const readWebPageInput = z.object({
  url: webPageUrl.describe("The page's address, such as https://example.com/page"),
});

/**
 * Why a page may not be read (outbound-url.ts: credentials in its URL, or a host that is or
 * resolves to a refused address), or null. Tavily, not this machine, fetches the page: a name
 * that does not resolve here is left to it.
 */
async function pageRefusal(url: string, policy: OutboundPolicy): Promise<string | null> {
  try {
    await checkedAddresses(new URL(url), policy, { unresolvable: "pass" });
    return null;
  } catch (error) {
    if (error instanceof OutboundUrlRefused) return error.message;
    throw error;
  }
}

function pageReadFailed(url: string, reason: string): string {
  return `Reading ${url} failed: ${reason.replace(/\.$/, "")}. Try another source, or work from what you have.`;
}

/** The page up to `max` characters, saying so at the end when it was cut. */
function clipPage(content: string, max: number): string {
  if (content.length <= max) return content;
  // Never end on half of a surrogate pair: the stored text would hold a broken character.
  const end = /[\ud800-\udbff]/.test(content[max - 1] ?? "") ? max - 1 : max;
  return `${content.slice(0, end)}\n\n…(page cut to ${max} characters)`;
}

/** Postgres text cannot hold NUL, and a page is text from anywhere. */
function withoutNul(text: string): string {
  return text.replaceAll("\0", "");
}
