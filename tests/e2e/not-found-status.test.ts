// Real 404s (issue 25, item 7): every page at an id (a team and its sections, an agent and its
// chat, an inbox item, a session's trace) answers an unknown id — well-formed or not — with
// the HTTP status 404 and the not-found page, against the production build. A notFound() that
// runs after the response began streaming (a loading.tsx, a Suspense boundary) keeps the 200
// it already sent; a known id answers 200.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimSession, endSession } from "@/lib/db/queries/work-sessions";
import { createInboxItem } from "@/lib/db/queries/inbox-items";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTeamFixture } from "../support/fixtures";
import { buildIfStale, startApp, type AppServer } from "./app-server";

let database: TestDatabase;
let app: AppServer;
const known = { team: "", agent: "", item: "", session: "" };

beforeAll(async () => {
  buildIfStale();
  database = await createTestDatabase();
  app = await startApp({ DATABASE_URL: database.url }, ["--web-only"]);
  const { team, lead } = await createTeamFixture(database.db, { name: "Tide desk" });
  const item = await createInboxItem(database.db, {
    teamId: team.id,
    agentId: lead.id,
    type: "briefing",
    title: "Tides",
    summary: "High at noon.",
    content: "High at noon.",
  });
  const session = (await claimSession(database.db, lead.id, "not-found-test"))!;
  await endSession(database.db, session.id, "completed", { steps: 0 });
  Object.assign(known, { team: team.id, agent: lead.id, item: item.id, session: session.id });
}, 300_000);

afterAll(async () => {
  await app?.stop();
  await database?.drop();
}, 60_000);

/** Every page at an id, given the id. */
const PAGES: { name: string; path: (id: string) => string; id: keyof typeof known }[] = [
  { name: "team overview", path: (id) => `/teams/${id}`, id: "team" },
  { name: "team agents", path: (id) => `/teams/${id}/agents`, id: "team" },
  { name: "team tools", path: (id) => `/teams/${id}/tools`, id: "team" },
  { name: "team notifications", path: (id) => `/teams/${id}/notifications`, id: "team" },
  { name: "team settings", path: (id) => `/teams/${id}/settings`, id: "team" },
  { name: "team chat", path: (id) => `/teams/${id}/chat`, id: "team" },
  { name: "team search", path: (id) => `/teams/${id}/search?q=tides`, id: "team" },
  { name: "team timeline", path: (id) => `/teams/${id}/timeline`, id: "team" },
  { name: "team timeline, every step", path: (id) => `/teams/${id}/timeline?view=steps`, id: "team" },
  { name: "agent", path: (id) => `/agents/${id}`, id: "agent" },
  { name: "agent chat", path: (id) => `/agents/${id}/chat`, id: "agent" },
  { name: "inbox item", path: (id) => `/inbox/${id}`, id: "item" },
  { name: "session trace", path: (id) => `/sessions/${id}`, id: "session" },
];

async function get(path: string): Promise<{ status: number; body: string }> {
  // Redirects followed: a team's chat is its lead's.
  const response = await fetch(`${app.url}${path}`);
  return { status: response.status, body: await response.text() };
}

describe("pages at an id", () => {
  it("answer 200 for a known id", async () => {
    const answers = await Promise.all(
      PAGES.map(async (page) => ({ page: page.name, status: (await get(page.path(known[page.id]))).status })),
    );
    expect(answers).toEqual(PAGES.map((page) => ({ page: page.name, status: 200 })));
  });

  it("answer 404 with the not-found page for an unknown id, well-formed or malformed", async () => {
    const answers: { page: string; id: string; status: number; notFoundPage: boolean }[] = [];
    for (const page of PAGES) {
      for (const [id, value] of [
        ["unknown uuid", randomUUID()],
        ["malformed", "not-a-uuid"],
      ] as const) {
        const { status, body } = await get(page.path(value));
        answers.push({ page: page.name, id, status, notFoundPage: body.includes("There is nothing here") });
      }
    }
    expect(answers).toEqual(
      PAGES.flatMap((page) =>
        ["unknown uuid", "malformed"].map((id) => ({ page: page.name, id, status: 404, notFoundPage: true })),
      ),
    );
  });
});
