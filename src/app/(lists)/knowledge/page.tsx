import type { Metadata } from "next";
import Link from "next/link";
import { KnowledgeRow } from "@/components/knowledge";
import { LiveRefresh } from "@/components/live-events";
import { EmptyState } from "@/components/ui";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { urlNamedIn } from "@/lib/domain/sources";
import { searchKnowledgeItems, withKnowledgeSources } from "@/lib/db/queries/knowledge-items";
import { listAgentDirectory } from "@/lib/db/queries/views";
import { sourceHref, whyFound } from "@/lib/views/knowledge-view";
import { knowledgeItemTypes, type KnowledgeItem, type KnowledgeItemType } from "@/lib/db/schema";
import { recallKnowledge, type RecallMatch } from "@/lib/domain/knowledge-recall";
import { configuredEmbedding } from "@/lib/llm/embeddings";
import { isUuid } from "@/lib/util/ids";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Knowledge" };

type Props = { searchParams: Promise<Record<string, string | string[] | undefined>> };

const one = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value)?.trim() ?? "";

export default async function KnowledgePage({ searchParams }: Props) {
  await requirePageSession();
  const params = await searchParams;
  const q = one(params.q).slice(0, 400);
  const agentId = isUuid(one(params.agentId)) ? one(params.agentId) : "";
  const teamId = isUuid(one(params.teamId)) ? one(params.teamId) : "";
  const type = (knowledgeItemTypes as readonly string[]).includes(one(params.type))
    ? (one(params.type) as KnowledgeItemType)
    : undefined;

  const filter = { agentId: agentId || undefined, teamId: teamId || undefined, type, limit: 200 };
  // A search finds by words and by meaning (recallKnowledge); the person pays for the search's
  // vector (a usage row of no agent), once per text: a live refresh reuses it.
  const found: Promise<(KnowledgeItem & { matched?: RecallMatch })[]> = q
    ? recallKnowledge({ db: db(), model: configuredEmbedding(), agentId: null, teamId: null }, { ...filter, q })
    : searchKnowledgeItems(db(), filter);
  const [agents, items] = await Promise.all([
    listAgentDirectory(db()),
    found.then((list) => withKnowledgeSources(db(), list)),
  ]);
  const agentsById = new Map(agents.map((agent) => [agent.id, agent]));
  const filtered = Boolean(q || agentId || teamId || type);
  const teams = [...new Map(agents.map((agent) => [agent.teamId, agent.teamName])).entries()];

  return (
    <div className="page">
      <LiveRefresh tables={["knowledge_items"]} />
      <header className="page-header">
        <div>
          <h1>Knowledge</h1>
          <p className="lede">
            What your agents have learned: facts, techniques, patterns and lessons, each once, with every agent and page
            that reported it.
          </p>
        </div>
      </header>
      <search>
        <form className="filters" action="/knowledge">
          <label className="field field-grow">
            <span>Search knowledge</span>
            <input type="search" name="q" defaultValue={q} placeholder="e.g. battery density" />
          </label>
          <label className="field">
            <span>Team</span>
            <select name="teamId" defaultValue={teamId}>
              <option value="">All teams</option>
              {teams.map(([id, name]) => (
                <option key={id} value={id}>
                  {name}
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>Agent</span>
            <select name="agentId" defaultValue={agentId}>
              <option value="">All agents</option>
              {agents.map((agent) => (
                <option key={agent.id} value={agent.id}>
                  {agent.name} ({agent.teamName})
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>Type</span>
            <select name="type" defaultValue={type ?? ""}>
              <option value="">All types</option>
              {knowledgeItemTypes.map((value) => (
                <option key={value} value={value}>
                  {value}
                </option>
              ))}
            </select>
          </label>
          <div className="filter-actions">
            <button type="submit" className="button button-primary">
              Search
            </button>
            {filtered && (
              <Link href="/knowledge" className="button button-quiet">
                Clear
              </Link>
            )}
          </div>
        </form>
      </search>
      <p className="meta" aria-live="polite">
        {items.length} item{items.length === 1 ? "" : "s"}
        {filtered ? " match" : ""}
        {items.length === 200 ? " (showing the first 200)" : ""}
      </p>
      {items.length === 0 ? (
        <EmptyState title={filtered ? "Nothing matches" : "No knowledge yet"}>
          <p>
            {filtered
              ? "Try other words, or clear the filters."
              : "Agents record what they learn while they work; ask a team lead for research to get started."}
          </p>
        </EmptyState>
      ) : (
        <ul className="knowledge-list">
          {items.map((item) => {
            const agent = agentsById.get(item.agentId);
            return (
              <KnowledgeRow
                key={item.id}
                types={knowledgeItemTypes}
                item={{
                  id: item.id,
                  type: item.type,
                  content: item.content,
                  confidence: item.confidence,
                  // An item saved before a named address filled its source shows (and offers to save) that address.
                  sourceUrl: item.sourceUrl ?? urlNamedIn(item.content),
                  createdAt: item.createdAt.toISOString(),
                  updatedAt: item.updatedAt?.toISOString() ?? null,
                  teamName: agent?.teamName ?? null,
                  whyFound: item.matched ? whyFound(item.matched) : null,
                  sources: item.sources.map((source) => ({
                    agentId: source.agentId,
                    agentName: source.agentName,
                    url: source.url,
                    href: sourceHref(source),
                    inChat: source.conversationMode === "foreground",
                    createdAt: source.createdAt.toISOString(),
                  })),
                }}
              />
            );
          })}
        </ul>
      )}
    </div>
  );
}
