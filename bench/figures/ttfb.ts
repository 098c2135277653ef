import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { freePort } from "../../scripts/lib/embedded-postgres";
import type { BenchDatabase } from "../lib/postgres";
import { formatMs, now, summarize } from "../lib/stats";
import type { FigureResult } from "../lib/table";

const root = path.resolve(import.meta.dirname, "../..");
export const buildId = path.join(root, ".next", "BUILD_ID");

export type Build = { built: boolean; seconds: number; error?: string };

/** `next build` when there is no production build yet; resolves with how it went (never rejects). */
export function buildIfMissing(log: (line: string) => void): Promise<Build> {
  if (existsSync(buildId)) return Promise.resolve({ built: false, seconds: 0 });
  log("ttfb: no production build (.next/BUILD_ID); running next build in the background …");
  const started = now();
  return new Promise((resolve) => {
    const child = spawn(path.join(root, "node_modules/.bin/next"), ["build"], {
      cwd: root,
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("exit", (code) => {
      const seconds = (now() - started) / 1000;
      if (code === 0 && existsSync(buildId)) resolve({ built: true, seconds });
      else
        resolve({
          built: false,
          seconds,
          error: `next build exited with ${code}:\n${output.split("\n").slice(-30).join("\n")}`,
        });
    });
  });
}

type Reply = { status: number; ttfb: number; body: string };

function post(agent: http.Agent, url: string, body: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const started = now();
    let ttfb = Number.NaN;
    const request = http.request(
      url,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (response) => {
        let text = "";
        response.once("data", () => (ttfb = now() - started));
        response.on("data", (chunk: Buffer) => (text += chunk.toString()));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, ttfb, body: text }));
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

/** The production web server alone (`npm run start:web`), offline model, on the bench database. */
export async function startWeb(
  database: BenchDatabase,
  extraEnv: Record<string, string> = {},
): Promise<{ url: string; pid: number; stop: () => Promise<void>; output: () => string }> {
  const port = await freePort();
  // No OPENAI_* variables: the offline model answers.
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    DATABASE_URL: database.url,
    PORT: String(port),
    NEXT_TELEMETRY_DISABLED: "1",
    NODE_ENV: "production" as const,
    ...extraEnv,
  };
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts", "--web-only"], {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
    process.kill(child.pid, "SIGTERM"); // the supervisor stops next start, then exits
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
    }, 10_000);
    await exited;
    clearTimeout(timer);
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`The web server exited (${child.exitCode}) before it answered:\n${output}`);
    const healthy = await fetch(`${url}/api/health`).then(
      (response) => response.ok,
      () => false,
    );
    if (healthy) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`The web server did not answer /api/health within 90 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { url, pid: child.pid!, stop, output: () => output };
}

/**
 * POST /api/agents/:id/chat with the body useChat sends → first byte of the streamed
 * reply, against `npm run start:web` (production build) with the offline model.
 */
export async function ttfbFigure(database: BenchDatabase, build: Build, samples = 60): Promise<FigureResult> {
  if (!existsSync(buildId)) {
    return {
      rows: [
        {
          figure: "ttfb",
          measure: "POST chat → first streamed byte",
          p50: "–",
          p95: "–",
          ratio: "no production build",
          goal: "p50 ≤ 50 ms",
          pass: false,
        },
      ],
      notes: [`ttfb: not measured: ${build.error ?? "no .next/BUILD_ID"}`],
    };
  }
  const web = await startWeb(database);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const created = await fetch(`${web.url}/api/teams`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Chatty", mission: "Answer the person." }),
    });
    if (created.status !== 201) throw new Error(`POST /api/teams answered ${created.status}: ${await created.text()}`);
    const { lead } = (await created.json()) as { lead: { id: string } };
    const chatUrl = `${web.url}/api/agents/${lead.id}/chat`;
    const ttfbs: number[] = [];
    for (let i = 0; i < samples + 5; i++) {
      const body = JSON.stringify({
        id: `bench-chat`,
        messages: [{ id: `m${i}`, role: "user", parts: [{ type: "text", text: "hi" }] }],
        trigger: "submit-message",
      });
      const reply = await post(agent, chatUrl, body);
      if (reply.status !== 200 || !reply.body.includes("data:"))
        throw new Error(`The chat answered ${reply.status}: ${reply.body.slice(0, 500)}`);
      if (i >= 5) ttfbs.push(reply.ttfb);
    }
    const summary = summarize(ttfbs);
    return {
      rows: [
        {
          figure: "ttfb",
          measure: "POST chat → first streamed byte",
          p50: formatMs(summary.p50),
          p95: formatMs(summary.p95),
          ratio: "",
          goal: "p50 ≤ 50 ms",
          pass: summary.p50 <= 50,
        },
      ],
      notes: [
        `ttfb: ${summary.n} chats (after 5 warm-up ones) with \`npm run start:web\` on the production build${build.built ? ` (built by this run in ${build.seconds.toFixed(0)} s)` : ""}, offline model, one keep-alive connection.`,
      ],
    };
  } finally {
    agent.destroy();
    await web.stop();
  }
}
