// Durable approvals under kill -9: real worker processes, a scripted model that makes two
// approval-gated calls in one step, a "person" deciding at random moments (approve, edit
// and approve, deny) while workers are SIGKILLed at random. Afterwards every decision must
// have reached its own call, each approved call must have run exactly once with the input
// that was approved, no denied call may have run, and nothing may be left waiting.
import { randomUUID } from "node:crypto";
import { and, eq, isNull, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { actOnClaim } from "@/lib/engine/action-links";
import { decideApproval } from "@/lib/engine/approvals";
import { assignTask } from "@/lib/domain/tasks";
import { setToolPolicy } from "@/lib/engine/tool-policies";
import { approvals, knowledgeItems, messages, type Approval } from "@/lib/db/schema";
import { CadreError } from "@/lib/errors";
import { lastUserText, type FakeChatRequest, type FakeReply } from "../support/fake-openai";
import { createTeamFixture } from "../support/fixtures";
import { lastToolCallName, teamPlay, toolNames } from "../support/team-play";
import { pause, useWorkerFleet } from "../support/worker-fleet";
import { waitFor } from "../support/worker-process";

const KILLS = 16;

/**
 * The lead plays as in teamPlay (delegates, briefs); Scout searches, then records two findings in ONE step
 * (two calls, each waiting for its own approval), then reports. Each finding's text is
 * unique, so a call that ran twice shows as two knowledge items.
 */
function approvalPlay(request: FakeChatRequest): FakeReply {
  if (request.response_format || !toolNames(request).includes("reportToLead")) return teamPlay(request);
  const last = request.messages.at(-1)!;
  const text = lastUserText(request);
  if (last.role === "tool" && lastToolCallName(request) === "tavilySearch") {
    const nonce = randomUUID();
    return {
      toolCalls: [
        { name: "addKnowledgeItem", arguments: { type: "fact", content: `finding one ${nonce}` } },
        { name: "addKnowledgeItem", arguments: { type: "fact", content: `finding two ${nonce}` } },
      ],
      text: "Recording two findings.",
    };
  }
  if (last.role === "tool" || /^The person decided/.test(text))
    return { toolCalls: [{ name: "reportToLead", arguments: { result: "Findings recorded." } }] };
  if (/^(Task from|\(Resuming task)/.test(text))
    return { toolCalls: [{ name: "tavilySearch", arguments: { query: "tidal power" } }] };
  return { text: "Nothing to do." };
}

const fleet = useWorkerFleet(approvalPlay);
const count = (query: ReturnType<typeof sql>) => fleet.count(query);

type Decided = { approval: Approval; as: "approved" | "edited" | "denied" };

describe("approvals under kill -9", () => {
  it(`survive ${KILLS} killed workers: each decision reaches its call, approved calls run once, denied ones never`, {
    timeout: 300_000,
  }, async () => {
    const teams = await Promise.all(
      [0, 1, 2].map(() => createTeamFixture(fleet.database.db, { subordinates: ["Scout"] })),
    );
    for (const { team } of teams)
      await setToolPolicy(fleet.database.db, team.id, { toolName: "addKnowledgeItem", policy: "ask", agentId: null });
    let assigned = 0;
    const assign = async () => {
      const { lead } = teams[assigned % teams.length]!;
      assigned += 1;
      await assignTask(fleet.database.db, fleet.jobs, {
        agentId: lead.id,
        source: "user",
        title: `Tidal power #${assigned}`,
      });
    };
    for (let i = 0; i < 6; i++) await assign();

    const decided = new Map<string, Decided>();
    let secondDecisions = 0;
    let byLink = 0;
    const expiresAt = new Date(Date.now() + 3_600_000);
    let deciding = true;
    // The person: decides what waits, at random moments, in random order, now and then twice.
    const person = (async () => {
      while (deciding) {
        await pause(50 + Math.random() * 250);
        const pending = await fleet.database.db.select().from(approvals).where(eq(approvals.status, "pending"));
        for (const approval of pending.sort(() => Math.random() - 0.5)) {
          if (Math.random() < 0.3) continue; // decide later
          const roll = Math.random();
          const as = roll < 0.4 ? "approved" : roll < 0.7 ? "edited" : "denied";
          const decision =
            as === "approved"
              ? ({ decision: "approve" } as const)
              : as === "edited"
                ? ({ decision: "approve", input: { type: "fact", content: `edited ${approval.id}` } } as const)
                : ({ decision: "deny", reason: `no ${approval.id}` } as const);
          // Half the plain approvals and denials come from an email's link (issue 37): the same one-winner path.
          if (as !== "edited" && Math.random() < 0.5) {
            const state = await actOnClaim(
              fleet.database.db,
              fleet.jobs,
              { action: as === "approved" ? "approve" : "deny", channel: "email", itemId: approval.id, expiresAt },
              { reason: `no ${approval.id}` },
            );
            const now = state.state === "settled" && state.item.kind === "approval" ? state.item.approval : null;
            if (now?.decidedVia === "email" && now.status === as) {
              decided.set(approval.id, { approval, as });
              byLink += 1;
            } else secondDecisions += 1;
            continue;
          }
          try {
            await decideApproval(fleet.database.db, fleet.jobs, approval.id, decision);
            decided.set(approval.id, { approval, as });
            if (Math.random() < 0.2)
              await decideApproval(fleet.database.db, fleet.jobs, approval.id, { decision: "approve" });
          } catch (error) {
            if (!(error instanceof CadreError && error.code.startsWith("conflict:approval"))) throw error;
            secondDecisions += 1;
          }
        }
      }
    })();

    fleet.startWorker();
    fleet.startWorker();
    let kills = 0;
    try {
      while (kills < KILLS) {
        await pause(200 + Math.random() * 600);
        if (!(await fleet.killOne())) continue;
        kills += 1;
        if (kills % 4 === 0) await assign();
      }
      const open = sql`select count(*) as n from tasks where status in ('pending', 'in_progress', 'waiting_input')`;
      await waitFor(
        async () =>
          (await count(open)) === 0 &&
          (await count(sql`select count(*) as n from approvals where resolved_at is null`)) === 0 &&
          (await count(sql`select count(*) as n from work_sessions where status = 'running'`)) === 0,
        { timeoutMs: 120_000, what: "every task final and every approval carried out" },
      ).catch(async (error) => {
        const left = await fleet.database.db.execute(
          sql`select title, status from tasks where status not in ('completed','failed','cancelled')`,
        );
        const unresolved = await fleet.database.db.select().from(approvals).where(isNull(approvals.resolvedAt));
        throw new Error(
          `${error.message}: tasks ${JSON.stringify(left)} approvals ${JSON.stringify(unresolved)}\n${fleet.live.map((w) => w.output.join("").slice(-1500)).join("\n---\n")}`,
        );
      });
    } finally {
      deciding = false;
      await person;
    }

    const all = await fleet.database.db.select().from(approvals);
    let ranTwice = 0;
    let wrongCall = 0;
    let lost = 0;
    const itemsWith = async (content: string) =>
      (await fleet.database.db.select().from(knowledgeItems).where(eq(knowledgeItems.content, content))).length;
    for (const approval of all) {
      const [result] = await fleet.database.db
        .select()
        .from(messages)
        .where(and(eq(messages.conversationId, approval.conversationId), eq(messages.toolCallId, approval.toolCallId)));
      const original = (approval.input as { content: string }).content;
      const choice = decided.get(approval.id);
      if (!result || !approval.resolvedAt) {
        lost += 1;
        continue;
      }
      if (!choice) {
        // Never decided by the person: only a withdrawal (its task ended) may have settled it.
        if (approval.status !== "withdrawn" || !result.content.startsWith("(not run")) wrongCall += 1;
        if ((await itemsWith(original)) > 0) wrongCall += 1;
        continue;
      }
      if (choice.as === "denied") {
        if (result.content !== `Denied by the person: no ${approval.id}`) wrongCall += 1;
        if ((await itemsWith(original)) > 0) wrongCall += 1;
        continue;
      }
      const ran = choice.as === "edited" ? `edited ${approval.id}` : original;
      const withdrawnMeanwhile = result.content.startsWith("(not run");
      const times = await itemsWith(ran);
      if (times > 1) ranTwice += times - 1;
      if (!withdrawnMeanwhile && times === 0) lost += 1;
      if (!withdrawnMeanwhile && !result.content.includes('"saved":true')) wrongCall += 1;
      if (choice.as === "edited" && (await itemsWith(original)) > 0) wrongCall += 1;
    }
    const figures = {
      pending: all.length,
      decided: decided.size,
      approved: [...decided.values()].filter((d) => d.as !== "denied").length,
      denied: [...decided.values()].filter((d) => d.as === "denied").length,
      secondDecisionsRefused: secondDecisions,
      decidedFromEmailLinks: byLink,
      tasks: await count(sql`select count(*) as n from tasks`),
      completed: await count(sql`select count(*) as n from tasks where status = 'completed'`),
      interruptedSessions: await count(sql`select count(*) as n from work_sessions where status = 'interrupted'`),
    };
    console.log(
      `[approvals] pending: ${figures.pending}, decided: ${figures.decided}, killed mid-way: ${kills}, ran twice: ${ranTwice}, wrong call: ${wrongCall}, lost: ${lost}`,
      figures,
    );
    expect(kills).toBe(KILLS);
    expect(figures.pending).toBeGreaterThanOrEqual(8);
    expect(figures.decided).toBeGreaterThan(0);
    expect(byLink).toBeGreaterThan(0);
    expect(ranTwice).toBe(0);
    expect(wrongCall).toBe(0);
    expect(lost).toBe(0);
  });
});
