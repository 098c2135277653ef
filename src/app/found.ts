// What a page at an id looks up before anything else, so an unknown id answers a real 404.
//
// Once a response starts streaming its status is sent, and a notFound() after that renders
// the not-found page under a 200 (node_modules/next/dist/docs/01-app/02-guides/streaming.md,
// "Status codes"). Streaming starts at the first Suspense boundary that waits — a loading.tsx
// is one. So there is no loading.tsx at the root: each page at an id sits under a layout of its
// id's segment that calls notFoundUnless (no boundary above it, so the response waits for it),
// with the segment's loading.tsx below that layout; the pages with no id share (lists)/loading.tsx.
import { notFound } from "next/navigation";
import { cache } from "react";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { getAgent } from "@/lib/db/queries/agents";
import { getTeam } from "@/lib/db/queries/teams";
import { getInboxListing, type InboxListing } from "@/lib/db/queries/views";
import { getWorkSession } from "@/lib/db/queries/work-sessions";
import type { Agent, Team, WorkSession } from "@/lib/db/schema";
import { isUuid } from "@/lib/util/ids";

// One read per request, shared by the layout, the page and its title (React's cache); null for
// an id that names nothing, a malformed one without asking the database.
export const findTeam = cache(async (id: string): Promise<Team | null> => (isUuid(id) ? getTeam(db(), id) : null));
export const findAgent = cache(async (id: string): Promise<Agent | null> => (isUuid(id) ? getAgent(db(), id) : null));
export const findInboxItem = cache(
  async (id: string): Promise<InboxListing | null> => (isUuid(id) ? getInboxListing(db(), id) : null),
);
export const findWorkSession = cache(
  async (id: string): Promise<WorkSession | null> => (isUuid(id) ? getWorkSession(db(), id) : null),
);

/**
 * For the layout of a page at an id: the not-found page with the status 404 when `found`
 * comes back null. The visitor's session is checked first, so a signed-out visitor learns
 * nothing about which ids exist. A read that fails says nothing about the id: the page under
 * the layout meets the same failure (the cached promise) inside its loading boundary and shows
 * its error page, which retries by itself.
 */
export async function notFoundUnless(find: () => Promise<unknown>): Promise<void> {
  await requirePageSession();
  if ((await find().catch(() => undefined)) === null) notFound();
}
