import { existsSync } from "node:fs";
import http from "node:http";
import { eq } from "drizzle-orm";
import { createTeamWithLead } from "../../src/lib/db/queries/teams";
import { teams } from "../../src/lib/db/schema";
import { treeUsage } from "../lib/fleet";
import { PgProxy } from "../lib/pg-proxy";
import type { BenchDatabase } from "../lib/postgres";
import { formatMs, now, sleep, summarize } from "../lib/stats";
import type { FigureResult } from "../lib/table";
import { buildId, startWeb } from "./ttfb";

export type FanOutOptions = { streams: number; events: number };

type Stream = { received: Map<string, number>; close: () => void };

/** One browser tab's live-events stream: each `data:` line's team name, with the moment it arrived. */
function openStream(url: string, ready: () => void): Stream {
  const received = new Map<string, number>();
  let buffer = "";
  const request = http.get(
    `${url}/api/events`,
    { headers: { accept: "text/event-stream" }, agent: false },
    (response) => {
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        const at = now();
        buffer += chunk;
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (event.includes("event: ready")) ready();
          const data = /^data: (.*)$/m.exec(event)?.[1];
          if (data) received.set(data, at);
        }
      });
    },
  );
  request.on("error", () => {});
  return { received, close: () => request.destroy() };
}

/**
 * 200 browser tabs on one web process (production build), each with its live-events
 * stream: how many LISTENs reach Postgres (one per web process, whatever the number of
 * tabs), the latency from a write's commit to its event in every tab, and the web
 * process's memory with the streams open against without.
 */
export async function fanOutFigure(database: BenchDatabase, options: FanOutOptions): Promise<FigureResult> {
  if (!existsSync(buildId)) {
    return {
      rows: [
        {
          figure: "fan-out",
          measure: `${options.streams} live-update streams`,
          p50: "–",
          p95: "–",
          ratio: "no production build",
          goal: "",
          pass: false,
        },
      ],
      notes: ["fan-out: not measured: no .next/BUILD_ID"],
    };
  }
  const proxy = await PgProxy.start(database.url);
  const web = await startWeb(database, { DATABASE_URL: proxy.url(database.url) });
  const streams: Stream[] = [];
  try {
    const { team } = await createTeamWithLead(database.db, { name: "Fan-out 0", mission: "Be watched." });
    // Warm the events route, then measure memory without streams.
    const warm = openStream(web.url, () => {});
    await sleep(1000);
    warm.close();
    await sleep(1000);
    const before = treeUsage(web.pid);
    let ready = 0;
    for (let i = 0; i < options.streams; i++) streams.push(openStream(web.url, () => (ready += 1)));
    const deadline = Date.now() + 30_000;
    while (ready < options.streams && Date.now() < deadline) await sleep(50);
    if (ready < options.streams)
      throw new Error(`Only ${ready} of ${options.streams} live-event streams became ready within 30 s.`);
    const latencies: number[] = [];
    let missed = 0;
    for (let i = 1; i <= options.events; i++) {
      // A team's change announces {table: "teams", id}: the same payload each time, so each event waits for the last.
      for (const stream of streams) stream.received.clear();
      await database.db
        .update(teams)
        .set({ name: `Fan-out ${i}` })
        .where(eq(teams.id, team.id));
      const committed = now();
      const waitUntil = Date.now() + 5_000;
      while (streams.some((stream) => stream.received.size === 0) && Date.now() < waitUntil) await sleep(2);
      for (const stream of streams) {
        const at = [...stream.received.values()][0];
        if (at === undefined) missed += 1;
        else latencies.push(at - committed);
      }
      await sleep(20);
    }
    const withStreams = treeUsage(web.pid);
    const listens = proxy.count((key) => /^cadre\|listen /i.test(key));
    const summary = summarize(latencies);
    return {
      rows: [
        {
          figure: "fan-out",
          measure: `${options.streams} open live-update streams (SSE), 1 web process`,
          p50: formatMs(summary.p50),
          p95: formatMs(summary.p95),
          ratio: `${listens} LISTEN; ${proxy.open} connections; web RSS ${before.rssMiB.toFixed(0)} → ${withStreams.rssMiB.toFixed(0)} MiB; ${missed} missed`,
          goal: "1 LISTEN per web process; p95 ≤ 100 ms",
          pass: listens === 1 && missed === 0 && summary.p95 <= 100,
        },
      ],
      notes: [
        `fan-out: ${options.events} changes (a team renamed) after ${options.streams} EventSource-like streams were ready, each change awaited in every stream before the next: ${summary.n} deliveries, latency from the write's commit to the \`data:\` line in the client; web process tree RSS ${before.rssMiB.toFixed(0)} MiB with no stream, ${withStreams.rssMiB.toFixed(0)} MiB with ${options.streams} (${(((withStreams.rssMiB - before.rssMiB) * 1024) / options.streams).toFixed(0)} KiB per stream).`,
      ],
    };
  } finally {
    for (const stream of streams) stream.close();
    await web.stop();
    await proxy.close();
  }
}
