import "server-only";
// The inbox a page at a time: newest first, filtered by type, team and archived, paged back
// by the same opaque keyset cursor (created_at to the microsecond, id) as the timeline.
import type { Db } from "@/lib/db/client";
import type { InboxFilter } from "@/lib/db/queries/inbox-items";
import { listInboxView, type InboxListing } from "@/lib/db/queries/views";
import { decodeCursor, encodeCursor } from "@/lib/views/timeline";

const INBOX_PAGE_SIZE = 50;

export type InboxPage = {
  items: InboxListing[];
  /** Pass as `before` for the next page back; null when nothing older matches. */
  nextCursor: string | null;
};

/** One page; a `before` this server did not give out is a 400. */
export async function getInboxPage(
  db: Db,
  filter: Omit<InboxFilter, "before"> & { before?: string },
): Promise<InboxPage> {
  const limit = filter.limit ?? INBOX_PAGE_SIZE;
  const before = filter.before ? decodeCursor(filter.before, "the inbox") : undefined;
  const rows = await listInboxView(db, { ...filter, before, limit: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    items: page.map(({ atMicros: _at, ...item }) => item),
    nextCursor: rows.length > limit && last ? encodeCursor({ atMicros: BigInt(last.atMicros), id: last.id }) : null,
  };
}
