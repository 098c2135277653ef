import "server-only";
import type { Db } from "@/lib/db/client";
import { getMessagesSince } from "@/lib/db/queries/messages";
import {
  listTeamAgentsForRecord,
  listTeamApprovals,
  listTeamConversations,
  listTeamInboxItems,
  listTeamKnowledge,
  listTeamMcpServersForRecord,
  listTeamNotificationChannels,
  listTeamQuestions,
  listTeamTasks,
  listTeamToolPolicies,
  listTeamUsagePage,
  listTeamWorkSessions,
} from "@/lib/db/queries/team-record";
import type { Team } from "@/lib/db/schema";
import { exportFileName } from "./file-names";
import { logError } from "@/lib/telemetry/log";

/** Messages read per query: a conversation of 100 000 messages streams in pages, never held at once. */
export const MESSAGE_PAGE_SIZE = 500;
const USAGE_PAGE_SIZE = 1000;

const TEAM_RECORD_FORMAT = "cadre-team-record";
const TEAM_RECORD_VERSION = 1;

/** `cadre-<team name>-<YYYY-MM-DD>.json`. */
export function teamRecordFileName(team: Pick<Team, "name">, at: Date): string {
  return exportFileName(team, at.toISOString().slice(0, 10), "json");
}

/**
 * A team's whole record as one JSON document, streamed: the team, its agents and settings
 * (no secrets), tasks, work sessions, questions, approvals, inbox, knowledge, then every
 * conversation (work logs and chats) with its messages in chain order, then usage. Messages
 * and usage are read page by page as the reader asks for more, so memory stays flat however
 * long the history. Read while the team may go on working: each part is as it was when read.
 */
export function teamRecordStream(db: Db, team: Team, exportedAt: Date = new Date()): ReadableStream<Uint8Array> {
  const parts = teamRecordParts(db, team, exportedAt);
  const encoder = new TextEncoder();
  // A client that goes away while a page is being read closes the stream under that read.
  let cancelled = false;
  return new ReadableStream<Uint8Array>({
    // Pulled: the next page is read only when the client has taken the last one.
    pull: async (controller) => {
      try {
        const next = await parts.next();
        if (cancelled) return;
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(next.value));
      } catch (error) {
        if (cancelled) return; // the download was abandoned: nothing went wrong
        // The status line went out with the first bytes: the download breaks off, and the cause is logged here.
        logError(`Could not export the record of team ${team.id}`, error);
        controller.error(error);
      }
    },
    cancel: async () => {
      cancelled = true;
      await parts.return(undefined);
    },
  });
}

async function* teamRecordParts(db: Db, team: Team, exportedAt: Date): AsyncGenerator<string> {
  const teamId = team.id;
  yield `{"format":${json(TEAM_RECORD_FORMAT)},"version":${TEAM_RECORD_VERSION},"exportedAt":${json(exportedAt)},"team":${json(team)}`;
  yield `,"agents":${json(await listTeamAgentsForRecord(db, teamId))}`;
  yield `,"toolPolicies":${json(await listTeamToolPolicies(db, teamId))}`;
  yield `,"mcpServers":${json(await listTeamMcpServersForRecord(db, teamId))}`;
  yield `,"notificationChannels":${json(await listTeamNotificationChannels(db, teamId))}`;
  yield `,"tasks":${json(await listTeamTasks(db, teamId))}`;
  yield `,"workSessions":${json(await listTeamWorkSessions(db, teamId))}`;
  yield `,"questions":${json(await listTeamQuestions(db, teamId))}`;
  yield `,"approvals":${json(await listTeamApprovals(db, teamId))}`;
  yield `,"inbox":${json(await listTeamInboxItems(db, teamId))}`;
  yield `,"knowledge":${json(await listTeamKnowledge(db, teamId))}`;

  yield `,"conversations":[`;
  let firstConversation = true;
  for (const conversation of await listTeamConversations(db, teamId)) {
    const { lastMessageId: _tail, ...described } = conversation;
    const head = json(described);
    yield `${firstConversation ? "" : ","}${head.slice(0, -1)},"messages":[`;
    firstConversation = false;
    let after: string | null = null;
    let firstMessage = true;
    for (;;) {
      const page = await getMessagesSince(db, conversation.id, after, { limit: MESSAGE_PAGE_SIZE });
      if (page.length === 0) break;
      yield (firstMessage ? "" : ",") + page.map((message) => json(message)).join(",");
      firstMessage = false;
      after = page.at(-1)!.id;
      if (page.length < MESSAGE_PAGE_SIZE) break;
    }
    yield "]}";
  }
  yield "]";

  yield `,"usage":[`;
  let after: string | null = null;
  let firstUsage = true;
  for (;;) {
    const page = await listTeamUsagePage(db, teamId, after, USAGE_PAGE_SIZE);
    if (page.length === 0) break;
    yield (firstUsage ? "" : ",") + page.map((row) => json(row)).join(",");
    firstUsage = false;
    after = page.at(-1)!.id;
    if (page.length < USAGE_PAGE_SIZE) break;
  }
  yield "]}\n";
}

function json(value: unknown): string {
  return JSON.stringify(value);
}
