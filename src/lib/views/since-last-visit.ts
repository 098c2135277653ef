import "server-only";
import { listNewsSince } from "@/lib/db/queries/since-last-visit";
import type { Db } from "@/lib/db/client";
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
  const rows = await listNewsSince(db, since, SINCE_LAST_VISIT_LIMIT);

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
