import type { Metadata } from "next";
import Link from "next/link";
import type { ReactNode } from "react";
import { ActOnLink } from "@/components/act-on-link";
import { Markdown } from "@/components/markdown";
import { LocalTime } from "@/components/ui";
import { db } from "@/lib/db/client";
import { checkActionToken, readLinkState, type LinkState } from "@/lib/engine/action-links";
import { settledWords } from "@/lib/views/decided-via";
import { plainText } from "@/lib/views/plain-words";
import { toolAction } from "@/lib/views/tool-labels";

export const dynamic = "force-dynamic";
// No "no-referrer" here: it would send the button's POST with `Origin: null`, which Cadre refuses; the
// site-wide strict-origin-when-cross-origin already keeps the token out of other sites' logs.
export const metadata: Metadata = { title: "Decide", robots: { index: false } };

type Props = { searchParams: Promise<{ t?: string | string[] }> };

/**
 * The page an Approve, Deny or Answer link in a notification opens (issue 37). Opening it
 * decides nothing (mail scanners and link previews fetch links): it shows the item in plain words
 * and one button that does. No session needed: the link is the credential for this one item. A
 * link that cannot be used says why, and one for an item settled already says how it was settled.
 */
export default async function ActionLinkPage({ searchParams }: Props) {
  const { t } = await searchParams;
  const token = Array.isArray(t) ? t[0] : t;
  // Opening the page decides nothing, so it is never counted by the sign-in throttle: a foreign
  // page's `<img src="/act">` must not lock the person out. Only the POST that decides counts.
  const state = await readLinkState(db(), await checkActionToken(db(), token, null));
  return <LinkPage state={state} token={token ?? ""} />;
}

function LinkPage({ state, token }: { state: LinkState; token: string }) {
  switch (state.state) {
    case "invalid":
      return (
        <Notice title="This link does not work">
          It is not a link Cadre made, or part of it was cut or changed on the way (some mail programs break long
          links). Nothing was decided. Open Cadre&apos;s inbox to decide there.
        </Notice>
      );
    case "expired":
      return (
        <Notice title="This link has expired">
          It worked until <LocalTime value={state.expiresAt} />. Nothing was decided. Open Cadre&apos;s inbox to decide
          there.
        </Notice>
      );
    case "gone":
      return (
        <Notice title="There is nothing to decide any more">
          What this link was for has been deleted, with its agent or team. Nothing was decided.
        </Notice>
      );
    case "open":
    case "settled":
      return <ItemPage state={state} token={token} />;
  }
}

function ItemPage({ state, token }: { state: Extract<LinkState, { state: "open" | "settled" }>; token: string }) {
  const { item } = state;
  const settledAt =
    item.kind === "approval" ? (item.approval.decidedAt ?? item.approval.resolvedAt) : item.question.answeredAt;
  const outcome = item.kind === "approval" ? settledWords(item.approval) : settledWords(item.question);
  const heading =
    item.kind === "approval"
      ? `${item.agentName} wants to ${toolAction(item.approval.toolName)}`
      : `${item.agentName} asks you`;
  return (
    <div className="page page-act">
      <header className="page-header">
        <div>
          <h1>{heading}</h1>
          <p className="lede">
            {item.agentName}
            {item.teamName ? `, in the team ${item.teamName}` : ""} ·{" "}
            <LocalTime value={item.kind === "approval" ? item.approval.createdAt : item.question.createdAt} />
          </p>
        </div>
      </header>
      {state.state === "settled" && (
        <p className={`decision act-outcome decision-${item.kind === "approval" ? item.approval.status : "approved"}`}>
          <strong>{outcome}</strong>
          {settledAt && (
            <>
              {" "}
              at <LocalTime value={settledAt} />
            </>
          )}
          . This link changes nothing now.
        </p>
      )}
      {item.kind === "approval" ? (
        <section className="act-item" aria-label="The request">
          {item.approval.reason && (
            <div className="approval-reason">
              <div className="tool-label">Why, in {item.agentName}&apos;s words</div>
              <Markdown text={plainText(item.approval.reason)} />
            </div>
          )}
          <InputFields input={item.approval.input} />
          {item.approval.status === "denied" && item.approval.decisionNote && (
            <p className="meta">Reason given: {item.approval.decisionNote}</p>
          )}
        </section>
      ) : (
        <section className="act-item" aria-label="The question">
          <Markdown text={plainText(item.question.question)} className="question-text" />
          {item.question.status === "answered" && item.question.answer && (
            <div className="question-answer">
              <p className="meta">The answer:</p>
              <Markdown text={item.question.answer} />
            </div>
          )}
        </section>
      )}
      {state.state === "open" && <ActOnLink token={token} action={state.action} agentName={item.agentName} />}
      <p className="hint act-footnote">
        This page is for this one {item.kind === "approval" ? "request" : "question"} only; it opens nothing else in
        Cadre.
      </p>
    </div>
  );
}

/** The call's input as labelled fields: each top-level field by name, its value as text or JSON. */
function InputFields({ input }: { input: unknown }) {
  const fields =
    input && typeof input === "object" && !Array.isArray(input)
      ? Object.entries(input as Record<string, unknown>)
      : [["input", input] as const];
  if (fields.length === 0) return <p className="meta">It needs no input.</p>;
  return (
    <dl className="act-fields">
      {fields.map(([name, value]) => (
        <div key={name} className="act-field">
          <dt>{fieldLabel(name)}</dt>
          <dd>
            {typeof value === "string" ? (
              <span className="act-value">{value}</span>
            ) : (
              <pre className="json">{JSON.stringify(value, null, 2)}</pre>
            )}
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** `maxResults` → "Max results", `search_depth` → "Search depth". */
function fieldLabel(name: string): string {
  const words = name
    .replace(/[_-]+/g, " ")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .trim()
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function Notice({ title, children }: { title: string; children: ReactNode }) {
  return (
    <div className="page page-act">
      <header className="page-header">
        <div>
          <h1>{title}</h1>
          <p className="lede">{children}</p>
        </div>
      </header>
      <p>
        <Link href="/inbox" className="button">
          Open the inbox
        </Link>
      </p>
    </div>
  );
}
