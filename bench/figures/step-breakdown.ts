import { randomUUID } from "node:crypto";
import { ContextReader, loadContextForCall } from "../../src/lib/engine/compaction";
import { workInstructions } from "../../src/lib/core/prompts";
import { requireAgent } from "../../src/lib/db/queries/agents";
import { appendMessage } from "../../src/lib/db/queries/messages";
import { readNextCallFacts } from "../../src/lib/db/queries/next-call";
import { requireTeam } from "../../src/lib/db/queries/teams";
import { claimSession, endSession } from "../../src/lib/db/queries/work-sessions";
import { OfflineModel } from "../../src/lib/llm/offline-model";
import type { LoadedHistory } from "../lib/history";
import type { BenchDatabase } from "../lib/postgres";
import { formatMs, now, percentile } from "../lib/stats";

export type Breakdown = { parts: [string, number][]; total: number; cpuPerRound: number };

/**
 * A tool round's own work replayed without the AI SDK, in the order and with the
 * overlap a session gives it, each phase timed (p50 of 100 rounds): what the step
 * figure has beyond their sum is the SDK's work between the phases.
 */
export async function stepBreakdown(database: BenchDatabase, history: LoadedHistory): Promise<Breakdown> {
  const { db } = database;
  const agent = await requireAgent(db, history.agentId);
  const team = await requireTeam(db, agent.teamId);
  const session = (await claimSession(db, agent.id, "bench-breakdown"))!;
  const reader = new ContextReader(db, history.conversationId);
  const compaction = {
    db,
    model: { model: new OfflineModel(), modelId: "offline", kind: "offline" as const },
    agentId: agent.id,
    budget: 1e9,
    instructions: "",
  };
  await reader.read();

  let context: Awaited<ReturnType<ContextReader["read"]>> = [];
  let system = "";
  let answerId = "";
  let resultWrite: Promise<unknown> = Promise.resolve();
  const phases: [string, (round: number) => Promise<unknown>][] = [
    [
      "store the answer with its usage row (one statement, after the last result's write)",
      async (round) => {
        await resultWrite;
        const answer = await appendMessage(
          db,
          history.conversationId,
          {
            role: "assistant",
            content: "",
            toolCalls: [{ toolCallId: `probe_${round}`, toolName: "tavilySearch", args: { query: "x" } }],
            previousMessageId: reader.lastMessageId,
          },
          {
            lazyCommit: true,
            heldBy: session.id,
            usage: {
              agentId: agent.id,
              conversationId: history.conversationId,
              purpose: "work",
              model: "probe",
              inputTokens: 1,
              outputTokens: 1,
            },
          },
        );
        answerId = answer.id;
        reader.appended(answer);
      },
    ],
    [
      "the next call's facts (the prompt's, waiting input, the log's tail; the team's token total every 30 s), the tool's result written beside them (lazily, named ahead)",
      async (round) => {
        const id = randomUUID();
        resultWrite = appendMessage(
          db,
          history.conversationId,
          {
            id,
            role: "tool",
            toolCallId: `probe_${round}`,
            content: "Web search is not configured.",
            previousMessageId: answerId,
          },
          { lazyCommit: true, heldBy: session.id },
        );
        reader.appending(
          {
            id,
            conversationId: history.conversationId,
            role: "tool",
            content: "Web search is not configured.",
            thinking: null,
            toolCalls: null,
            toolCallId: `probe_${round}`,
            inboxItemId: null,
            taskId: null,
            previousMessageId: answerId,
            createdAt: new Date(),
          },
          resultWrite,
        );
        const facts = await readNextCallFacts(db, {
          teamId: team.id,
          agentId: agent.id,
          conversationId: history.conversationId,
          focusTaskId: null,
        });
        system = workInstructions({ agent, team, members: facts.members });
        // The log is read only when someone else wrote to it: here, never.
        context = await reader.readUnlessAt(facts.tail);
      },
    ],
    [
      "context → model messages + compaction check",
      () => loadContextForCall({ ...compaction, instructions: system }, reader, context),
    ],
  ];
  const samples = new Map<string, number[]>(phases.map(([name]) => [name, []]));
  const cpuStart = process.cpuUsage();
  const rounds = 100;
  for (let round = 0; round < rounds + 10; round++) {
    for (const [name, phase] of phases) {
      const started = now();
      await phase(round);
      if (round >= 10) samples.get(name)!.push(now() - started);
    }
  }
  await resultWrite;
  const cpu = process.cpuUsage(cpuStart);
  await endSession(db, session.id, "completed", { steps: 0 });
  const parts = phases.map(([name]): [string, number] => [name, percentile(samples.get(name)!, 50)]);
  return {
    parts,
    total: parts.reduce((sum, [, ms]) => sum + ms, 0),
    cpuPerRound: (cpu.user + cpu.system) / 1000 / (rounds + 10),
  };
}

export function describeBreakdown(breakdown: Breakdown): string {
  return `${breakdown.parts.map(([name, ms]) => `${name} ${formatMs(ms)}`).join(", ")}; sum ${formatMs(breakdown.total)}, of which ${formatMs(breakdown.cpuPerRound)} is this process's CPU`;
}
