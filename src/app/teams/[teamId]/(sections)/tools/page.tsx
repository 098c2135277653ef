import type { Metadata } from "next";
import { McpServers } from "@/components/mcp-servers";
import { ToolPoliciesPanel } from "@/components/tool-policies";
import { ToolScopes } from "@/components/tool-scopes";
import { listToolPolicies, toolCatalogue } from "@/lib/engine/tool-policies";
import { toWire } from "@/lib/client/api-client";
import { requirePageSession } from "@/lib/auth/auth";
import { db } from "@/lib/db/client";
import { listTeamAgents } from "@/lib/db/queries/teams";
import { listMcpServerViews } from "@/lib/mcp/servers";
import { sectionMetadata, teamOr404, type TeamParams } from "../team-section";

export const dynamic = "force-dynamic";

export async function generateMetadata({ params }: TeamParams): Promise<Metadata> {
  return sectionMetadata(params, "Tools");
}

/** Which tools run without asking, which wait for the person, the team's MCP servers, and who may use what. */
export default async function TeamToolsPage({ params }: TeamParams) {
  await requirePageSession();
  const team = await teamOr404(params);
  const [agents, toolPolicies, mcpServers] = await Promise.all([
    listTeamAgents(db(), team.id),
    listToolPolicies(db(), team.id),
    listMcpServerViews(db(), team.id).then((views) => views.map(toWire)),
  ]);

  return (
    <>
      {/* Live without a LiveRefresh here: the MCP list refreshes the page itself when a server changes. */}
      <section aria-labelledby="approvals-heading" className="section">
        <h2 id="approvals-heading">Approvals</h2>
        <ToolPoliciesPanel
          // The panel keeps its own copy of the policies: a new tool list (an MCP server added, tested or removed) starts it afresh.
          key={toolPolicies.tools.map((tool) => tool.name).join(" ")}
          teamId={team.id}
          agents={agents.map((agent) => ({ id: agent.id, name: agent.name, role: agent.role }))}
          initial={toolPolicies}
        />
      </section>

      <section aria-labelledby="mcp-heading" className="section">
        <h2 id="mcp-heading">Tools and MCP servers</h2>
        <McpServers teamId={team.id} servers={mcpServers} />
        <section aria-labelledby="scopes-heading" className="subsection">
          <h3 id="scopes-heading">Who may use which tools</h3>
          <ToolScopes
            agents={agents.map((agent) => ({
              id: agent.id,
              name: agent.name,
              role: agent.role,
              toolScope: agent.toolScope,
            }))}
            builtIn={toolCatalogue()}
            servers={mcpServers}
          />
        </section>
      </section>
    </>
  );
}
