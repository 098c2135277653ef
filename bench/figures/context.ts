import { getConversationContext } from "../../src/lib/db/queries/messages";
import type { LoadedHistory } from "../lib/history";
import type { BenchDatabase } from "../lib/postgres";
import { formatMs, now, summarize } from "../lib/stats";
import type { FigureResult } from "../lib/table";

/**
 * getConversationContext on 1k, 10k and 100k-message conversations (compacted every
 * 200 messages) in a database of over a million messages, against the same call on a
 * 100k conversation that was never compacted: that one has to load the full history.
 */
export async function contextFigure(
  database: BenchDatabase,
  histories: Map<string, LoadedHistory>,
): Promise<FigureResult> {
  const { db } = database;
  const sizes = ["ctx-1k", "ctx-10k", "ctx-100k"].map((key) => histories.get(key)!);
  const full = histories.get("full-100k")!;

  for (const history of sizes) {
    const context = await getConversationContext(db, history.conversationId);
    if (context[0]?.role !== "summary" || context.length !== 101) {
      throw new Error(
        `The ${history.key} context should be a summary and 100 messages, not ${context.length} messages starting with ${context[0]?.role}`,
      );
    }
  }

  const timings = new Map<string, number[]>(sizes.map((history) => [history.key, []]));
  const rounds = 300;
  // Interleaved, so drift on a shared machine hits every size alike.
  for (let round = 0; round < rounds + 20; round++) {
    for (const history of sizes) {
      const started = now();
      await getConversationContext(db, history.conversationId);
      if (round >= 20) timings.get(history.key)!.push(now() - started);
    }
  }

  const fullTimings: number[] = [];
  let fullLength = 0;
  for (let round = 0; round < 6; round++) {
    const started = now();
    const messages = await getConversationContext(db, full.conversationId);
    if (round > 0) fullTimings.push(now() - started);
    fullLength = messages.length;
  }
  if (fullLength !== full.length)
    throw new Error(`The never-compacted context should hold all ${full.length} messages, not ${fullLength}`);

  const [small, medium, large] = sizes.map((history) => summarize(timings.get(history.key)!));
  const reference = summarize(fullTimings);
  const ratio = (value: number) => `${(value / small!.p50).toFixed(2)}× 1k`;
  return {
    rows: [
      {
        figure: "context",
        measure: "1k messages (compacted)",
        p50: formatMs(small!.p50),
        p95: formatMs(small!.p95),
        ratio: "1.00× 1k",
        goal: "",
        pass: null,
      },
      {
        figure: "context",
        measure: "10k messages",
        p50: formatMs(medium!.p50),
        p95: formatMs(medium!.p95),
        ratio: ratio(medium!.p50),
        goal: "≤ 1.5× 1k",
        pass: medium!.p50 <= 1.5 * small!.p50,
      },
      {
        figure: "context",
        measure: "100k messages",
        p50: formatMs(large!.p50),
        p95: formatMs(large!.p95),
        ratio: `${ratio(large!.p50)}; 1/${Math.round(reference.p50 / large!.p50)} of full`,
        goal: "p50 ≤ 5 ms, ≤ 1.5× 1k",
        pass: large!.p50 <= 5 && large!.p50 <= 1.5 * small!.p50,
      },
      {
        figure: "context",
        measure: "100k never compacted (= full history)",
        p50: formatMs(reference.p50),
        p95: formatMs(reference.p95),
        ratio: `${Math.round(reference.p50 / large!.p50)}× 100k`,
        goal: "",
        pass: null,
      },
    ],
    notes: [
      `context: ${rounds} interleaved calls per size after 20 warm-up calls; each context is a summary + 100 messages (~52 kB); the never-compacted reference returns ${fullLength.toLocaleString("en-US")} messages (${fullTimings.length} calls).`,
    ],
  };
}
