import "server-only";
import { sql } from "drizzle-orm";
import type { Db } from "../client";
import { MATCH_END, MATCH_START } from "@/lib/util/search-marks";
import type { AgentRole, ConversationMode, MessageRole } from "../schema";
import { atMicros, olderThan } from "./keyset";

/** Where a match sits in the newest-first order: its time in microseconds (Postgres keeps them; a JS Date would not), then its id. */
export type SearchPosition = { atMicros: bigint; id: string };

/** A message this short is its own snippet, whole; a longer one shows up to two fragments around its matches. */
const WHOLE_SNIPPET_CHARS = 280;

export type MessageMatch = {
  id: string;
  role: Extract<MessageRole, "user" | "assistant">;
  mode: ConversationMode;
  conversationId: string;
  agentId: string;
  agentName: string;
  agentRole: AgentRole;
  createdAt: string;
  atMicros: string;
  /** Up to two fragments around the matches, each match between MATCH_START and MATCH_END. */
  snippet: string;
};

/** The words of a search as Postgres reads them; zero nodes when it holds only stop words ("the", "and"). */
export async function searchTermCount(db: Db, q: string): Promise<number> {
  const [row] = await db.execute<{ nodes: number }>(
    sql`select numnode(websearch_to_tsquery('english', ${q})) as nodes`,
  );
  return Number(row?.nodes ?? 0);
}

/**
 * Messages of a team's conversations (every agent's chat and work log) that match `q`,
 * newest first, `limit` after position `before`. Only what the person and the agents said
 * is searched (user and assistant rows with text): the predicate and the expression are
 * those of `messages_content_search_idx`, so the index finds the rows. Snippets are made for
 * the page's rows only.
 */
export async function searchTeamMessages(
  db: Db,
  input: { teamId: string; q: string; before?: SearchPosition; limit: number },
): Promise<MessageMatch[]> {
  const after = input.before ? sql`and ${olderThan(sql`m.created_at`, sql`m.id`, input.before)}` : sql``;
  // The query is spelled out in place (not a CTE): as a stable expression of a parameter it can be the GIN index's condition.
  const query = sql`websearch_to_tsquery('english', ${input.q})`;
  return db.execute<MessageMatch>(sql`
    with found as (
      select m.id, m.role, m.content, m.created_at, c.mode, c.id as conversation_id, a.id as agent_id, a.name as agent_name, a.role as agent_role
        from messages m
        join conversations c on c.id = m.conversation_id
        join agents a on a.id = c.agent_id
       where a.team_id = ${input.teamId}
         and m.role in ('user', 'assistant') and m.content <> ''
         and to_tsvector('english', m.content) @@ ${query}
         ${after}
       order by m.created_at desc, m.id desc
       limit ${input.limit}
    )
    select f.id, f.role, f.mode, f.conversation_id as "conversationId", f.agent_id as "agentId", f.agent_name as "agentName", f.agent_role as "agentRole",
           f.created_at as "createdAt", ${atMicros(sql`f.created_at`)} as "atMicros",
           ts_headline('english', replace(replace(f.content, ${MATCH_START}, ''), ${MATCH_END}, ''), ${query},
             case when length(f.content) <= ${WHOLE_SNIPPET_CHARS} then ${`StartSel=${MATCH_START}, StopSel=${MATCH_END}, HighlightAll=true`}
                  else ${`StartSel=${MATCH_START}, StopSel=${MATCH_END}, MaxFragments=2, MaxWords=24, MinWords=8, FragmentDelimiter=" … "`} end) as snippet
      from found f
     order by f.created_at desc, f.id desc`);
}
