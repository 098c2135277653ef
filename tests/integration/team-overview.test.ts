// What the team page's Overview reads: the questions and approvals that still wait for the person
// (this team's only, archived or not, the longest-waiting first) and the newest briefing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createInboxItem,
  getBackgroundConversation,
  getLatestTeamBriefing,
  listTeamItemsWaitingForPerson,
} from "@/lib/db/queries";
import { createApproval } from "@/lib/db/queries/approvals";
import { createQuestion } from "@/lib/db/queries/questions";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTeamFixture } from "../support/fixtures";

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});

afterAll(async () => {
  await database.drop();
});

async function question(teamId: string, agentId: string, text: string) {
  const asked = await createQuestion(database.db, { agentId, taskId: null, recipientAgentId: null, question: text });
  return createInboxItem(database.db, {
    teamId,
    agentId,
    type: "question",
    title: text,
    summary: text,
    content: text,
    questionId: asked.id,
  });
}

describe("the team Overview's reads", () => {
  it("lists this team's open questions and pending approvals, archived too, oldest first; not answered ones or other teams'", async () => {
    const { team, lead, subordinates } = await createTeamFixture(database.db, { subordinates: ["Scout"] });
    const other = await createTeamFixture(database.db);
    const scout = subordinates[0]!;

    const first = await question(team.id, lead.id, "Which market?");
    const approval = await createApproval(database.db, {
      teamId: team.id,
      agentId: scout.id,
      conversationId: (await getBackgroundConversation(database.db, scout.id)).id,
      taskId: null,
      toolCallId: "call-1",
      toolName: "tavilySearch",
      input: { query: "prices" },
      reason: "",
    });
    const held = await createInboxItem(database.db, {
      teamId: team.id,
      agentId: scout.id,
      type: "approval",
      title: "May I search?",
      summary: "",
      content: "",
      approvalId: approval!.id,
    });
    const answered = await question(team.id, lead.id, "Already answered?");
    await database.sql`update questions set status = 'answered', answer = 'Yes', answered_at = now() where id = (select question_id from inbox_items where id = ${answered.id})`;
    await question(other.team.id, other.lead.id, "Another team's question");
    const archived = await question(team.id, lead.id, "Archived but open?");
    await database.sql`update inbox_items set archived_at = now() where id = ${archived.id}`;
    await createInboxItem(database.db, {
      teamId: team.id,
      agentId: lead.id,
      type: "briefing",
      title: "Not waiting",
      summary: "s",
      content: "c",
    });

    const waiting = await listTeamItemsWaitingForPerson(database.db, team.id);
    expect(waiting.map((item) => item.id)).toEqual([first.id, held.id, archived.id]);
    expect(waiting[1]!.approval?.status).toBe("pending");
    expect(await listTeamItemsWaitingForPerson(database.db, team.id, 2)).toHaveLength(2);
  });

  it("finds the newest briefing of the team, archived or not, and none for a team without", async () => {
    const { team, lead } = await createTeamFixture(database.db);
    expect(await getLatestTeamBriefing(database.db, team.id)).toBeNull();
    await createInboxItem(database.db, {
      teamId: team.id,
      agentId: lead.id,
      type: "briefing",
      title: "Older",
      summary: "s",
      content: "c",
    });
    const newest = await createInboxItem(database.db, {
      teamId: team.id,
      agentId: lead.id,
      type: "briefing",
      title: "Newest",
      summary: "s",
      content: "c",
    });
    await createInboxItem(database.db, {
      teamId: team.id,
      agentId: lead.id,
      type: "alert",
      title: "An alert after it",
      summary: "s",
      content: "c",
    });
    await database.sql`update inbox_items set archived_at = now() where id = ${newest.id}`;
    expect((await getLatestTeamBriefing(database.db, team.id))?.title).toBe("Newest");
  });
});
