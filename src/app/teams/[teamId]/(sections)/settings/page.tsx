import type { Metadata } from "next";
import { LeadModelForm, LeadScheduleForm } from "@/components/lead-settings";
import { ModelCards, type ModelInUseCard } from "@/components/model-cards";
import { TeamExport } from "@/components/team-export";
import { DeleteTeamButton, TeamSettingsForm } from "@/components/team-settings";
import { TeamUsageSection } from "@/components/team-usage";
import { WebhookSecretPanel } from "@/components/webhook-secret";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { getTeamLead } from "@/lib/db/queries/agents";
import { getLastScheduledTask } from "@/lib/db/queries/tasks";
import { countTeamContents } from "@/lib/db/queries/teams";
import { getWebhookSecretStatus } from "@/lib/db/queries/webhook-status";
import { env } from "@/lib/env";
import { lastDays, MAX_DIGEST_DAYS } from "@/lib/export/digest";
import { listTeamModels } from "@/lib/domain/model-profiles";
import { chooseModel, usingOfflineModel } from "@/lib/llm/provider";
import { modelCard, offlineModelCard } from "@/lib/views/model-card";
import { WEBHOOK_HEADERS, WEBHOOK_TOLERANCE_SECONDS } from "@/lib/http/webhook-signature";
import { sectionMetadata, teamOr404, type TeamParams } from "../team-section";

export const dynamic = "force-dynamic";

export async function generateMetadata({ params }: TeamParams): Promise<Metadata> {
  return sectionMetadata(params, "Settings");
}

/** The team's name and mission, when the lead runs and on which model, budgets, webhooks, export, and deleting it. */
export default async function TeamSettingsPage({ params }: TeamParams) {
  await requirePageSession();
  const team = await teamOr404(params);
  const [lead, webhook, contents, models] = await Promise.all([
    getTeamLead(db(), team.id),
    getWebhookSecretStatus(db(), team.id),
    countTeamContents(db(), team.id),
    listTeamModels(db(), team.id),
  ]);
  const modelCards: ModelInUseCard[] = usingOfflineModel()
    ? [{ card: offlineModelCard(), agents: [] }]
    : models.map(({ model, agents, profile }) => ({
        card: modelCard(model, profile, env().CONTEXT_TOKEN_BUDGET),
        agents,
      }));
  const lastRun = lead ? await getLastScheduledTask(db(), lead.id) : null;
  const week = lastDays(7);

  return (
    <>
      {/* Live through the layout's refresh on the team's and its agents' changes (name, budgets, schedule, model). */}
      <section aria-labelledby="settings-heading" className="section">
        <h2 id="settings-heading">Team settings</h2>
        {/* A fresh form when the saved values change (another tab, the API). */}
        <TeamSettingsForm
          key={`${team.name}\n${team.mission}`}
          teamId={team.id}
          name={team.name}
          mission={team.mission}
        />
      </section>

      {lead && (
        <div className="settings-pair">
          <section aria-labelledby="schedule-heading" className="section" id="schedule">
            <h2 id="schedule-heading">Schedule</h2>
            <p className="hint">
              When {lead.name}, the lead, works on the mission by itself
              {team.status === "paused" ? " (not while the team is paused)" : ""}. Runs are skipped while it is already
              working.
            </p>
            {/* No key from the saved values: a remount on save would drop the form's "Saved." */}
            <LeadScheduleForm
              agentId={lead.id}
              schedule={lead.schedule}
              timeZone={lead.scheduleTimeZone}
              defaultCron={env().LEAD_SCHEDULE}
              lastRunAt={lastRun?.createdAt.toISOString() ?? null}
            />
          </section>
          <section aria-labelledby="model-heading" className="section" id="model">
            <h2 id="model-heading">Model</h2>
            <p className="hint">The model {lead.name} thinks with. Each subordinate can have its own (Agents, Edit).</p>
            <LeadModelForm
              agentId={lead.id}
              model={lead.model}
              defaultModel={usingOfflineModel() ? undefined : chooseModel(null).modelId}
            />
            {/* Beside the model it is about, where the pair has room: the schedule's column is the taller. */}
            <div className="model-compatibility" id="compatibility">
              {/* The demo model's card says all there is: no heading to introduce it. */}
              {!usingOfflineModel() && (
                <>
                  <h3>How the models behave</h3>
                  <p className="hint">
                    Models and their servers do not all do what they are told. A check asks a model a few small
                    questions; Cadre adapts to what it does.
                  </p>
                </>
              )}
              <ModelCards models={modelCards} />
            </div>
          </section>
        </div>
      )}

      <TeamUsageSection team={team} />

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

      <section aria-labelledby="export-heading" className="section">
        <h2 id="export-heading">Export</h2>
        <TeamExport teamId={team.id} defaultFrom={week.from} defaultTo={week.to} maxDays={MAX_DIGEST_DAYS} />
      </section>

      <section aria-labelledby="danger-heading" className="section danger-zone">
        <h2 id="danger-heading">Danger zone</h2>
        <div className="card danger-card">
          <p>
            Deleting the team removes it with its agents, tasks, chats and knowledge. Pausing keeps everything and stops
            the work.
          </p>
          <DeleteTeamButton teamId={team.id} teamName={team.name} contents={contents} />
        </div>
      </section>
    </>
  );
}
