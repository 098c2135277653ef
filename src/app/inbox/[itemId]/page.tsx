import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { ApprovalCard } from "@/components/approval-card";
import { MarkReadOnOpen, MarkUnreadButton } from "@/components/inbox";
import { LiveRefresh } from "@/components/live-events";
import { Markdown } from "@/components/markdown";
import { QuestionCard } from "@/components/question-card";
import { LocalTime } from "@/components/ui";
import { toWire } from "@/lib/client/api-client";
import { findInboxItem } from "@/app/found";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { getTask } from "@/lib/db/queries/tasks";
import { citedSources } from "@/lib/views/tool-labels";
import { inboxTitle, plainText } from "@/lib/views/plain-words";

export const dynamic = "force-dynamic";
type Props = { params: Promise<{ itemId: string }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  await requirePageSession();
  const { itemId } = await params;
  const item = await findInboxItem(itemId);
  return { title: item ? inboxTitle(item.title, item.approval) : "Briefing" };
}

export default async function BriefingPage({ params }: Props) {
  await requirePageSession();
  const { itemId } = await params;
  const item = await findInboxItem(itemId);
  if (!item) notFound();
  const task = item.taskId ? await getTask(db(), item.taskId) : null;
  const sources = item.question || item.approval ? [] : citedSources(item.content);
  const waiting = item.question?.status === "open" || item.approval?.status === "pending";
  // An alert, or a call held in the work log, is followed up there; a question or a chat call in the chat.
  const inWorkLog = item.type === "alert" || (item.approval !== null && item.approvalMode === "background");
  return (
    <div className="page">
      <MarkReadOnOpen itemId={item.id} read={item.readAt !== null} />
      <LiveRefresh tables={["inbox_items", "approvals", "tasks"]} agentIds={[item.agentId]} />
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/inbox">Inbox</Link> <span aria-hidden="true">/</span> <span>{item.type}</span>
      </nav>
      <article className={item.type === "alert" ? "briefing briefing-alert" : "briefing"}>
        <header className="page-header">
          <div>
            <h1>{inboxTitle(item.title, item.approval)}</h1>
            <p className="meta">
              <span className={`pill pill-${item.type}`}>{item.type}</span>{" "}
              {waiting && <span className="pill pill-waiting">waits for you</span>} from {item.agentName} ·{" "}
              <Link href={`/teams/${item.teamId}`}>{item.teamName}</Link> ·{" "}
              <LocalTime value={item.createdAt.toISOString()} />
            </p>
            {task && (
              <p className="meta">
                {item.type === "briefing" ? "Answers the task" : "About the task"}{" "}
                <Link href={`/agents/${task.agentId}`}>“{task.title}”</Link> ·{" "}
                <Link href={`/teams/${item.teamId}/timeline?story=${task.id}`}>See the whole story</Link>
              </p>
            )}
          </div>
          <div className="header-actions">
            <MarkUnreadButton itemId={item.id} />
            {/* While the item waits, deciding here is the main thing to do; the link is secondary. */}
            {inWorkLog ? (
              <Link href={`/agents/${item.agentId}`} className={waiting ? "button" : "button button-primary"}>
                Open work log
              </Link>
            ) : (
              <Link href={`/teams/${item.teamId}/chat`} className={waiting ? "button" : "button button-primary"}>
                Open in chat
              </Link>
            )}
          </div>
        </header>
        {item.question ? (
          <QuestionCard question={toWire(item.question)} agentName={item.agentName} />
        ) : item.approval ? (
          <ApprovalCard approval={toWire(item.approval)} agentName={item.agentName} heading={false} />
        ) : (
          <>
            <div className="summary-box">
              <Markdown text={plainText(item.summary)} />
            </div>
            <Markdown text={plainText(item.content)} className="briefing-body" />
            {sources.length > 0 && (
              <section className="briefing-sources" aria-labelledby="briefing-sources-heading">
                <h2 id="briefing-sources-heading">Sources</h2>
                <ol>
                  {sources.map((source) => (
                    <li key={source.url}>
                      <a href={source.url} target="_blank" rel="noopener noreferrer">
                        {source.label}
                      </a>{" "}
                      <span className="meta">{new URL(source.url).hostname.replace(/^www\./, "")}</span>
                    </li>
                  ))}
                </ol>
              </section>
            )}
          </>
        )}
      </article>
    </div>
  );
}
