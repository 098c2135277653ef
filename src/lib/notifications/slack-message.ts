import "server-only";
import { outboundPolicy, outboundRequest, type OutboundPolicy } from "@/lib/http/outbound-url";
import { describeForLog } from "@/lib/telemetry/log";

/**
 * Replaces the Slack message whose button was pressed with `text` ("… Approved by ana in Slack"),
 * through its response_url, under the outbound-URL policy like every request Cadre makes. Best
 * effort: the decision is made already; a message that stays as it was is said in the log.
 */
export async function updateSlackMessage(
  responseUrl: string,
  text: string,
  policy: OutboundPolicy = outboundPolicy(),
): Promise<void> {
  try {
    const { response } = await outboundRequest(
      responseUrl,
      {
        method: "POST",
        headers: { "content-type": "application/json", "user-agent": "Cadre-Notifications" },
        body: JSON.stringify({ replace_original: true, text }),
        signal: AbortSignal.timeout(5_000),
      },
      policy,
    );
    await response.body?.cancel().catch(() => {});
    if (!response.ok) console.warn(`[slack] the message was not updated: its response_url answered ${response.status}`);
  } catch (error) {
    console.warn(`[slack] the message was not updated: ${describeForLog(error)}`);
  }
}
