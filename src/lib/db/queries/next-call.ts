import "server-only";
import { sql } from "drizzle-orm";
import type { Db } from "../client";
import type { Agent } from "../schema";
import { statement } from "./prepared";

/** What the system prompt says of a teammate. */
export type PromptMember = Pick<Agent, "id" | "name" | "role" | "instructions" | "toolScope" | "parentAgentId">;

export type NextCallFacts = {
  /** The team's agents, the lead first, then by age. */
  members: PromptMember[];
  /** Whether input that the turn takes (about the task in focus, or about no task) waits in the agent's queue. */
  inputWaits: boolean;
  /** The work log's last message: where the log is, so the session need not read it when it knows what it wrote. */
  tail: string | null;
};

type Row = { members: PromptMember[]; input_waits: boolean; tail: string | null };
type Input = { teamId: string; agentId: string; conversationId: string; focusTaskId: string | null };

const readFacts = statement<Row, Input>(() => {
  const teamId = sql.placeholder("teamId");
  const agentId = sql.placeholder("agentId");
  return sql`
    select
      (select coalesce(json_agg(json_build_object('id', a.id, 'name', a.name, 'role', a.role, 'instructions', a.instructions,
                                                  'toolScope', a.tool_scope, 'parentAgentId', a.parent_agent_id)
                                order by a.role = 'lead' desc, a.created_at), '[]'::json)
         from agents a where a.team_id = ${teamId}::uuid) as members,
      exists (select 1 from agent_inputs i
               where i.agent_id = ${agentId}::uuid and (i.task_id is null or i.task_id = ${sql.placeholder("focusTaskId")}::uuid)) as input_waits,
      (select last_message_id from conversations where id = ${sql.placeholder("conversationId")}::uuid) as tail`;
});

/**
 * What a work turn reads before each model call, in one prepared statement: the teammates
 * its system prompt lists, whether input waits to move into the log (the
 * injection; moving it is a transaction, run only when some waits), and where the log's
 * tail is (the log itself is read only when someone else wrote to it). Five statements
 * before, on every tool round.
 */
export async function readNextCallFacts(db: Db, input: Input): Promise<NextCallFacts> {
  const [row] = await readFacts(db, input);
  return { members: row!.members, inputWaits: row!.input_waits, tail: row!.tail };
}
