// Where the person decided or answered, in words (issue 37): the inbox item, the story, the
// action link's page and the audit export say "approved from email", "denied in Slack", "in the
// app". Shared with the browser (the approval and question cards): no server-only marker.
import type { DecisionChannel } from "@/lib/db/schema";

const VIA_WORDS: Record<DecisionChannel, string> = {
  app: "in the app",
  email: "from email",
  webhook: "from a link in a chat message",
  slack: "in Slack",
};

/** "in the app", "from email", …; empty for a decision made before Cadre recorded where. */
export function viaWords(channel: DecisionChannel | null | undefined): string {
  return channel ? VIA_WORDS[channel] : "";
}

/** "by you from email", "by ana in Slack": who (the app has one person; Slack names its user) and where. */
export function decidedByWords(channel: DecisionChannel | null | undefined, by?: string | null): string {
  if (!channel) return "";
  return `by ${by ? by : "you"} ${viaWords(channel)}`;
}

/** "Approved by you in the app", "Denied by ana in Slack", "Answered by you from email"; withdrawn calls say why. */
export function settledWords(
  item:
    | {
        status: "pending" | "approved" | "denied" | "withdrawn";
        decidedVia: DecisionChannel | null;
        decidedBy: string | null;
      }
    | { status: "open" | "answered" | "withdrawn"; answeredVia: DecisionChannel | null },
): string {
  const status = item.status;
  if (status === "pending" || status === "open") return "Waiting for your decision";
  if (status === "withdrawn") return "Withdrawn: there is nothing to decide any more";
  const verb = status === "approved" ? "Approved" : status === "denied" ? "Denied" : "Answered";
  const who =
    "decidedVia" in item ? decidedByWords(item.decidedVia, item.decidedBy) : decidedByWords(item.answeredVia, null);
  return who ? `${verb} ${who}` : verb;
}
