// The team page's Notifications section, rendered on the server as the page first sends it:
// every control has a name of its own (one per channel), and the form labels its fields.
import { createElement } from "react";
import { renderToString } from "react-dom/server";
import { describe, expect, it, vi } from "vitest";
import { NotificationChannels, type ChannelView, type DeliveryView } from "./notification-channels";

vi.mock("next/navigation", () => ({ useRouter: () => ({ refresh: () => {} }) }));

const channels: ChannelView[] = [
  {
    id: "c1",
    type: "webhook",
    name: "Team Slack",
    url: "https://hooks.slack.com/services/T0/B0/abc",
    recipient: null,
    kinds: ["briefing", "alert"],
    enabled: true,
  },
  { id: "c2", type: "email", name: "Me", url: null, recipient: "me@example.com", kinds: ["question"], enabled: false },
];
const deliveries: DeliveryView[] = [
  {
    id: "n1",
    channelName: "Team Slack",
    kind: "alert",
    title: "Task failed",
    status: "failed",
    attempts: 9,
    lastError: "HTTP 500 from https://hooks.slack.com/services/T0/B0/abc: boom",
    createdAt: "2026-01-01T00:00:00Z",
    sentAt: null,
  },
  {
    id: "n2",
    channelName: "Me",
    kind: "test",
    title: "Test notification from Cadre (Solar)",
    status: "sent",
    attempts: 1,
    lastError: null,
    createdAt: "2026-01-01T00:00:00Z",
    sentAt: "2026-01-01T00:00:01Z",
  },
];
const signing = { timestampHeader: "x-cadre-timestamp", signatureHeader: "x-cadre-signature" };

function render(emailAvailable: boolean, listing = { channels, deliveries }): string {
  // Without the markers React puts between adjacent text nodes.
  return renderToString(
    createElement(NotificationChannels, { teamId: "t1", initial: listing, emailAvailable, signing }),
  ).replaceAll("<!-- -->", "");
}

describe("NotificationChannels", () => {
  it("names each channel's buttons after the channel and shows its target, kinds and state", () => {
    const html = render(true);
    for (const name of ["Team Slack", "Me"]) {
      expect(html).toContain(`aria-label="Send test to ${name}"`);
      expect(html).toContain(`aria-label="Delete channel ${name}"`);
    }
    expect(html).toContain('aria-label="Turn off Team Slack"');
    expect(html).toContain('aria-label="Turn on Me"');
    expect(html).toContain("https://hooks.slack.com/services/T0/B0/abc");
    expect(html).toContain("me@example.com");
    expect(html).toContain("Gets: briefing, alert");
  });

  it("labels the form's fields and kinds, and shows the delivery log with status, attempts and the last error", () => {
    const html = render(true);
    for (const label of [
      "Channel name",
      "Webhook URL",
      "Briefings",
      "Questions",
      "Approvals",
      "Alerts",
      "Channel type",
      "Notify about",
    ])
      expect(html).toContain(label);
    expect(html).toContain("Delivery log");
    expect(html).toContain("status-failed");
    expect(html).toContain("9 attempts");
    expect(html).toContain("HTTP 500 from https://hooks.slack.com/services/T0/B0/abc: boom");
    expect(html).toContain("status-sent");
  });

  it("says why email cannot be chosen without SMTP settings, and what to do with no channels", () => {
    expect(render(true)).not.toContain("Email notifications need SMTP_URL and SMTP_FROM set on the server.");
    expect(render(false)).toContain("Email notifications need SMTP_URL and SMTP_FROM set on the server.");
    const empty = render(false, { channels: [], deliveries: [] });
    expect(empty).toContain("No channels yet");
    expect(empty).toContain("Nothing sent yet");
  });
});
