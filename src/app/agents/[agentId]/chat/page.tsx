import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { AgentActivityLine } from "@/components/agent-activity";
import { Chat } from "@/components/chat";
import { LiveRefresh } from "@/components/live-events";
import { StatusBadge } from "@/components/ui";
import { findAgent } from "@/app/found";
import { requirePageSession } from "@/lib/auth/auth";
import { toWire } from "@/lib/client/api-client";
import { CHAT_PAGE_SIZE, toApiMessage } from "@/lib/views/chat-messages";
import { db } from "@/lib/db/client";
import { listAgentApprovals } from "@/lib/db/queries/approvals";
import { getConversationByMode } from "@/lib/db/queries/conversations";
import { listMessages } from "@/lib/db/queries/messages";
import { listTeamAgents } from "@/lib/db/queries/teams";
import { getTeam } from "@/lib/db/queries/teams";
import { isUuid } from "@/lib/util/ids";
import { getTeamActivity } from "@/lib/views/team-activity";
import { listMessagesAround } from "@/lib/views/work-log-page";

export const dynamic = "force-dynamic";
type Props = { params: Promise<{ agentId: string }>; searchParams: Promise<{ message?: string | string[] }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  await requirePageSession();
  const { agentId } = await params;
  const agent = await findAgent(agentId);
  return { title: agent ? `Chat · ${agent.name}` : "Chat" };
}

/** The person's foreground conversation with one agent, lead or subordinate. */
export default async function AgentChatPage({ params, searchParams }: Props) {
  await requirePageSession();
  const { agentId } = await params;
  const agent = await findAgent(agentId);
  if (!agent) notFound();
  const [team, members, conversation, teamActivity, approvals] = await Promise.all([
    getTeam(db(), agent.teamId),
    listTeamAgents(db(), agent.teamId),
    getConversationByMode(db(), agent.id, "foreground"),
    getTeamActivity(db(), [agent.teamId]).then((teams) => teams.get(agent.teamId) ?? []),
    listAgentApprovals(db(), agent.id),
  ]);
  const activity = teamActivity.find((each) => each.agentId === agent.id);
  const subordinateIds = members.filter((member) => member.parentAgentId === agent.id).map((member) => member.id);
  if (!team) notFound();
  // A link to one message (a knowledge source) opens the chat there, with everything after it;
  // a message that is not in this chat opens it as usual, at the newest.
  const { message: linked } = await searchParams;
  const around =
    conversation && typeof linked === "string" && isUuid(linked)
      ? await listMessagesAround(db(), conversation.id, linked, "this chat").catch(() => null)
      : null;
  const stored = around ?? (conversation ? await listMessages(db(), conversation.id, { limit: CHAT_PAGE_SIZE }) : []);
  const lead = agent.role === "lead" ? null : members.find((member) => member.id === agent.parentAgentId);

  return (
    <div className="page page-chat">
      {/* The header's activity: this agent's session and work log, and for a lead its subordinates' sessions. */}
      <LiveRefresh tables={["work_sessions", "tasks", "messages"]} agentIds={[agent.id]} mode="background" />
      {subordinateIds.length > 0 && <LiveRefresh tables={["work_sessions"]} agentIds={subordinateIds} />}
      <header className="chat-header">
        <nav aria-label="Breadcrumb" className="crumbs">
          <Link href="/teams">Teams</Link> <span aria-hidden="true">/</span>{" "}
          <Link href={`/teams/${team.id}`}>{team.name}</Link> <span aria-hidden="true">/</span>{" "}
          <Link href={`/agents/${agent.id}`}>{agent.name}</Link> <span aria-hidden="true">/</span> <span>Chat</span>
        </nav>
        <div className="chat-title">
          <h1>{agent.name}</h1>
          <span className="pill">{agent.role}</span>
          {team.status === "paused" && <StatusBadge status="paused" />}
          <Link href={`/agents/${agent.id}#work-log`} className="meta-link">
            Work log
          </Link>
        </div>
        {activity && <AgentActivityLine activity={activity} />}
        {lead && (
          <p className="hint">
            Reports to <Link href={`/agents/${lead.id}/chat`}>{lead.name}</Link>. Work you give {agent.name} here is its
            own task; its report goes to {lead.name}.
          </p>
        )}
      </header>
      <Chat
        agentId={agent.id}
        agentName={agent.name}
        agentRole={agent.role}
        initialMessages={stored.map(toApiMessage)}
        initialApprovals={approvals.map(toWire)}
        highlight={around ? (linked as string) : undefined}
      />
    </div>
  );
}
