import { notFound, redirect } from "next/navigation";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { getTeamLead } from "@/lib/db/queries/agents";
import { isUuid } from "@/lib/util/ids";

export const dynamic = "force-dynamic";
type Props = { params: Promise<{ teamId: string }> };

/**
 * The team's chat is its lead's: every agent's chat lives at /agents/:id/chat, and old links land
 * there. No loading boundary is above this page, so the redirect is an HTTP 307 before anything is
 * sent, not a client-side hop after the page has loaded.
 */
export default async function TeamChatPage({ params }: Props) {
  await requirePageSession();
  const { teamId } = await params;
  if (!isUuid(teamId)) notFound();
  const lead = await getTeamLead(db(), teamId);
  if (!lead) notFound();
  redirect(`/agents/${lead.id}/chat`);
}
