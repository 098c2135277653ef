import { reserveAttempt } from "@/lib/auth/auth";
import { clientAddress } from "@/lib/auth/auth-rules";
import { decideFromSlack, type LinkState } from "@/lib/engine/action-links";
import { env } from "@/lib/env";
import { CadreError } from "@/lib/errors";
import { parseJsonText, readBodyBytes, route } from "@/lib/http/http";
import { webEngine } from "@/lib/http/server";
import { SLACK_BODY_LIMIT_BYTES, slackSignatureProblem } from "@/lib/http/slack-signature";
import { updateSlackMessage } from "@/lib/notifications/slack-message";
import { settledWords } from "@/lib/views/decided-via";
import { slackPayload } from "./schema";

export const dynamic = "force-dynamic";

/**
 * POST /api/slack/actions: Slack's interactivity endpoint (README, "Approve and deny from Slack").
 * Slack posts `payload=<JSON>` form-encoded, signed with the app's signing secret
 * (SLACK_SIGNING_SECRET; 404 while it is unset). A bad or stale signature is a 401, counted by the
 * sign-in throttle (429 once its address has sent too many); a good one is never held back. A button decides through the same one-winner
 * path as the app; pressing it again, or a replay, decides nothing new. The answer (and the
 * message, through its response_url) says how the item stands: "Approved by ana in Slack".
 */
export const POST = route(
  async (request: Request) => {
    const secret = env().SLACK_SIGNING_SECRET;
    if (!secret)
      throw new CadreError(
        "not_found:slack",
        "Slack buttons are off on this Cadre: set SLACK_SIGNING_SECRET to the Slack app's signing secret.",
      );
    const body = await readBodyBytes(request, SLACK_BODY_LIMIT_BYTES);
    const problem = slackSignatureProblem(secret, request.headers, body);
    if (problem) {
      // Only a badly signed request is counted: one signed with the secret is never held back by
      // strangers' failures, and does not forgive its address's wrong passwords either.
      reserveAttempt({ client: clientAddress(request, { trustProxy: env().TRUST_PROXY }) }).wrong();
      throw new CadreError("unauthorized:signature", `Refused: this is not a request from Slack (${problem}).`);
    }
    const form = new URLSearchParams(new TextDecoder().decode(body));
    // Through the same checks as any JSON body: a NUL in a name would otherwise fail the query (a 500).
    const payload = parseJsonText(form.get("payload") ?? "", slackPayload, "Slack's payload field is not JSON.");
    const [action] = payload.actions;
    if (payload.type !== "block_actions" || !action) return Response.json({});
    const { db, jobs } = await webEngine();
    const state = await decideFromSlack(db, jobs, {
      actionId: action.action_id,
      value: action.value,
      userName: payload.user.username ?? payload.user.name ?? payload.user.id,
    });
    if (!state) return Response.json({}); // a button that only opens a page
    const text = slackReply(state, payload.message?.text);
    if (payload.response_url && (state.state === "open" || state.state === "settled"))
      await updateSlackMessage(payload.response_url, text);
    return Response.json({ replace_original: state.state === "settled", text });
  },
  { public: true, crossOrigin: true },
);

/** The message as it reads after the press: what it was about, and how it stands now. */
function slackReply(state: LinkState, original: string | undefined): string {
  const about = original?.split("\n")[0]?.trim();
  const prefix = about ? `${about}\n` : "";
  switch (state.state) {
    case "invalid":
      return "This button is not one Cadre made for this message; nothing was decided.";
    case "expired":
      return "This button has expired; nothing was decided. Open Cadre to decide.";
    case "gone":
      return `${prefix}There is nothing to decide any more: it was deleted.`;
    case "open":
    case "settled":
      return `${prefix}${state.item.kind === "approval" ? settledWords(state.item.approval) : settledWords(state.item.question)}.`;
  }
}
