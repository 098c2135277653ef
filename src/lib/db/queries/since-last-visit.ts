import "server-only";
// What happened in every team after a moment, the newest few of each kind per team (views/since-last-visit.ts shapes it).
import { sql } from "drizzle-orm";
import type { Db } from "@/lib/db/client";
import { taskStatusIn } from "@/lib/db/queries/tasks";

export type NewsRow = {
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

export function listNewsSince(db: Db, since: Date, limit: number) {
  const after = sql`${since.toISOString()}::timestamptz`;
  return db.execute<NewsRow>(sql`
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
     where ranked.rank <= ${limit}
     order by ranked.team_latest desc, ranked.team_id, ranked.at desc, ranked.id desc`);
}
