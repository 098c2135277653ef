import "server-only";
// "Since you were last here": per team, the work that finished or failed, the briefings and
// the knowledge learned after a given time. The home page's read.
import { sql } from "drizzle-orm";
import type { Db } from "@/lib/db/client";
import { taskStatusIn } from "@/lib/db/queries/tasks";
import type { KnowledgeItemType } from "@/lib/db/schema";

/** How many entries of each kind a team shows; the rest are counted ("and 12 more"). */
export const SINCE_LAST_VISIT_LIMIT = 5;

type EndedTask = {
  id: string;
  title: string;
  status: "completed" | "failed";
  result: string | null;
  agentId: string;
  agentName: string;
  endedAt: string;
};
type NewBriefing = { id: string; title: string; summary: string; agentName: string; createdAt: string };
type NewKnowledge = {
  id: string;
  type: KnowledgeItemType;
  content: string;
  agentName: string;
  createdAt: string;
};

export type TeamNews = {
  teamId: string;
  teamName: string;
  completed: number;
  failed: number;
  briefings: number;
  knowledge: number;
  /** The newest SINCE_LAST_VISIT_LIMIT of each, newest first. */
  tasks: EndedTask[];
  briefingItems: NewBriefing[];
  knowledgeItems: NewKnowledge[];
};

type Row = {
  kind: "task" | "briefing" | "knowledge";
  team_id: string;
  team_name: string;
  id: string;
  title: string;
  body: string | null;
  status: string | null;
  agent_id: string;
  agent_name: string;
  at: string | Date;
  total: number;
};

/** The first part of a long text, for a line on the home page (the link leads to the whole). */
function excerpt(text: string | null, limit = 280): string | null {
  if (text === null) return null;
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > limit ? `${flat.slice(0, limit - 1)}…` : flat;
}

/**
 * What happened in every team after `since`, teams with news only, the team with the newest
 * news first. One statement: each kind is cut to the newest few per team by a window, and
 * counted whole, so the page costs the same with 10 or 10 000 entries behind it.
 */
export async function getSinceLastVisit(db: Db, since: Date): Promise<TeamNews[]> {
  const after = sql`${since.toISOString()}::timestamptz`;
  const rows = await db.execute<Row>(sql`
    with news as (
      select 'task' as kind, a.team_id, t.id, t.title, t.result as body, t.status, a.id as agent_id, a.name as agent_name, t.completed_at as at
        from tasks t join agents a on a.id = t.agent_id
       where ${taskStatusIn(sql`t.status`, ["completed", "failed"])} and t.completed_at > ${after}
      union all
      select 'briefing', i.team_id, i.id, i.title, i.summary, null, a.id, a.name, i.created_at
        from inbox_items i join agents a on a.id = i.agent_id
       where i.type = 'briefing' and i.created_at > ${after}
      union all
      select 'knowledge', a.team_id, k.id, k.type, k.content, null, a.id, a.name, k.created_at
        from knowledge_items k join agents a on a.id = k.agent_id
       where k.created_at > ${after}
    ), ranked as (
      select news.*,
             row_number() over (partition by team_id, kind, status order by at desc, id desc) as rank,
             count(*) over (partition by team_id, kind, status)::int as total,
             max(at) over (partition by team_id) as team_latest
        from news
    )
    select ranked.kind, ranked.team_id, teams.name as team_name, ranked.id, ranked.title, ranked.body, ranked.status,
           ranked.agent_id, ranked.agent_name, ranked.at, ranked.total
      from ranked join teams on teams.id = ranked.team_id
     where ranked.rank <= ${SINCE_LAST_VISIT_LIMIT}
     order by ranked.team_latest desc, ranked.team_id, ranked.at desc, ranked.id desc`);

  const teams = new Map<string, TeamNews>();
  for (const row of rows) {
    let team = teams.get(row.team_id);
    if (!team) {
      team = {
        teamId: row.team_id,
        teamName: row.team_name,
        completed: 0,
        failed: 0,
        briefings: 0,
        knowledge: 0,
        tasks: [],
        briefingItems: [],
        knowledgeItems: [],
      };
      teams.set(row.team_id, team);
    }
    const at = new Date(row.at).toISOString();
    if (row.kind === "task") {
      const status = row.status === "failed" ? "failed" : "completed";
      team[status] = row.total;
      team.tasks.push({
        id: row.id,
        title: row.title,
        status,
        result: excerpt(row.body),
        agentId: row.agent_id,
        agentName: row.agent_name,
        endedAt: at,
      });
    } else if (row.kind === "briefing") {
      team.briefings = row.total;
      team.briefingItems.push({
        id: row.id,
        title: row.title,
        summary: excerpt(row.body) ?? "",
        agentName: row.agent_name,
        createdAt: at,
      });
    } else {
      team.knowledge = row.total;
      team.knowledgeItems.push({
        id: row.id,
        type: row.title as KnowledgeItemType,
        content: excerpt(row.body) ?? "",
        agentName: row.agent_name,
        createdAt: at,
      });
    }
  }
  return [...teams.values()];
}
