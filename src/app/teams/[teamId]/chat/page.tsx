import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { Chat } from "@/components/chat";
import { LiveRefresh } from "@/components/live-events";
import { StatusBadge } from "@/components/ui";
import { requirePageSession } from "@/lib/auth";
import { toWire } from "@/lib/api-client";
import { toChatMessages } from "@/lib/chat-messages";
import { db } from "@/lib/db/client";
import { getTeamLead } from "@/lib/db/queries/agents";
import { listAgentApprovals } from "@/lib/db/queries/approvals";
import { getConversationByMode } from "@/lib/db/queries/conversations";
import { listMessages } from "@/lib/db/queries/messages";
import { getTeam } from "@/lib/db/queries/teams";
import { getRunningSession } from "@/lib/db/queries/work-sessions";
import { isUuid } from "@/lib/ids";

export const dynamic = "force-dynamic";
type Props = { params: Promise<{ teamId: string }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  await requirePageSession();
  const { teamId } = await params;
  const team = isUuid(teamId) ? await getTeam(db(), teamId) : null;
  return { title: team ? `Chat · ${team.name}` : "Chat" };
}

export default async function ChatPage({ params }: Props) {
  await requirePageSession();
  const { teamId } = await params;
  if (!isUuid(teamId)) notFound();
  const team = await getTeam(db(), teamId);
  if (!team) notFound();
  const lead = await getTeamLead(db(), team.id);
  if (!lead) notFound();
  const conversation = await getConversationByMode(db(), lead.id, "foreground");
  const [stored, session, approvals] = await Promise.all([
    conversation ? listMessages(db(), conversation.id, { limit: 300 }) : Promise.resolve([]),
    getRunningSession(db(), lead.id),
    listAgentApprovals(db(), lead.id),
  ]);

  return (
    <div className="page page-chat">
      <LiveRefresh tables={["work_sessions"]} agentIds={[lead.id]} />
      <header className="chat-header">
        <nav aria-label="Breadcrumb" className="crumbs">
          <Link href="/teams">Teams</Link> <span aria-hidden="true">/</span> <Link href={`/teams/${team.id}`}>{team.name}</Link>{" "}
          <span aria-hidden="true">/</span> <span>Chat</span>
        </nav>
        <div className="chat-title">
          <h1>{lead.name}</h1>
          <span className={session ? "pill pill-live" : "pill"}>{session ? "working in the background" : "idle"}</span>
          {team.status === "paused" && <StatusBadge status="paused" />}
          <Link href={`/agents/${lead.id}`} className="meta-link">
            Work log
          </Link>
        </div>
      </header>
      <Chat
        agentId={lead.id}
        agentName={lead.name}
        initialMessages={toChatMessages(stored)}
        initialApprovals={approvals.map(toWire)}
      />
    </div>
  );
}
