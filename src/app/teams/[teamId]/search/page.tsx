import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { ConversationSearchForm, SearchResults } from "@/components/conversation-search";
import { ErrorNote } from "@/components/ui";
import { findTeam } from "@/app/found";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { CadreError } from "@/lib/errors";
import { searchTeamConversations, type SearchPage } from "@/lib/views/message-search";

export const dynamic = "force-dynamic";
type Props = { params: Promise<{ teamId: string }>; searchParams: Promise<{ q?: string | string[] }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  await requirePageSession();
  const { teamId } = await params;
  const team = await findTeam(teamId);
  return { title: team ? `${team.name} — search` : "Search" };
}

/** Full-text search over the team's chats and work logs (Postgres), newest first. */
export default async function SearchPageView({ params, searchParams }: Props) {
  await requirePageSession();
  const { teamId } = await params;
  const team = await findTeam(teamId);
  if (!team) notFound();
  const raw = (await searchParams).q;
  const q = (Array.isArray(raw) ? raw[0] : raw)?.trim().slice(0, 200) ?? "";
  let first: SearchPage | null = null;
  let problem: string | null = null;
  if (q) {
    try {
      first = await searchTeamConversations(db(), team.id, { q });
    } catch (error) {
      // A search that cannot find anything ("the") says why; anything else is a real failure.
      if (!(error instanceof CadreError) || error.status !== 400) throw error;
      problem = error.message;
    }
  }

  return (
    <div className="page">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/teams">Teams</Link> <span aria-hidden="true">/</span>{" "}
        <Link href={`/teams/${team.id}`}>{team.name}</Link> <span aria-hidden="true">/</span> <span>Search</span>
      </nav>
      <header className="page-header">
        <div>
          <h1>Search</h1>
          <p className="lede">
            What you and {team.name}&apos;s agents said, in every chat and work log. Words match in any form
            (“perovskites” finds “perovskite”); use “quotes” for a phrase and -word to leave a word out.
          </p>
        </div>
      </header>
      <ConversationSearchForm teamId={team.id} q={q} />
      {problem && <ErrorNote message={problem} />}
      {first && <SearchResults key={q} teamId={team.id} q={q} first={first} />}
    </div>
  );
}
