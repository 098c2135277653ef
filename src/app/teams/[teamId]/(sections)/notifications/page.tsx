import type { Metadata } from "next";
import { NotificationChannels } from "@/components/notification-channels";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { smtpSettings } from "@/lib/env";
import { listTeamNotifications } from "@/lib/notifications/channels";
import { WEBHOOK_HEADERS } from "@/lib/http/webhook-signature";
import { sectionMetadata, teamOr404, type TeamParams } from "../team-section";

export const dynamic = "force-dynamic";

export async function generateMetadata({ params }: TeamParams): Promise<Metadata> {
  return sectionMetadata(params, "Notifications");
}

/** Where briefings, questions, approvals and alerts go besides the inbox, and what was delivered. */
export default async function TeamNotificationsPage({ params }: TeamParams) {
  await requirePageSession();
  const team = await teamOr404(params);
  const notifications = await listTeamNotifications(db(), team.id);
  return (
    <section aria-labelledby="notifications-heading" className="section">
      <h2 id="notifications-heading">Notifications</h2>
      {/* Live by itself: the list reloads on the team's notification events. */}
      <NotificationChannels
        teamId={team.id}
        initial={notifications}
        emailAvailable={smtpSettings() !== null}
        signing={{ timestampHeader: WEBHOOK_HEADERS.timestamp, signatureHeader: WEBHOOK_HEADERS.signature }}
      />
    </section>
  );
}
