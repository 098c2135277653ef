// An upgrade in place keeps everything and its figures (issue 34, item 6). The database the
// previous release (831fcfd, migrations 0000–0015) made with its own code and offline model —
// tests/fixtures/previous-release.sql, made by tests/fixtures/make-previous-release.sh: two
// teams, a research story to a briefing, an open question, a call waiting for approval,
// knowledge, a notification channel, a budget — is restored into a fresh database and migrated
// to this release. Every row is still there, the old usage rows name their task (0023), and
// the stories, usage, timeline, knowledge and team pages' API answers read right: the old
// request's story shows its tokens and cost.
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { createDatabase, type Database } from "@/lib/db/client";
import { migrateDatabase } from "@/lib/db/migrate";
import { upsertModelPrice } from "@/lib/db/queries/model-prices";
import type { StoryPage } from "@/lib/views/stories";
import { withDatabase } from "../../scripts/lib/postgres-server";
import { closeWebTestDatabase } from "../support/web";

const DUMP = path.join(process.cwd(), "tests", "fixtures", "previous-release.sql");
/** The tables whose rows the previous release wrote and an upgrade must keep, each row. */
const KEPT = [
  "teams",
  "agents",
  "tasks",
  "conversations",
  "messages",
  "usage",
  "work_sessions",
  "questions",
  "approvals",
  "inbox_items",
  "knowledge_items",
  "notification_channels",
  "tool_policies",
];

let adminUrl: string;
let name: string;
let database: Database & { drop: () => Promise<void> };
let dumpRows: Map<string, number>;

type Handler = { GET: (request: Request, context: never) => Promise<Response> };

async function get<T>(handler: Handler, url: string, params: Record<string, string> = {}): Promise<T> {
  const response = await handler.GET(new Request(`http://localhost${url}`), {
    params: Promise.resolve(params),
  } as never);
  expect(response.status, `${url}: ${await response.clone().text()}`).toBe(200);
  return (await response.json()) as T;
}

beforeAll(async () => {
  adminUrl = inject("databaseAdminUrl");
  name = `cadre_upgrade_${randomBytes(6).toString("hex")}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const url = withDatabase(adminUrl, name);
  const dump = await readFile(DUMP, "utf8");
  dumpRows = new Map();
  for (const [, table] of dump.matchAll(/^INSERT INTO public\.(\w+) /gm))
    dumpRows.set(table!, (dumpRows.get(table!) ?? 0) + 1);
  // The dump sets its own search_path: it runs on a connection of its own, as psql would run it.
  const restore = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await restore.unsafe(dump).simple();
  } finally {
    await restore.end({ timeout: 5 });
  }
  await migrateDatabase(url);
  const opened = createDatabase(url, { max: 4 });
  database = {
    ...opened,
    drop: async () => {
      await opened.close();
      const dropper = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await dropper.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await dropper.end({ timeout: 5 });
      }
    },
  };
  // The route handlers' engine reads DATABASE_URL on first use; the offline model, no network.
  for (const setting of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_MODEL", "TAVILY_API_KEY", "TAVILY_BASE_URL"])
    delete process.env[setting];
  process.env.DATABASE_URL = url;
}, 120_000);

afterAll(async () => {
  await closeWebTestDatabase(database as never);
});

const count = async (query: ReturnType<typeof sql>) =>
  Number((await database.db.execute<{ n: string }>(query))[0]?.n ?? 0);

describe("an upgrade from the previous release", () => {
  it("keeps every row the previous release wrote", async () => {
    for (const table of KEPT) {
      const kept = await count(sql`select count(*) as n from ${sql.identifier(table)}`);
      expect(kept, table).toBe(dumpRows.get(table) ?? 0);
    }
    // What the previous release made: a story to a briefing, a question and a call waiting for the person.
    expect(dumpRows.get("usage")).toBeGreaterThan(5);
    expect(await count(sql`select count(*) as n from inbox_items where type = 'briefing'`)).toBe(1);
    expect(await count(sql`select count(*) as n from questions where status = 'open'`)).toBe(1);
    expect(await count(sql`select count(*) as n from approvals where status = 'pending'`)).toBe(1);
  });

  it("gives each old call made in a work session the task it worked on (0023)", async () => {
    const inSessions = await count(sql`select count(*) as n from usage where work_session_id is not null`);
    expect(inSessions).toBeGreaterThan(5);
    expect(
      await count(sql`select count(*) as n from usage where work_session_id is not null and task_id is null`),
    ).toBe(0);
    // Each call's task is its own agent's.
    expect(
      await count(
        sql`select count(*) as n from usage u join tasks t on t.id = u.task_id where t.agent_id <> u.agent_id`,
      ),
    ).toBe(0);
  });

  it("shows the old stories with their tokens and cost, and every page's figures", async () => {
    // The offline model had no price; with one, an old call costs what its tokens say.
    await upsertModelPrice(database.db, "offline", {
      inputUsdPerMtok: 2,
      outputUsdPerMtok: 8,
      cachedInputUsdPerMtok: null,
    });
    const [solar] = await database.db.execute<{ id: string }>(sql`select id from teams where name = 'Solar Watch'`);
    const [grid] = await database.db.execute<{ id: string }>(sql`select id from teams where name = 'Grid Desk'`);
    const teamId = solar!.id;

    const stories = await get<StoryPage>(
      await import("@/app/api/teams/[teamId]/stories/route"),
      `/api/teams/${teamId}/stories`,
      { teamId },
    );
    const story = stories.stories.find((each) => each.title === "Research solar panel prices in Europe");
    expect(story, JSON.stringify(stories.stories.map((each) => each.title))).toBeDefined();
    const [spent] = await database.db.execute<{ tokens: string }>(sql`
      select sum(u.input_tokens + u.output_tokens) as tokens from usage u join tasks t on t.id = u.task_id
       where t.root_task_id = ${story!.id}`);
    expect(story!.cost.tokens).toBeGreaterThan(0);
    expect(story!.cost.tokens).toBe(Number(spent!.tokens));
    expect(story!.cost.usd).toBeGreaterThan(0);
    expect(story!.cost.unpriced).toBe(false);
    // The lead's part and Scout's part each show their own calls.
    for (const part of story!.parts) expect(part.cost.tokens, part.agent.name).toBeGreaterThan(0);

    // The Grid Desk's stories: waiting for the person (a question, a call to approve).
    const gridStories = await get<StoryPage>(
      await import("@/app/api/teams/[teamId]/stories/route"),
      `/api/teams/${grid!.id}/stories`,
      { teamId: grid!.id },
    );
    expect(gridStories.stories.map((each) => each.status).sort()).toEqual(["waiting-for-you", "waiting-for-you"]);

    // The other pages' answers read as before.
    const teams = await get<{ teams: { id: string }[] } | { id: string }[]>(
      await import("@/app/api/teams/route"),
      "/api/teams",
    );
    expect(JSON.stringify(teams)).toContain(teamId);
    await get(await import("@/app/api/teams/[teamId]/route"), `/api/teams/${teamId}`, { teamId });
    await get(await import("@/app/api/teams/[teamId]/timeline/route"), `/api/teams/${teamId}/timeline`, { teamId });
    const channels = await get<unknown>(
      await import("@/app/api/teams/[teamId]/notification-channels/route"),
      `/api/teams/${teamId}/notification-channels`,
      { teamId },
    );
    expect(JSON.stringify(channels)).toContain("Ops hook");
    expect(JSON.stringify(channels)).not.toContain("previous-release-secret");
    const knowledge = await get<unknown>(await import("@/app/api/knowledge/route"), `/api/knowledge?teamId=${teamId}`);
    expect(JSON.stringify(knowledge)).toContain("euros per watt");
    const usage = await get<unknown>(await import("@/app/api/usage/route"), "/api/usage");
    expect(JSON.stringify(usage)).toContain("offline");
  });
});
