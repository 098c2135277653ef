import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { LiveRefresh } from "@/components/live-events";
import { Markdown } from "@/components/markdown";
import { McpServers } from "@/components/mcp-servers";
import { NotificationChannels } from "@/components/notification-channels";
import { AddSubordinateForm, AgentEditor, TeamStatusButton, type LeadScheduleView } from "@/components/team-admin";
import { DeleteTeamButton, TeamSettingsForm } from "@/components/team-settings";
import { TeamUsageSection } from "@/components/team-usage";
import { ToolPoliciesPanel } from "@/components/tool-policies";
import { ToolScopes } from "@/components/tool-scopes";
import { TeamExport } from "@/components/team-export";
import { StatusBadge } from "@/components/ui";
import { WebhookSecretPanel } from "@/components/webhook-secret";
import { listToolPolicies, toolCatalogue } from "@/lib/agents/tool-policies";
import { lastDays, MAX_DIGEST_DAYS } from "@/lib/export/digest";
import { toWire } from "@/lib/api-client";
import { requirePageSession } from "@/lib/auth";
import { db } from "@/lib/db/client";
import { countTeamContents, getTeam, listTeamAgents } from "@/lib/db/queries/teams";
import { getLastScheduledTask } from "@/lib/db/queries/tasks";
import { previewSchedule } from "@/lib/agents/schedule-preview";
import { getWebhookSecretStatus } from "@/lib/db/queries/webhook-status";
import { env, smtpSettings } from "@/lib/env";
import { isUuid } from "@/lib/ids";
import { getTeamActivity } from "@/lib/team-activity";
import { listMcpServerViews } from "@/lib/mcp/servers";
import { listTeamNotifications } from "@/lib/notifications/channels";
import { WEBHOOK_HEADERS, WEBHOOK_TOLERANCE_SECONDS } from "@/lib/webhooks";

export const dynamic = "force-dynamic";
type Props = { params: Promise<{ teamId: string }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  await requirePageSession();
  const { teamId } = await params;
  const team = isUuid(teamId) ? await getTeam(db(), teamId) : null;
  return { title: team?.name ?? "Team" };
}

export default async function TeamPage({ params }: Props) {
  await requirePageSession();
  const { teamId } = await params;
  if (!isUuid(teamId)) notFound();
  const team = await getTeam(db(), teamId);
  if (!team) notFound();
  const [agents, webhook] = await Promise.all([listTeamAgents(db(), team.id), getWebhookSecretStatus(db(), team.id)]);
  const notifications = await listTeamNotifications(db(), team.id);
  const activity = new Map(((await getTeamActivity(db(), [team.id])).get(team.id) ?? []).map((each) => [each.agentId, each]));
  const [toolPolicies, mcpServers] = await Promise.all([listToolPolicies(db(), team.id), listMcpServerViews(db(), team.id).then((views) => views.map(toWire))]);
  const lead = agents.find((agent) => agent.role === "lead");
  const subordinates = agents.filter((agent) => agent.role === "subordinate");
  const [contents, lastRun] = await Promise.all([countTeamContents(db(), team.id), lead ? getLastScheduledTask(db(), lead.id) : null]);
  const leadSchedule: LeadScheduleView | undefined = lead && {
    preview: previewSchedule(lead.schedule ?? env().LEAD_SCHEDULE, lead.scheduleTimeZone),
    defaultCron: env().LEAD_SCHEDULE,
    lastRunAt: lastRun?.createdAt.toISOString() ?? null,
    teamStatus: team.status,
  };
  const teamContext = { name: team.name, mission: team.mission };

  return (
    <div className="page">
      <LiveRefresh tables={["teams", "agents", "work_sessions"]} teamIds={[team.id]} />
      <LiveRefresh tables={["work_sessions", "agents", "tasks", "messages"]} agentIds={agents.map((agent) => agent.id)} mode="background" />
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/teams">Teams</Link> <span aria-hidden="true">/</span> <span>{team.name}</span>
      </nav>
      <header className="page-header">
        <div>
          <h1>
            {team.name} {team.status === "paused" && <StatusBadge status="paused" />}
          </h1>
          <Markdown text={team.mission} className="lede" />
        </div>
        <div className="header-actions">
          <TeamStatusButton teamId={team.id} status={team.status} />
          <Link href={`/teams/${team.id}/timeline`} className="button">
            Timeline
          </Link>
          {lead && (
            <Link href={`/agents/${lead.id}/chat`} className="button button-primary">
              Chat with the lead
            </Link>
          )}
        </div>
      </header>
      {team.status === "paused" && (
        <p className="notice">This team is paused: no scheduled runs, and new tasks wait until you resume it.</p>
      )}

      <section aria-labelledby="lead-heading" className="section">
        <h2 id="lead-heading">Lead</h2>
        {lead ? (
          <AgentEditor agent={lead} activity={activity.get(lead.id)} team={teamContext} schedule={leadSchedule} />
        ) : (
          <p className="notice">This team has no lead.</p>
        )}
      </section>

      <section aria-labelledby="subordinates-heading" className="section">
        <h2 id="subordinates-heading">Subordinates</h2>
        {subordinates.length === 0 ? (
          <p className="hint">No subordinates yet. The lead delegates research to them; add one below.</p>
        ) : (
          <ul className="card-list">
            {subordinates.map((agent) => (
              <li key={agent.id}>
                <AgentEditor agent={agent} activity={activity.get(agent.id)} team={teamContext} removable />
              </li>
            ))}
          </ul>
        )}
        {lead && <AddSubordinateForm teamId={team.id} leadId={lead.id} />}
      </section>

      <TeamUsageSection team={team} />

      <section aria-labelledby="approvals-heading" className="section">
        <h2 id="approvals-heading">Approvals</h2>
        <ToolPoliciesPanel
          // The panel keeps its own copy of the policies: a new tool list (an MCP server added, tested or removed) starts it afresh.
          key={toolPolicies.tools.map((tool) => tool.name).join(" ")}
          teamId={team.id}
          agents={agents.map((agent) => ({ id: agent.id, name: agent.name, role: agent.role }))}
          initial={toolPolicies}
        />
      </section>

      <section aria-labelledby="mcp-heading" className="section">
        <h2 id="mcp-heading">Tools and MCP servers</h2>
        <McpServers teamId={team.id} servers={mcpServers} />
        <section aria-labelledby="scopes-heading" className="subsection">
          <h3 id="scopes-heading">Who may use which tools</h3>
          <ToolScopes
            agents={agents.map((agent) => ({ id: agent.id, name: agent.name, role: agent.role, toolScope: agent.toolScope }))}
            builtIn={toolCatalogue()}
            servers={mcpServers}
          />
        </section>
      </section>

      <section aria-labelledby="webhooks-heading" className="section">
        <h2 id="webhooks-heading">Webhooks</h2>
        <WebhookSecretPanel
          teamId={team.id}
          initial={{ configured: webhook.configured, createdAt: webhook.createdAt?.toISOString() ?? null }}
          signing={{
            timestampHeader: WEBHOOK_HEADERS.timestamp,
            signatureHeader: WEBHOOK_HEADERS.signature,
            nameHeader: WEBHOOK_HEADERS.name,
            toleranceSeconds: WEBHOOK_TOLERANCE_SECONDS,
          }}
        />
      </section>

      <section aria-labelledby="notifications-heading" className="section">
        <h2 id="notifications-heading">Notifications</h2>
        <NotificationChannels
          teamId={team.id}
          initial={notifications}
          emailAvailable={smtpSettings() !== null}
          signing={{ timestampHeader: WEBHOOK_HEADERS.timestamp, signatureHeader: WEBHOOK_HEADERS.signature }}
        />
      </section>

      <section aria-labelledby="export-heading" className="section">
        <h2 id="export-heading">Export</h2>
        <TeamExport teamId={team.id} defaultFrom={lastDays(7).from} defaultTo={lastDays(7).to} maxDays={MAX_DIGEST_DAYS} />
      </section>

      <section aria-labelledby="settings-heading" className="section">
        <h2 id="settings-heading">Team settings</h2>
        {/* A fresh form when the saved values change (another tab, the API). */}
        <TeamSettingsForm key={`${team.name}\n${team.mission}`} teamId={team.id} name={team.name} mission={team.mission} />
      </section>

      <section aria-labelledby="danger-heading" className="section danger-zone">
        <h2 id="danger-heading">Danger zone</h2>
        <div className="card danger-card">
          <p>Deleting the team removes it with its agents, tasks, chats and knowledge. Pausing keeps everything and stops the work.</p>
          <DeleteTeamButton teamId={team.id} teamName={team.name} contents={contents} />
        </div>
      </section>
    </div>
  );
}
