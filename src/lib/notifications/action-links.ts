import "server-only";
import { actionLinkKey, signActionLink, type LinkAction, type LinkChannel } from "@/lib/auth/action-links";
import type { Db } from "@/lib/db/client";
import type { NotificationPayload } from "@/lib/db/queries/notifications";
import { publicUrl } from "@/lib/env";

/** One action a notification offers: Approve, Deny or Answer, with its signed link. */
export type ActionLink = { action: LinkAction; label: string; url: string; token: string; expiresAt: Date };

const LABELS: Record<LinkAction, string> = { approve: "Approve", deny: "Deny", answer: "Answer" };

/** The page a link opens: it shows the item and asks for one click to confirm (a GET never decides). */
const ACTION_PAGE_PATH = "/act";

/**
 * The links of a notification of an approval (Approve, Deny) or a question (Answer), signed for
 * the channel that carries them; none for anything else. The same on every attempt.
 */
export async function actionLinksOf(db: Db, payload: NotificationPayload, channel: LinkChannel): Promise<ActionLink[]> {
  const { action } = payload;
  if (!action) return [];
  const key = await actionLinkKey(db);
  const expiresAt = new Date(action.expiresAt);
  const actions: LinkAction[] = action.kind === "approval" ? ["approve", "deny"] : ["answer"];
  return actions.map((each) => {
    const token = signActionLink(key, { action: each, channel, itemId: action.id, expiresAt });
    return {
      action: each,
      label: LABELS[each],
      token,
      url: `${publicUrl()}${ACTION_PAGE_PATH}?t=${token}`,
      expiresAt,
    };
  });
}
