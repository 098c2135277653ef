import { existsSync } from "node:fs";
import http from "node:http";
import { createFleet } from "../lib/fleet";
import { PgProxy, statementKind } from "../lib/pg-proxy";
import type { BenchDatabase } from "../lib/postgres";
import { sleep } from "../lib/stats";
import type { FigureResult } from "../lib/table";
import type { Workers } from "../lib/workers";
import { buildId, startWeb } from "./ttfb";

/** Measured before this figure's changes (pg-boss fetchers polling every 2 s), same setup: statements/s of 2 workers + the web process. */
const IDLE_BEFORE = {
  perSecond: 21.2,
  note: "2 workers and the web process with one tab, 1 000 idle agents, 20 s, on commit 1b5367e (pg-boss fetchers polling every 2 s)",
};

export type IdleOptions = { seconds: number; teams: number; perTeam: number };

/** An open browser tab: its live-events stream, held open, and the worker banner's /api/health every 15 s. */
function openTab(url: string): { close: () => void } {
  const events = http.get(`${url}/api/events`, { headers: { accept: "text/event-stream" } }, (response) =>
    response.resume(),
  );
  events.on("error", () => {});
  const health = setInterval(
    () =>
      void fetch(`${url}/api/health`).then(
        (response) => response.text(),
        () => {},
      ),
    15_000,
  );
  return {
    close: () => {
      clearInterval(health);
      events.destroy();
    },
  };
}

/**
 * What Cadre costs while nothing happens: 1 000 agents with nothing to do, two worker
 * processes and the web process with one browser tab open, for a minute. Every process
 * talks to Postgres through a counting proxy; statements are split into Cadre's own,
 * pg-boss's job fetches (polling) and pg-boss's maintenance (supervision, cron, stats).
 */
export async function idleFigure(
  database: BenchDatabase,
  workers: Workers,
  options: IdleOptions,
): Promise<FigureResult> {
  const fleet = await createFleet(database, "Idle", options.teams, options.perTeam);
  await workers.stopAll();
  const workerProxies = await Promise.all([PgProxy.start(database.url), PgProxy.start(database.url)]);
  const webProxy = await PgProxy.start(database.url);
  const withWeb = existsSync(buildId);
  let web: Awaited<ReturnType<typeof startWeb>> | undefined;
  let tab: { close: () => void } | undefined;
  try {
    for (const proxy of workerProxies) await workers.start(1, { DATABASE_URL: proxy.url(database.url) });
    if (withWeb) {
      web = await startWeb(database, { DATABASE_URL: webProxy.url(database.url) });
      tab = openTab(web.url);
    }
    await workers.idle();
    // Start-up (migrations check, queue creation, schedules, the backlog) is not idling.
    await sleep(10_000);
    const proxies = [...workerProxies, webProxy];
    for (const proxy of proxies) proxy.reset();
    await sleep(options.seconds * 1000);
    const perSecond = (proxy: PgProxy, kind?: ReturnType<typeof statementKind>) =>
      proxy.count((key) => kind === undefined || statementKind(key) === kind) / options.seconds;
    const sum = (kind?: ReturnType<typeof statementKind>) =>
      proxies.reduce((total, proxy) => total + perSecond(proxy, kind), 0);
    const total = sum();
    const cadre = sum("cadre");
    const fetches = sum("pg-boss fetch");
    const maintenance = sum("pg-boss maintenance");
    const top = proxies
      .flatMap((proxy) => proxy.top(40))
      .reduce((map, [key, count]) => map.set(key, (map.get(key) ?? 0) + count), new Map<string, number>());
    const topLines = [...top]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([key, count]) => `${(count / options.seconds).toFixed(2)}/s ${key.slice(0, 90)}`);
    const open = proxies.map((proxy) => proxy.open);
    return {
      rows: [
        {
          figure: "idle",
          measure: `${options.seconds} s, ${fleet.length.toLocaleString("en-US")} idle agents, 2 workers${withWeb ? ", web + 1 tab" : " (no build: no web)"}`,
          p50: "",
          p95: "",
          ratio: `${total.toFixed(1)} statements/s: Cadre ${cadre.toFixed(1)}, pg-boss fetch ${fetches.toFixed(1)}, pg-boss maintenance ${maintenance.toFixed(1)}; before ${IDLE_BEFORE.perSecond.toFixed(1)}`,
          goal: `≤ before (${IDLE_BEFORE.perSecond.toFixed(1)}/s)`,
          pass: total <= IDLE_BEFORE.perSecond,
        },
      ],
      notes: [
        `idle: per process, statements/s — worker 1 ${perSecond(workerProxies[0]!).toFixed(2)}, worker 2 ${perSecond(workerProxies[1]!).toFixed(2)}, web ${perSecond(webProxy).toFixed(2)}; connections open — workers ${open[0]} and ${open[1]}, web ${open[2]}. The most frequent: ${topLines.join("; ")}. Before: ${IDLE_BEFORE.note}. Nothing of it grows with the number of agents: no statement runs per agent while nothing happens.`,
      ],
    };
  } finally {
    tab?.close();
    await web?.stop();
    await workers.stopAll();
    await Promise.all([...workerProxies, webProxy].map((proxy) => proxy.close()));
  }
}
