import "server-only";
import { reserveAttempt } from "@/lib/auth/auth";
import {
  actionLinkKey,
  looksLikeActionToken,
  readActionToken,
  type ActionClaim,
  type LinkAction,
} from "@/lib/auth/action-links";
import type { Attempter } from "@/lib/auth/sign-in-throttle";
import type { Db } from "@/lib/db/client";
import { getAgent } from "@/lib/db/queries/agents";
import { getApproval } from "@/lib/db/queries/approvals";
import { getQuestion } from "@/lib/db/queries/questions";
import { getTeam } from "@/lib/db/queries/teams";
import type { Approval, Question } from "@/lib/db/schema";
import { answerQuestionFromPerson } from "@/lib/domain/questions";
import { CadreError } from "@/lib/errors";
import type { JobQueue } from "@/lib/jobs/job-queue";
import { plural } from "@/lib/util/plural";
import { decideApproval, type DecidedVia } from "./approvals";

// Acting from where the person is (issue 37): the page a signed link opens (/act) and the Slack
// buttons both end here, and decide through the same one-winner paths as the app
// (decideApproval, answerQuestionFromPerson). A decision that lost the race, or a second click,
// is not an error: it reads back how the item was decided.

/** The item a link acts on, with the names the page shows. */
type LinkedItem =
  | { kind: "approval"; approval: Approval; agentName: string; teamName: string }
  | { kind: "question"; question: Question; agentName: string; teamName: string };

/** What a link's page shows: why it cannot be used, the item waiting for one click, or how it was settled. */
export type LinkState =
  | { state: "invalid" }
  | { state: "expired"; expiresAt: Date }
  | { state: "gone" }
  | { state: "open"; action: LinkAction; claim: ActionClaim; item: LinkedItem }
  | { state: "settled"; action: LinkAction; claim: ActionClaim; item: LinkedItem };

/** What the person sends with the one click: a reason for a denial (optional), the answer to a question. */
export type LinkInput = { reason?: string; answer?: string };

/**
 * Checks a token as a credential. A genuine token (current, expired, for an item settled or
 * gone) is never held back and never counted: it cannot be guessed (an HMAC-SHA256), and it is a
 * credential for its one item only, so it does not forgive its address's wrong passwords either.
 * A forged one, from `who`, is counted by the sign-in throttle and answered with a 429 once that
 * browser or address has made too many. Something that is not even shaped like a token (none, cut
 * short) is not counted: a page with `<img src="/act">` must not lock anybody out. `who` null
 * (the page a link opens, which decides nothing): nothing is counted.
 */
export async function checkActionToken(db: Db, token: unknown, who: Attempter | null): Promise<LinkCheck> {
  if (!looksLikeActionToken(token)) return "invalid";
  const read = readActionToken(await actionLinkKey(db), token);
  if (!read.valid) {
    if (who) countForgedLink(who);
    return "invalid";
  }
  return read.expired ? { expired: read.claim.expiresAt } : read.claim;
}

/** Counts a forged link from `who` as a failure; throws the 429 (in a link's words) when it must wait. */
function countForgedLink(who: Attempter): void {
  try {
    reserveAttempt(who).wrong();
  } catch (error) {
    if (error instanceof CadreError && error.kind === "rate_limited" && error.retryAfterSeconds !== undefined)
      throw new CadreError(
        "rate_limited:action_link",
        `Too many links that do not work came from here. Try again in ${plural(error.retryAfterSeconds, "second")}, or open Cadre's inbox to decide there.`,
        { retryAfterSeconds: error.retryAfterSeconds, cause: error },
      );
    throw error;
  }
}

/** A token checked: the claim of a genuine, current one; else why it cannot be used. */
export type LinkCheck = ActionClaim | "invalid" | { expired: Date };

/** The state of the item a genuine claim names (a GET: reads only). */
export async function readLinkState(db: Db, claim: LinkCheck): Promise<LinkState> {
  if (claim === "invalid") return { state: "invalid" };
  if ("expired" in claim) return { state: "expired", expiresAt: claim.expired };
  const item = await readLinkedItem(db, claim);
  if (!item) return { state: "gone" };
  const open = item.kind === "approval" ? item.approval.status === "pending" : item.question.status === "open";
  return { state: open ? "open" : "settled", action: claim.action, claim, item };
}

/**
 * The one click: decides the item as the claim says (approve, deny, or answer with the words
 * sent), through the same path as the app, and returns the state after. Decided meanwhile (in
 * the app, by another link, in Slack) or withdrawn: nothing changes, and the state says how it was settled.
 */
export async function actOnClaim(
  db: Db,
  jobs: JobQueue,
  claim: ActionClaim,
  input: LinkInput,
  via: DecidedVia = { channel: claim.channel },
): Promise<LinkState> {
  try {
    if (claim.action === "answer") {
      const answer = input.answer?.trim();
      if (!answer) throw new CadreError("bad_request:validation", "answer: write your answer first.");
      await answerQuestionFromPerson(db, jobs, claim.itemId, answer, via.channel);
    } else {
      await decideApproval(
        db,
        jobs,
        claim.itemId,
        claim.action === "approve"
          ? { decision: "approve" }
          : { decision: "deny", reason: input.reason?.trim() || deniedWithoutReason(via) },
        via,
      );
    }
  } catch (error) {
    // Someone else decided first, the call was withdrawn, or the item went: read back what is there.
    if (!(error instanceof CadreError) || (error.kind !== "conflict" && error.kind !== "not_found")) throw error;
  }
  return readLinkState(db, claim);
}

/** A Slack button pressed (its signature checked by the caller): what it asks, and by whom. */
export type SlackPress = { actionId: string; value: string | undefined; userName: string };

/**
 * Decides what a Slack button asks for: Approve or Deny, with the token the message carried
 * (signed for Slack and for that action). Returns the item's state after, "invalid" or
 * "expired" (nothing decided), or null for a button that decides nothing (Answer opens a page).
 */
export async function decideFromSlack(db: Db, jobs: JobQueue, press: SlackPress): Promise<LinkState | null> {
  const action = press.actionId === "cadre_approve" ? "approve" : press.actionId === "cadre_deny" ? "deny" : null;
  if (!action) return null;
  const read = readActionToken(await actionLinkKey(db), press.value);
  if (!read.valid || read.claim.channel !== "slack" || read.claim.action !== action) return { state: "invalid" };
  if (read.expired) return { state: "expired", expiresAt: read.claim.expiresAt };
  return actOnClaim(db, jobs, read.claim, {}, { channel: "slack", by: press.userName });
}

function deniedWithoutReason(via: DecidedVia): string {
  const where = via.channel === "slack" ? "in Slack" : via.channel === "email" ? "from an email" : "from a link";
  return `The person denied it ${where}, without giving a reason.`;
}

async function readLinkedItem(db: Db, claim: ActionClaim): Promise<LinkedItem | null> {
  const row = claim.action === "answer" ? await getQuestion(db, claim.itemId) : await getApproval(db, claim.itemId);
  // A question link never opens a subordinate's question (those are for a lead, not the person).
  if (!row || ("recipientAgentId" in row && row.recipientAgentId !== null)) return null;
  const agent = await getAgent(db, row.agentId);
  if (!agent) return null;
  const team = await getTeam(db, agent.teamId);
  const names = { agentName: agent.name, teamName: team?.name ?? "" };
  return claim.action === "answer"
    ? { kind: "question", question: row as Question, ...names }
    : { kind: "approval", approval: row as Approval, ...names };
}
