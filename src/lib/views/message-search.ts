import "server-only";
// Full-text search over a team's conversations (every agent's chat and work log): newest
// first, paged by the same kind of keyset cursor as the timeline, each match with a snippet
// and where it was said.
import type { Db } from "@/lib/db/client";
import { searchTeamMessages, searchTermCount, type MessageMatch } from "@/lib/db/queries/message-search";
import { requireTeam } from "@/lib/db/queries/teams";
import { CadreError } from "@/lib/errors";
import { decodeCursor, encodeCursor } from "@/lib/views/timeline";

export const SEARCH_PAGE_SIZE = 20;
export const MAX_SEARCH_CHARS = 200;

export type SearchHit = Omit<MessageMatch, "atMicros" | "conversationId"> & {
  /** Where it was said: the agent's chat, or its work log. */
  href: string;
};

export type SearchPage = { hits: SearchHit[]; nextCursor: string | null };

/**
 * One page of matches for `q` in the team's conversations. Unknown team → 404; a search of
 * only common words ("the") → 400, since it could never find anything.
 */
export async function searchTeamConversations(
  db: Db,
  teamId: string,
  input: { q: string; before?: string; limit?: number },
): Promise<SearchPage> {
  const q = input.q.trim();
  if (!q) throw new CadreError("bad_request:query", "Type something to search for.");
  if (q.length > MAX_SEARCH_CHARS)
    throw new CadreError("bad_request:query", `A search is at most ${MAX_SEARCH_CHARS} characters.`);
  const before = input.before ? decodeCursor(input.before, "this search") : undefined;
  await requireTeam(db, teamId);
  if ((await searchTermCount(db, q)) === 0) {
    throw new CadreError(
      "bad_request:query",
      `“${q}” holds only words too common to search for: add a word that says what you are looking for.`,
    );
  }
  const limit = input.limit ?? SEARCH_PAGE_SIZE;
  const rows = await searchTeamMessages(db, { teamId, q, before, limit: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    hits: page.map(({ atMicros: _at, conversationId: _conversation, createdAt, ...match }) => ({
      ...match,
      createdAt: new Date(createdAt).toISOString(),
      href: match.mode === "foreground" ? `/agents/${match.agentId}/chat` : `/agents/${match.agentId}#work-log`,
    })),
    nextCursor: rows.length > limit && last ? encodeCursor({ atMicros: BigInt(last.atMicros), id: last.id }) : null,
  };
}
